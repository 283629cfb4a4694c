package evaltapprocessor // import "github.com/glassbox-dev/glassbox/processor/evaltapprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
)

const (
	typeStr = "glassbox_evaltap"

	defaultRefreshInterval = 15 * time.Second
	defaultRefreshTimeout  = 10 * time.Second
	defaultQueueSize       = 10000
	defaultBatchSize       = 500
	defaultFlushInterval   = time.Second
	defaultEnqueueTimeout  = 10 * time.Second
	defaultEnqueueAttempts = 3
	defaultDedupeCacheSize = 100000
)

// Type is the component type of the processor, glassbox_evaltap.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_evaltap processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(Type, createDefaultConfig,
		processor.WithTraces(createTraces, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	return &Config{
		Source:          component.MustNewID("glassbox_controlplane"),
		RefreshInterval: defaultRefreshInterval,
		RefreshTimeout:  defaultRefreshTimeout,
		QueueSize:       defaultQueueSize,
		BatchSize:       defaultBatchSize,
		FlushInterval:   defaultFlushInterval,
		EnqueueTimeout:  defaultEnqueueTimeout,
		EnqueueAttempts: defaultEnqueueAttempts,
		DedupeCacheSize: defaultDedupeCacheSize,
	}
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := newTap(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}
