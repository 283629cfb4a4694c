package samplingprocessor

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
	assert.Equal(t, 1.0, def.Rate, "keeps everything by default")

	custom := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "custom"))
	require.NoError(t, confmap.Validate(custom))
	assert.Equal(t, 0.5, custom.Rate)
	assert.Equal(t, map[string]float64{"Development": 0.1}, custom.Environments)
	require.Contains(t, custom.Projects, "proj-a")
	require.NotNil(t, custom.Projects["proj-a"].Rate)
	assert.Equal(t, 0.25, *custom.Projects["proj-a"].Rate)
	assert.Equal(t, map[string]float64{"production": 0.05}, custom.Projects["proj-a"].Environments)
	assert.Nil(t, custom.Projects["proj-b"].Rate)
	assert.Equal(t, map[string]float64{"staging": 0}, custom.Projects["proj-b"].Environments)
	require.NotNil(t, custom.SettingsSource)
	assert.Equal(t, component.MustNewID("glassbox_api"), *custom.SettingsSource)
	assert.Equal(t, 5*time.Second, custom.RefreshInterval)
	assert.Equal(t, 2*time.Second, custom.RefreshTimeout)
}

func TestInvalidConfig(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "invalid.yaml", component.NewID(Type)))
	for _, want := range []error{errRate, errEnvironment, errRefreshInterval, errRefreshTimeout} {
		assert.ErrorIs(t, err, want)
	}
	for _, where := range []string{"rate: rates must", "environments::production", "projects::proj-a::rate"} {
		assert.ErrorContains(t, err, where)
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
