package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/glassbox-dev/glassbox/apiserver"
)

// Config configures the glassbox_api extension: the API server's options
// (the standalone server's keys) over the two stores it names by id.
type Config struct {
	// Storage names the glassbox_storage extension (ClickHouse), the one
	// the exporter writes through.
	Storage component.ID `mapstructure:"storage"`
	// ControlPlane names the glassbox_controlplane extension, whose store
	// instance the processors and the authenticator use too.
	ControlPlane component.ID `mapstructure:"control_plane"`
	// ClickHouse says how often the server maintains the data (purge,
	// retention, rollups), as in the standalone server's clickhouse section.
	ClickHouse apiserver.Maintenance `mapstructure:"clickhouse"`

	apiserver.Options `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// movedToStorage are the clickhouse keys that the glassbox_storage
// extension holds now.
var movedToStorage = []string{"dsn", "database", "cluster", "replicated_engines", "replicated", "dial_timeout", "query_timeout", "metrics_max_rows_to_read"}

// Unmarshal reads the configuration, and stops one that still opens its
// own stores with where each key went.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	var errs []error
	if _, isMap := conf.Get("control_plane").(map[string]any); isMap {
		errs = append(errs, errors.New(`"control_plane" now names a glassbox_controlplane extension by id: `+
			`move its dsn and prompt_composition under extensions.glassbox_controlplane, `+
			`list it in service.extensions and set control_plane: glassbox_controlplane`))
	}
	for _, key := range movedToStorage {
		if conf.IsSet("clickhouse::" + key) {
			errs = append(errs, fmt.Errorf(`"clickhouse.%s" moved to the glassbox_storage extension: `+
				`add it under extensions, list it in service.extensions and set storage: glassbox_storage`, key))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	type plain Config // without this method, so that the call below does not recurse
	return conf.Unmarshal((*plain)(c))
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Storage == (component.ID{}) {
		errs = append(errs, errors.New("storage is required: the id of a glassbox_storage extension, e.g. storage: glassbox_storage"))
	}
	if c.ControlPlane == (component.ID{}) {
		errs = append(errs, errors.New("control_plane is required: the id of a glassbox_controlplane extension, e.g. control_plane: glassbox_controlplane"))
	}
	errs = append(errs, c.ClickHouse.Check(), c.Check())
	return errors.Join(errs...)
}
