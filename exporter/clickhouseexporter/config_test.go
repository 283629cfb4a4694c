package clickhouseexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

func loadConfig(t *testing.T, file string, id component.ID) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", file))
	require.NoError(t, err)
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestLoadConfig(t *testing.T) {
	def := loadConfig(t, "config.yaml", component.NewID(Type))
	require.NoError(t, confmap.Validate(def))
	want := createDefaultConfig().(*Config)
	want.Storage = component.MustNewID("glassbox_storage")
	assert.Equal(t, want, def)
	assert.True(t, def.QueueConfig.HasValue())
	assert.Zero(t, def.BackOffConfig.MaxElapsedTime, "retry until ClickHouse takes the batch")

	full := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "full"))
	require.NoError(t, confmap.Validate(full))
	assert.Equal(t, component.MustNewIDWithName("glassbox_storage", "cluster"), full.Storage)
	assert.Equal(t, 10*time.Second, full.Timeout)
	q := full.QueueConfig.Get()
	require.NotNil(t, q.StorageID)
	assert.Equal(t, component.MustNewIDWithName("file_storage", "queue"), *q.StorageID)
	assert.Equal(t, 4, q.NumConsumers)
	assert.Equal(t, int64(100000), q.QueueSize)
	assert.Equal(t, int64(20000), q.Batch.Get().MaxSize)
	assert.Equal(t, 2*time.Second, full.BackOffConfig.InitialInterval)
	assert.Equal(t, 10*time.Minute, full.BackOffConfig.MaxElapsedTime)

	noQueue := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "no_queue"))
	require.NoError(t, confmap.Validate(noQueue))
	assert.False(t, noQueue.QueueConfig.HasValue())
	assert.False(t, noQueue.DiskQueue.HasValue(), "the disk queue is opt-in")

	disk := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "disk_queue"))
	require.NoError(t, confmap.Validate(disk))
	assert.False(t, disk.QueueConfig.HasValue(), "the disk queue replaces the default sending_queue")
	dq := disk.DiskQueue.Get()
	assert.Equal(t, "/var/lib/glassbox/queue", dq.Directory)
	assert.Equal(t, int64(defaultDiskQueueMaxBytes), dq.MaxBytes)
	assert.Equal(t, int64(defaultDiskQueueBatchBytes), dq.BatchBytes)
	assert.Equal(t, defaultFlushInterval, dq.FlushInterval)
	assert.Equal(t, defaultDiskQueueConsumers, dq.Consumers)
	assert.False(t, disk.Pricing.HasValue(), "pricing is opt-in")

	priced := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "pricing"))
	require.NoError(t, confmap.Validate(priced))
	p := priced.Pricing.Get()
	require.NotNil(t, p)
	require.NotNil(t, p.ModelsSource)
	assert.Equal(t, component.MustNewID("glassbox_controlplane"), *p.ModelsSource)
	assert.Equal(t, 500, p.CacheSize)
	assert.Equal(t, costing.DefaultConfig().RefreshInterval, p.RefreshInterval, "unset keys keep their defaults")
	assert.True(t, p.EstimateUsage)
}

func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string]string{
		"no_storage":                   errNoStorage.Error(),
		"bad_queue":                    "queue_size",
		"two_queues":                   "disk_queue replaces sending_queue",
		"disk_queue_without_directory": "disk_queue: directory is required",
		"bad_pricing":                  "cache_size must be positive",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadConfig(t, "invalid.yaml", component.NewIDWithName(Type, name))
			assert.ErrorContains(t, confmap.Validate(cfg), want)
		})
	}
}

// A configuration that still sets the ClickHouse location on the exporter
// stops with where each key went, not with an unknown-key error.
func TestMovedKeysNameTheirNewPlace(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "moved.yaml"))
	require.NoError(t, err)
	unmarshal := func(name string) error {
		sub, err := cm.Sub(component.NewIDWithName(Type, name).String())
		require.NoError(t, err)
		return sub.Unmarshal(createDefaultConfig().(*Config))
	}
	err = unmarshal("dsn")
	require.Error(t, err)
	assert.ErrorContains(t, err, `"dsn" moved to the glassbox_storage extension`)
	assert.ErrorContains(t, err, "set storage: glassbox_storage")

	err = unmarshal("all")
	for _, key := range []string{"dsn", "database", "cluster", "replicated_engines", "create_schema"} {
		assert.ErrorContains(t, err, `"`+key+`" moved to the glassbox_storage extension`)
	}
	assert.ErrorContains(t, unmarshal("replicated"), `"replicated" moved to the glassbox_storage extension (as "replicated_engines")`)
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
