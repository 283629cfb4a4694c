package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
)

// Config configures the glassbox_controlplane extension.
type Config struct {
	// DSN is the control plane store, as the API server's control_plane.dsn:
	// sqlite://path or postgres://user:password@host:5432/db.
	DSN configopaque.String `mapstructure:"dsn"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.DSN == "" {
		return errors.New("dsn is required")
	}
	return nil
}
