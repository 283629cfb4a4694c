package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// Config configures the glassbox_controlplane extension.
type Config struct {
	// DSN is the control plane store, as the API server's control_plane.dsn:
	// sqlite://path or postgres://user:password@host:5432/db.
	DSN configopaque.String `mapstructure:"dsn"`
	// PromptComposition bounds the resolution of prompts that reference
	// other prompts (max_resolved_bytes, max_references), as the
	// standalone API server's control_plane.prompt_composition.
	PromptComposition promptcompose.Limits `mapstructure:"prompt_composition"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn is required"))
	}
	if err := c.PromptComposition.Check(); err != nil {
		errs = append(errs, fmt.Errorf("prompt_composition: %w", err))
	}
	return errors.Join(errs...)
}
