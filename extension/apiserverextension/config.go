package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs"
)

// Config configures the glassbox_api extension: the API server's options
// (the standalone server's keys) over the two stores it names by id.
type Config struct {
	storerefs.Refs `mapstructure:",squash"`
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

// movedToWorkers are the sections of the background jobs, which the
// glassbox_workers extension runs now. Of evaluation, the API keeps the
// egress policy (apiEvaluationKeys): it refuses the URLs the workers would
// not call.
var movedToWorkers = []string{"evaluation", "automations", "alerts"}

// apiEvaluationKeys are the evaluation keys glassbox_api still reads.
var apiEvaluationKeys = map[string]bool{"webhook_allowed_hosts": true, "llm_allowed_hosts": true}

// moved is the startup error of a key that another extension holds now:
// which extension, and what to do.
func moved(key, extension, todo string) error {
	return fmt.Errorf("%q moved to the %s extension: %s", key, extension, todo)
}

// movedToWorkersKeys are the keys of conf that the glassbox_workers
// extension holds now: automations and alerts whole, evaluation but for
// its egress policy.
func movedToWorkersKeys(conf *confmap.Conf) []string {
	var keys []string
	for _, section := range movedToWorkers {
		if !conf.IsSet(section) {
			continue
		}
		sub, isMap := conf.Get(section).(map[string]any)
		if section != "evaluation" || !isMap {
			keys = append(keys, section)
			continue
		}
		for key := range sub {
			if !apiEvaluationKeys[key] {
				keys = append(keys, section+"."+key)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

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
			errs = append(errs, moved("clickhouse."+key, "glassbox_storage",
				"add it under extensions, list it in service.extensions and set storage: glassbox_storage"))
		}
	}
	for _, key := range movedToWorkersKeys(conf) {
		errs = append(errs, moved(key, "glassbox_workers",
			"add it under extensions with storage: and control_plane:, and list it in service.extensions"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	type plain Config // without this method, so that the call below does not recurse
	return conf.Unmarshal((*plain)(c))
}

// Validate reports every problem with the configuration.
func (c *Config) Validate() error {
	return errors.Join(c.CheckRefs(), c.ClickHouse.Check(), c.Check())
}
