package workersextension // import "github.com/glassbox-dev/glassbox/extension/workersextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/glassbox-dev/glassbox/apiserver/workers"
)

// Type is the component type of the extension, glassbox_workers.
var Type = component.MustNewType("glassbox_workers")

// NewFactory returns the factory of the glassbox_workers extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, component.StabilityLevelAlpha)
}

// createDefaultConfig runs every job: listing the extension is what turns
// them on; evaluation.enabled or automations.enabled false turns one off.
func createDefaultConfig() component.Config {
	return &Config{Config: workers.NewDefaultConfig()}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newExtension(cfg.(*Config), set), nil
}
