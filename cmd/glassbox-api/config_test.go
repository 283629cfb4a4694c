package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/glassbox-dev/glassbox/apiserver"
)

// TestConfigReferences: the standalone server's file resolves the
// environment as the collector's files do.
func TestConfigReferences(t *testing.T) {
	t.Setenv("GB_LISTEN", "127.0.0.1:4000")
	t.Setenv("GB_EMPTY", "")
	write := func(t *testing.T, text string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "api.yaml")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	cfg, err := loadConfig(write(t, `
listen: ${GB_LISTEN}
public_url: ${env:GB_UNSET:-https://fallback.example.com}
admin_api_key: pa$$word-0123456789-0123456789-01
control_plane:
  dsn: ${env:GB_CP_DSN:-sqlite:///tmp/refs.db}
clickhouse:
  dsn: clickhouse://ch:9000
`))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:4000", cfg.Listen)
	assert.Equal(t, "https://fallback.example.com", cfg.PublicURL)
	assert.Equal(t, configopaque.String("pa$word-0123456789-0123456789-01"), cfg.AdminAPIKey)
	assert.Equal(t, "sqlite:///tmp/refs.db", cfg.ControlPlane.DSN)

	// A required variable unset or empty is named, with its message.
	_, err = loadConfig(write(t, "listen: ${env:GB_UNSET_ONE:?where the API listens}\n"))
	assert.ErrorContains(t, err, "GB_UNSET_ONE")
	assert.ErrorContains(t, err, "where the API listens")
	_, err = loadConfig(write(t, "listen: ${env:GB_EMPTY:?}\n"))
	assert.ErrorContains(t, err, "GB_EMPTY")
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("TEST_GLASSBOX_CP_DSN", "sqlite:///tmp/x.db")
	t.Setenv("TEST_GLASSBOX_CH_DSN", "clickhouse://ch:9000")
	t.Setenv("TEST_GLASSBOX_ADMIN_KEY", "admin-key-from-the-file")
	cfg, err := loadConfig("testdata/config.yaml")
	require.NoError(t, err)
	assert.Equal(t, configopaque.String("admin-key-from-the-file"), cfg.AdminAPIKey)
	assert.Equal(t, "127.0.0.1:3999", cfg.Listen)
	assert.Equal(t, "https://glassbox.example.com", cfg.PublicURL)
	assert.Equal(t, "sqlite:///tmp/x.db", cfg.ControlPlane.DSN)
	assert.Equal(t, "clickhouse://ch:9000", string(cfg.ClickHouse.DSN))
	assert.Equal(t, "glassbox", cfg.ClickHouse.Database)
	assert.True(t, cfg.InitFromEnv)
	assert.Equal(t, []string{"hooks.example.com", "*.svc.internal"}, cfg.Evaluation.WebhookAllowedHosts)
	assert.Equal(t, apiserver.NewDefaultConfig().MaxRequestBodyBytes, cfg.MaxRequestBodyBytes, "unset keys keep their defaults")

	cfg, err = loadConfig("")
	require.NoError(t, err)
	assert.Equal(t, apiserver.NewDefaultConfig(), cfg)
}

func TestLoadConfigErrors(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/missing.yaml":     "unable to read the file",
		"testdata/unknown_key.yaml": "clickhouse_dsn",
		"testdata/invalid.yaml":     "listen",
		"testdata/config.yaml":      "TEST_GLASSBOX_CP_DSN",
	} {
		_, err := loadConfig(file)
		assert.ErrorContains(t, err, want, file)
	}
}
