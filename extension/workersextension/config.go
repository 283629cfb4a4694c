package workersextension // import "github.com/glassbox-dev/glassbox/extension/workersextension"

import (
	"errors"

	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/apiserver/workers"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs"
)

// Config configures the glassbox_workers extension: the two stores it
// names by id, as glassbox_api does, and the jobs' settings with the
// standalone server's keys (evaluation, automations, alerts).
type Config struct {
	// The stores: ClickHouse holds the traces the evaluators read, the
	// scores they write and what alerts query; the control plane the job
	// queue, rules, alerts and automations.
	storerefs.Refs `mapstructure:",squash"`
	// PublicURL is where users reach the UI; alert notifications link to
	// it. Empty links start at the root.
	PublicURL string `mapstructure:"public_url"`

	workers.Config `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	return errors.Join(c.CheckRefs(), workers.CheckPublicURL(c.PublicURL), c.Check())
}
