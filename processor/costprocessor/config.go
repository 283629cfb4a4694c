package costprocessor // import "github.com/glassbox-dev/glassbox/processor/costprocessor"

import (
	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

// Config configures the glassbox_cost processor: how it prices (shared with
// the ClickHouse exporter's pricing).
type Config struct {
	costing.Config `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)
