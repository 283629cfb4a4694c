package apiserverextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/evalworker"
	"github.com/glassbox-dev/glassbox/apiserver/ui"
	"github.com/glassbox-dev/glassbox/apiserver/ui/account"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs"
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
	assert.Equal(t, createDefaultConfig(), def)
	assert.Empty(t, def.Listen)
	assert.ErrorContains(t, confmap.Validate(def), "storage is required", "the stores are named explicitly")

	evaluation := evalworker.NewDefaultConfig()
	evaluation.WebhookAllowedHosts, evaluation.LLMAllowedHosts = []string{"hooks.example.com"}, []string{"llm.internal"}
	opts := apiserver.NewDefaultOptions()
	opts.Listen, opts.PublicURL, opts.InitFromEnv = "127.0.0.1:3100", "https://glassbox.example.com", true
	opts.MaxRequestBodyBytes, opts.MaxLargeRequestBodyBytes = 2097152, 8388608
	opts.Media = apiserver.MediaConfig{Dir: "/var/lib/glassbox/media", MaxContentLength: 52428800}
	opts.Evaluation = evaluation
	opts.UI = ui.Config{Enabled: true, SignUp: true, SessionTTL: 24 * time.Hour, OIDC: account.SSOConfig{
		Name: "Okta", Issuer: "https://example.okta.com", ClientID: "glassbox", ClientSecret: "s3cret",
		AllowedDomains: []string{"example.com"},
	}}
	full := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "full"))
	require.NoError(t, confmap.Validate(full))
	assert.Equal(t, &Config{
		Refs:       storerefs.Refs{Storage: component.MustNewID("glassbox_storage"), ControlPlane: component.MustNewID("glassbox_controlplane")},
		ClickHouse: apiserver.Maintenance{PurgeInterval: time.Minute, RetentionInterval: 30 * time.Minute, RollupInterval: 10 * time.Minute},
		Options:    opts,
	}, full)
}

func TestInvalidConfig(t *testing.T) {
	cfg := loadConfig(t, "invalid.yaml", component.NewID(Type))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, want := range []string{"storage is required", "control_plane is required", "listen", "public_url",
		"clickhouse.purge_interval", "max_request_body_bytes", "ui.session_ttl", "ui.oidc.client_id"} {
		assert.ErrorContains(t, err, want)
	}
}

// A configuration that still gives glassbox_api stores of its own stops
// with the extensions the keys moved to.
func TestMovedKeysNameTheirNewPlace(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "moved.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewID(Type).String())
	require.NoError(t, err)
	err = sub.Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.ErrorContains(t, err, `"control_plane" now names a glassbox_controlplane extension by id`)
	assert.ErrorContains(t, err, "set control_plane: glassbox_controlplane")
	for _, key := range []string{"dsn", "database", "cluster", "replicated_engines"} {
		assert.ErrorContains(t, err, `"clickhouse.`+key+`" moved to the glassbox_storage extension`)
	}
	assert.NotContains(t, err.Error(), "purge_interval", "maintenance stays with the API")
}

// A configuration that still runs the background jobs in glassbox_api
// stops naming glassbox_workers, key by key; the egress policy stays.
func TestWorkerKeysNameGlassboxWorkers(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "moved.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(Type, "workers").String())
	require.NoError(t, err)
	err = sub.Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	for _, key := range []string{"evaluation.enabled", "evaluation.workers", "automations", "alerts"} {
		assert.ErrorContains(t, err, `"`+key+`" moved to the glassbox_workers extension: `+
			"add it under extensions with storage: and control_plane:, and list it in service.extensions")
	}
	assert.NotContains(t, err.Error(), "webhook_allowed_hosts", "the API holds URLs to the egress policy")

	// The egress policy alone is the API's.
	policy := confmap.NewFromStringMap(map[string]any{"evaluation": map[string]any{"llm_allowed_hosts": []any{"10.0.0.0/8"}}})
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, policy.Unmarshal(cfg))
	assert.Equal(t, []string{"10.0.0.0/8"}, cfg.Evaluation.LLMAllowedHosts)
}

func TestUnknownKeyIsRejected(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{"listen_address": "127.0.0.1:3000"})
	assert.Error(t, conf.Unmarshal(createDefaultConfig().(*Config)))
}
