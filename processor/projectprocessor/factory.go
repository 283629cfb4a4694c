package projectprocessor // import "github.com/glassbox-dev/glassbox/processor/projectprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
)

const (
	typeStr = "glassbox_project"

	// defaultAuthAttribute is what glassbox_auth calls the key's project.
	defaultAuthAttribute = "project_id"
)

// Type is the component type of the processor, glassbox_project.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_project processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(Type, createDefaultConfig,
		processor.WithTraces(createTraces, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	return &Config{AuthAttribute: defaultAuthAttribute}
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p := &projectProcessor{attribute: cfg.(*Config).AuthAttribute}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}))
}
