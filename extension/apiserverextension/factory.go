package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/glassbox-dev/glassbox/apiserver"
)

const typeStr = "glassbox_api"

// Type is the component type of the extension, glassbox_api.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_api extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, component.StabilityLevelAlpha)
}

// createDefaultConfig is the standalone default without a listener of its
// own (in the collector the ingest receiver's port serves the API). The
// extension runs no background jobs: those are glassbox_workers'.
func createDefaultConfig() component.Config {
	opts := apiserver.NewDefaultOptions()
	opts.Listen = ""
	return &Config{ClickHouse: apiserver.NewDefaultMaintenance(), Options: opts}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newAPIExtension(cfg.(*Config), set), nil
}
