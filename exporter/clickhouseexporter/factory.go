package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

const (
	typeStr = "glassbox_clickhouse"

	// defaultTimeout leaves room for a large batch on a busy server.
	defaultTimeout = 30 * time.Second
)

// The disk queue's defaults: a gigabyte of backlog (minutes of an outage at
// full load), and batches that make ClickHouse's parts large.
const (
	defaultDiskQueueMaxBytes   = 1 << 30
	defaultDiskQueueBatchBytes = 4 << 20
	defaultFlushInterval       = time.Second
	defaultDiskQueueConsumers  = 2
)

// Type is the component type of the exporter, glassbox_clickhouse.
var Type = component.MustNewType(typeStr)

// NewFactory returns the factory of the glassbox_clickhouse exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(Type, createDefaultConfig,
		exporter.WithTraces(createTraces, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	retry.MaxElapsedTime = 0
	return &Config{
		TimeoutConfig: exporterhelper.TimeoutConfig{Timeout: defaultTimeout},
		DiskQueue: configoptional.Default(DiskQueueConfig{
			MaxBytes:      defaultDiskQueueMaxBytes,
			BatchBytes:    defaultDiskQueueBatchBytes,
			FlushInterval: defaultFlushInterval,
			Consumers:     defaultDiskQueueConsumers,
		}),
		// In memory unless configured; left out with disk_queue (Unmarshal).
		QueueConfig:   configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		BackOffConfig: retry,
		Pricing:       configoptional.Default(costing.DefaultConfig()),
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(c, set)
	if err != nil {
		return nil, err
	}
	if c.DiskQueue.HasValue() {
		// Appending to the disk queue is quick and local: the queue's
		// consumer owns the timeout and the retries of the inserts.
		return exporterhelper.NewTraces(ctx, set, cfg, e.enqueue,
			exporterhelper.WithStart(e.start),
			exporterhelper.WithShutdown(e.shutdown),
			exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{}),
			exporterhelper.WithQueue(configoptional.None[exporterhelper.QueueBatchConfig]()),
			exporterhelper.WithRetry(configretry.BackOffConfig{Enabled: false}))
	}
	return exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}
