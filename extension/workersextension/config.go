package workersextension // import "github.com/glassbox-dev/glassbox/extension/workersextension"

import (
	"errors"

	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/apiserver/workers"
)

// Config configures the glassbox_workers extension: the two stores it
// names by id, as glassbox_api does, and the jobs' settings with the
// standalone server's keys (evaluation, automations, alerts).
type Config struct {
	// Storage names the glassbox_storage extension (ClickHouse): traces the
	// evaluators read, scores they write, metrics alerts query.
	Storage component.ID `mapstructure:"storage"`
	// ControlPlane names the glassbox_controlplane extension: the job
	// queue, rules, alerts and automations.
	ControlPlane component.ID `mapstructure:"control_plane"`
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
	var errs []error
	if c.Storage == (component.ID{}) {
		errs = append(errs, errors.New("storage is required: the id of a glassbox_storage extension, e.g. storage: glassbox_storage"))
	}
	if c.ControlPlane == (component.ID{}) {
		errs = append(errs, errors.New("control_plane is required: the id of a glassbox_controlplane extension, e.g. control_plane: glassbox_controlplane"))
	}
	errs = append(errs, workers.CheckPublicURL(c.PublicURL), c.Check())
	return errors.Join(errs...)
}
