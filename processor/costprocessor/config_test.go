package costprocessor

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
	assert.Nil(t, def.Pricing.ModelsSource)
	assert.True(t, def.Pricing.EstimateUsage)

	custom := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "custom"))
	require.NoError(t, confmap.Validate(custom), "max_estimate_bytes may be 0 when estimation is off")
	require.NotNil(t, custom.Pricing.ModelsSource)
	assert.Equal(t, component.MustNewID("glassbox_api"), *custom.Pricing.ModelsSource)
	assert.Equal(t, 5*time.Second, custom.Pricing.RefreshInterval)
	assert.Equal(t, 2*time.Second, custom.Pricing.RefreshTimeout)
	assert.Equal(t, 500, custom.Pricing.CacheSize)
	assert.False(t, custom.Pricing.EstimateUsage)
}

func TestInvalidConfig(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "invalid.yaml", component.NewID(Type)))
	for _, want := range []string{"refresh_interval must be positive", "refresh_timeout must be positive",
		"cache_size must be positive", "max_estimate_bytes must be positive when estimate_usage is on"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
