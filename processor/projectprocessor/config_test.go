package projectprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(Type)
	if name != "" {
		id = component.NewIDWithName(Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestLoadConfig(t *testing.T) {
	def := loadConfig(t, "")
	require.NoError(t, confmap.Validate(def))
	assert.Equal(t, "project_id", def.AuthAttribute, "glassbox_auth's attribute")
	custom := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(custom))
	assert.Equal(t, "tenant", custom.AuthAttribute)
	assert.ErrorIs(t, confmap.Validate(loadConfig(t, "invalid")), errNoAttribute)
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
