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
	want.DSN = "clickhouse://127.0.0.1:9000"
	assert.Equal(t, want, def)
	assert.Equal(t, "glassbox", def.Database)
	assert.True(t, def.CreateSchema)
	assert.True(t, def.QueueConfig.HasValue())
	assert.Zero(t, def.BackOffConfig.MaxElapsedTime, "retry until ClickHouse takes the batch")

	full := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "full"))
	require.NoError(t, confmap.Validate(full))
	assert.Equal(t, "clickhouse://writer:secret@ch1:9000,ch2:9000", string(full.DSN))
	assert.Equal(t, "observability", full.Database)
	assert.Equal(t, "c_repl", full.Cluster)
	assert.True(t, full.ReplicatedEngines)
	assert.False(t, full.CreateSchema)
	assert.Equal(t, 10*time.Second, full.Timeout)
	q := full.QueueConfig.Get()
	require.NotNil(t, q.StorageID)
	assert.Equal(t, component.MustNewIDWithName("file_storage", "queue"), *q.StorageID)
	assert.Equal(t, 4, q.NumConsumers)
	assert.Equal(t, int64(100000), q.QueueSize)
	assert.Equal(t, int64(20000), q.Batch.Get().MaxSize)
	assert.Equal(t, 2*time.Second, full.BackOffConfig.InitialInterval)
	assert.Equal(t, 10*time.Minute, full.BackOffConfig.MaxElapsedTime)
	storeCfg := full.storeConfig()
	assert.True(t, storeCfg.ReplicatedEngines)
	assert.Equal(t, 10*time.Second, storeCfg.QueryTimeout)

	// The key's old name stops the start with the new one.
	old := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "old_key"))
	assert.ErrorContains(t, confmap.Validate(old), "replicated was renamed replicated_engines")

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
}

func TestInvalidConfig(t *testing.T) {
	for name, want := range map[string]string{
		"no_dsn":                       errNoDSN.Error(),
		"http":                         "only the native protocol",
		"bad_names":                    `database "my-db"`,
		"bad_queue":                    "queue_size",
		"two_queues":                   "disk_queue replaces sending_queue",
		"disk_queue_without_directory": "disk_queue: directory is required",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadConfig(t, "invalid.yaml", component.NewIDWithName(Type, name))
			assert.ErrorContains(t, confmap.Validate(cfg), want)
		})
	}
	cfg := loadConfig(t, "invalid.yaml", component.NewIDWithName(Type, "bad_names"))
	assert.ErrorContains(t, confmap.Validate(cfg), `cluster "a b"`, "every problem is reported")
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
