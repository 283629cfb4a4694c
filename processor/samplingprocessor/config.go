package samplingprocessor // import "github.com/glassbox-dev/glassbox/processor/samplingprocessor"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
)

// Config configures the glassbox_sampling processor. The rate of a span is
// the first that applies of: the project's settings from the settings
// source (environment rate, then project rate), the project's entry here
// (environment rate, then rate), the top level (environment rate, then
// rate). Rates are fractions of traces kept, in [0, 1].
type Config struct {
	// Rate applies where nothing more specific does.
	Rate float64 `mapstructure:"rate"`
	// Environments are rates by environment name, for every project.
	Environments map[string]float64 `mapstructure:"environments"`
	// Projects are rates by project id.
	Projects map[string]ProjectConfig `mapstructure:"projects"`
	// SettingsSource names an extension that serves the projects' sampling
	// settings (sampling.Source, e.g. glassbox_api), which can change at
	// run time and take precedence over this configuration.
	SettingsSource *component.ID `mapstructure:"settings_source"`
	// RefreshInterval is how often the settings are reloaded.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// RefreshTimeout bounds one reload.
	RefreshTimeout time.Duration `mapstructure:"refresh_timeout"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ProjectConfig are one project's rates.
type ProjectConfig struct {
	// Rate applies to the project's environments without a rate of their
	// own; unset leaves them to the top level.
	Rate *float64 `mapstructure:"rate"`
	// Environments are the project's rates by environment name.
	Environments map[string]float64 `mapstructure:"environments"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var (
	errRate            = errors.New("rates must be between 0 and 1")
	errEnvironment     = errors.New("environment names must not be empty")
	errRefreshInterval = errors.New("refresh_interval must be positive")
	errRefreshTimeout  = errors.New("refresh_timeout must be positive")
)

// Validate checks every rate and the refresh timings.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, checkRate("rate", c.Rate))
	errs = append(errs, checkEnvironments("environments", c.Environments)...)
	for id, p := range c.Projects {
		if p.Rate != nil {
			errs = append(errs, checkRate(fmt.Sprintf("projects::%s::rate", id), *p.Rate))
		}
		errs = append(errs, checkEnvironments(fmt.Sprintf("projects::%s::environments", id), p.Environments)...)
	}
	if c.RefreshInterval <= 0 {
		errs = append(errs, errRefreshInterval)
	}
	if c.RefreshTimeout <= 0 {
		errs = append(errs, errRefreshTimeout)
	}
	return errors.Join(errs...)
}

func checkRate(where string, r float64) error {
	if r >= 0 && r <= 1 {
		return nil
	}
	return fmt.Errorf("%s: %w, got %v", where, errRate, r)
}

func checkEnvironments(where string, envs map[string]float64) []error {
	var errs []error
	for env, r := range envs {
		if strings.TrimSpace(env) == "" {
			errs = append(errs, fmt.Errorf("%s: %w", where, errEnvironment))
		}
		errs = append(errs, checkRate(where+"::"+env, r))
	}
	return errs
}
