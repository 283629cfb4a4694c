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
	"github.com/glassbox-dev/glassbox/apiserver/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/automations"
	"github.com/glassbox-dev/glassbox/apiserver/evalworker"
	"github.com/glassbox-dev/glassbox/apiserver/ui"
	"github.com/glassbox-dev/glassbox/apiserver/ui/account"
	"github.com/glassbox-dev/glassbox/internal/chstore"
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
	// In the collector the workers are opt-in: a tier that only verifies
	// keys or writes spans runs none.
	defaults := apiserver.NewDefaultConfig()
	defaults.Listen = ""
	defaults.Evaluation.Enabled = false
	defaults.Automations.Enabled = false
	deliveries := automations.NewDefaultConfig()
	deliveries.RetryBackoff = 30 * time.Second
	evaluation := evalworker.NewDefaultConfig()
	evaluation.Workers, evaluation.MaxAttempts = 8, 3
	tests := []struct {
		id       component.ID
		expected *Config
	}{
		{id: component.NewID(Type), expected: &defaults},
		{
			id: component.NewIDWithName(Type, "full"),
			expected: &Config{
				Listen:    "127.0.0.1:3100",
				PublicURL: "https://glassbox.example.com",
				ControlPlane: apiserver.ControlPlaneConfig{DSN: "postgres://glassbox@db.internal:5432/glassbox",
					PromptComposition: apiserver.PromptCompositionConfig{MaxResolvedBytes: 262144, MaxReferences: 20}},
				ClickHouse: apiserver.ClickHouseConfig{
					Settings: chstore.Settings{
						DSN:               "clickhouse://ch.internal:9000",
						Database:          "traces",
						Cluster:           "main",
						ReplicatedEngines: true,
						QueryTimeout:      10 * time.Second,
					},
					PurgeInterval:     time.Minute,
					RetentionInterval: 30 * time.Minute,
					RollupInterval:    10 * time.Minute,
				},
				InitFromEnv:              true,
				MaxRequestBodyBytes:      2097152,
				MaxLargeRequestBodyBytes: 8388608,
				Media:                    apiserver.MediaConfig{Dir: "/var/lib/glassbox/media", MaxContentLength: 52428800},
				Evaluation:               evaluation,
				Automations:              deliveries,
				Alerts:                   alerts.NewDefaultConfig(),
				UI: ui.Config{Enabled: true, SignUp: true, SessionTTL: 24 * time.Hour, OIDC: account.SSOConfig{
					Name: "Okta", Issuer: "https://example.okta.com", ClientID: "glassbox", ClientSecret: "s3cret",
					AllowedDomains: []string{"example.com"},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := loadConfig(t, "config.yaml", tt.id)
			require.NoError(t, confmap.Validate(cfg))
			assert.Equal(t, tt.expected, cfg)
		})
	}
}

func TestInvalidConfig(t *testing.T) {
	cfg := loadConfig(t, "invalid.yaml", component.NewID(Type))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, want := range []string{"listen", "public_url", "control_plane.dsn", "clickhouse: dsn", "max_request_body_bytes",
		"ui.session_ttl", "ui.oidc.client_id"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestUnknownKeyIsRejected(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{"listen_address": "127.0.0.1:3000"})
	assert.Error(t, conf.Unmarshal(createDefaultConfig().(*Config)))
}
