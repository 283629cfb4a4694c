package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

// Type is the component type of the extension, glassbox_controlplane.
var Type = component.MustNewType("glassbox_controlplane")

// NewFactory returns the factory of the glassbox_controlplane extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, func() component.Config { return &Config{} }, createExtension, component.StabilityLevelAlpha)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newExtension(cfg.(*Config), set), nil
}
