package storageextension // import "github.com/glassbox-dev/glassbox/extension/storageextension"

import (
	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Config configures the glassbox_storage extension.
type Config struct {
	// Settings are the store's keys: dsn, database, cluster,
	// replicated_engines, dial_timeout, query_timeout and
	// metrics_max_rows_to_read. Validate is theirs.
	chstore.Settings `mapstructure:",squash"`
	// CreateSchema creates the database and migrates the tables at start
	// (default true).
	CreateSchema bool `mapstructure:"create_schema"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)
