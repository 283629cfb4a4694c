package projectprocessor // import "github.com/glassbox-dev/glassbox/processor/projectprocessor"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
)

// Config configures the glassbox_project processor.
type Config struct {
	// AuthAttribute names the attribute of the receiver's authentication
	// data that holds the project: project_id for glassbox_auth.
	AuthAttribute string `mapstructure:"auth_attribute"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var errNoAttribute = errors.New("auth_attribute must not be empty")

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.AuthAttribute == "" {
		return errNoAttribute
	}
	return nil
}
