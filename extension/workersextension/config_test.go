package workersextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/glassbox-dev/glassbox/apiserver/workers"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs"
)

func loadConfig(t *testing.T, file string, id component.ID) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", file))
	require.NoError(t, err)
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	return cfg, sub.Unmarshal(cfg)
}

func TestLoadConfig(t *testing.T) {
	// Listing the extension runs every job.
	def, err := loadConfig(t, "config.yaml", component.NewID(Type))
	require.NoError(t, err)
	assert.Equal(t, createDefaultConfig(), def)
	assert.True(t, def.Evaluation.Enabled)
	assert.True(t, def.Automations.Enabled)
	err = confmap.Validate(def)
	assert.ErrorContains(t, err, "storage is required", "the stores are named explicitly")
	assert.ErrorContains(t, err, "control_plane is required")

	full, err := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "full"))
	require.NoError(t, err)
	require.NoError(t, confmap.Validate(full))
	want := workers.NewDefaultConfig()
	want.Evaluation.Workers, want.Evaluation.MaxAttempts = 8, 3
	want.Evaluation.WebhookAllowedHosts = []string{"hooks.example.com"}
	want.Automations.Enabled = false
	want.Alerts.PollInterval = 30 * time.Second
	assert.Equal(t, &Config{
		Refs:      storerefs.Refs{Storage: component.MustNewID("glassbox_storage"), ControlPlane: component.MustNewID("glassbox_controlplane")},
		PublicURL: "https://glassbox.example.com",
		Config:    want,
	}, full)
}

func TestInvalidConfig(t *testing.T) {
	cfg, err := loadConfig(t, "invalid.yaml", component.NewID(Type))
	require.NoError(t, err)
	err = confmap.Validate(cfg)
	require.Error(t, err)
	for _, want := range []string{"storage is required", "control_plane is required", "public_url",
		"evaluation.workers", "webhook", "automations.", "alerts.batch_size"} {
		assert.ErrorContains(t, err, want)
	}
}

// The keys are the standalone server's; nothing else is accepted.
func TestUnknownKeyIsRejected(t *testing.T) {
	for _, key := range []string{"listen", "clickhouse", "workers"} {
		conf := confmap.NewFromStringMap(map[string]any{key: "x"})
		assert.Error(t, conf.Unmarshal(createDefaultConfig().(*Config)), key)
	}
}
