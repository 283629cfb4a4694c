package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// Type is the component type of the extension, glassbox_controlplane.
var Type = component.MustNewType("glassbox_controlplane")

// NewFactory returns the factory of the glassbox_controlplane extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, component.StabilityLevelAlpha)
}

func createDefaultConfig() component.Config {
	return &Config{PromptComposition: promptcompose.Limits{
		MaxResolvedBytes: promptcompose.DefaultMaxResolvedBytes,
		MaxReferences:    promptcompose.DefaultMaxReferences,
	}}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newExtension(cfg.(*Config), set), nil
}
