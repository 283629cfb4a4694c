package samplingprocessor // import "github.com/glassbox-dev/glassbox/processor/samplingprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
)

const (
	typeStr = "glassbox_sampling"

	defaultRefreshInterval = 30 * time.Second
	defaultRefreshTimeout  = 10 * time.Second
)

// Type is the component type of the processor, glassbox_sampling.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_sampling processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(Type, createDefaultConfig,
		processor.WithTraces(createTraces, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	return &Config{
		Rate:            1,
		RefreshInterval: defaultRefreshInterval,
		RefreshTimeout:  defaultRefreshTimeout,
	}
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := newSamplingProcessor(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}
