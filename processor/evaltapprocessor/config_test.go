package evaltapprocessor

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
	assert.Equal(t, createDefaultConfig(), def)
	assert.Equal(t, component.MustNewID("glassbox_controlplane"), def.Source)

	custom := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "custom"))
	require.NoError(t, confmap.Validate(custom))
	assert.Equal(t, component.MustNewIDWithName("glassbox_api", "embedded"), custom.Source)
	assert.Equal(t, 5*time.Second, custom.RefreshInterval)
	assert.Equal(t, 2*time.Second, custom.RefreshTimeout)
	assert.Equal(t, 100, custom.QueueSize)
	assert.Equal(t, 10, custom.BatchSize)
	assert.Equal(t, 200*time.Millisecond, custom.FlushInterval)
	assert.Equal(t, 3*time.Second, custom.EnqueueTimeout)
	assert.Equal(t, 5, custom.EnqueueAttempts)
	assert.Zero(t, custom.DedupeCacheSize, "0 turns the dedupe cache off")
}

func TestInvalidConfig(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "invalid.yaml", component.NewID(Type)))
	for _, want := range []error{errRefreshInterval, errRefreshTimeout, errQueueSize, errBatchSize,
		errFlushInterval, errEnqueueTimeout, errEnqueueAttempts, errDedupeCacheSize} {
		assert.ErrorIs(t, err, want)
	}
	assert.NotErrorIs(t, err, errSource)

	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "invalid_source.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewID(Type).String())
	require.NoError(t, err)
	assert.ErrorContains(t, sub.Unmarshal(createDefaultConfig()), "source", "an empty source is not an id")
	cfg := createDefaultConfig().(*Config)
	cfg.Source = component.ID{}
	assert.ErrorIs(t, confmap.Validate(cfg), errSource)
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
