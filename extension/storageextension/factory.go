package storageextension // import "github.com/glassbox-dev/glassbox/extension/storageextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Type is the component type of the extension, glassbox_storage.
var Type = component.MustNewType("glassbox_storage")

// NewFactory returns the factory of the glassbox_storage extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, component.StabilityLevelAlpha)
}

func createDefaultConfig() component.Config {
	return &Config{Settings: chstore.NewDefaultSettings(), CreateSchema: true}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newExtension(cfg.(*Config), set), nil
}
