package apiserver

import (
	"encoding/json"
	"fmt"
	"go.opentelemetry.io/collector/config/configopaque"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := NewDefaultConfig()
	require.NoError(t, cfg.Validate())
	assert.Equal(t, "127.0.0.1:3000", cfg.Listen)
	assert.Equal(t, "sqlite://.data/glassbox.db", cfg.ControlPlane.DSN)
	assert.Equal(t, "glassbox", cfg.ClickHouse.Database)
	assert.Equal(t, int64(1<<20), cfg.MaxRequestBodyBytes, "Langfuse's JSON routes take 1 MB")
	assert.Equal(t, int64(4718592), cfg.MaxLargeRequestBodyBytes, "Langfuse's ingestion and dataset item routes take 4.5 MB")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		errs   []string
	}{
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, []string{"listen"}},
		{"relative public url", func(c *Config) { c.PublicURL = "/glassbox" }, []string{"public_url"}},
		{"no control plane", func(c *Config) { c.ControlPlane.DSN = "" }, []string{"control_plane.dsn is required"}},
		{"no prompt bounds", func(c *Config) { c.ControlPlane.PromptComposition = PromptCompositionConfig{} },
			[]string{"prompt_composition: max_resolved_bytes", "max_references"}},
		{"http clickhouse", func(c *Config) { c.ClickHouse.DSN = configopaque.String("http://127.0.0.1:8123") }, []string{"clickhouse: dsn"}},
		{"bad database", func(c *Config) { c.ClickHouse.Database = "a-b" }, []string{"clickhouse: database"}},
		{"no purge interval", func(c *Config) { c.ClickHouse.PurgeInterval = 0 }, []string{"clickhouse.purge_interval"}},
		{"no rollup interval", func(c *Config) { c.ClickHouse.RollupInterval = 0 }, []string{"clickhouse.rollup_interval"}},
		{"negative timeout", func(c *Config) { c.ClickHouse.QueryTimeout = -time.Second }, []string{"timeouts"}},
		{"no body limit", func(c *Config) { c.MaxRequestBodyBytes = 0 }, []string{"max_request_body_bytes"}},
		{"no large body limit", func(c *Config) { c.MaxLargeRequestBodyBytes = -1 }, []string{"max_large_request_body_bytes"}},
		{"webhook host with a port", func(c *Config) { c.Evaluation.WebhookAllowedHosts = []string{"hooks.example.com:443"} },
			[]string{"evaluation.webhook_allowed_hosts"}},
		{"several at once", func(c *Config) { c.Listen = "x"; c.ControlPlane.DSN = "" }, []string{"listen", "control_plane.dsn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			for _, want := range tt.errs {
				assert.ErrorContains(t, err, want)
			}
		})
	}
	embedded := NewDefaultConfig()
	embedded.Listen = ""
	assert.NoError(t, embedded.Validate(), "the extension may run without a listener")
}

func TestHTMLPathPrefix(t *testing.T) {
	for url, want := range map[string]string{
		"":                            "",
		"https://gb.example.com":      "",
		"https://gb.example.com/":     "",
		"https://example.com/gb/":     "/gb",
		"https://example.com/a/b":     "/a/b",
		"https://example.com/a%20b//": "/a%20b",
	} {
		cfg := Options{PublicURL: url}
		assert.Equal(t, want, cfg.htmlPathPrefix(), url)
	}
}

func TestAdminAPIKeyConfig(t *testing.T) {
	t.Setenv(AdminAPIKeyEnv, "")
	cfg := NewDefaultConfig()
	assert.Empty(t, cfg.adminAPIKey(os.Getenv), "off by default")

	t.Setenv(AdminAPIKeyEnv, " from-the-environment-0123 ")
	assert.Equal(t, "from-the-environment-0123", cfg.adminAPIKey(os.Getenv))
	cfg.AdminAPIKey = "from-the-config-file-0123"
	assert.Equal(t, "from-the-config-file-0123", cfg.adminAPIKey(os.Getenv), "the setting wins over the variable")
	require.NoError(t, cfg.Validate())

	// The key never appears when the configuration is printed.
	text, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.NotContains(t, string(text), "from-the-config-file")
	assert.Contains(t, string(text), "[REDACTED]")
	assert.NotContains(t, fmt.Sprintf("%+v %v", cfg, cfg), "from-the-config-file")

	cfg.AdminAPIKey = "short"
	assert.ErrorContains(t, cfg.Validate(), "admin_api_key (or ADMIN_API_KEY) must have at least 16 characters")
	cfg.AdminAPIKey = ""
	t.Setenv(AdminAPIKeyEnv, "short")
	assert.ErrorContains(t, cfg.Validate(), "admin_api_key (or ADMIN_API_KEY)")
}
