package apikeyauthextension

import (
	"fmt"
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
	store := component.MustNewID("glassbox_api")
	tests := []struct {
		id       component.ID
		expected *Config
	}{
		{
			id: component.NewID(Type),
			expected: &Config{
				Keys: []KeyConfig{
					{
						PublicKey:      "pk-lf-static",
						SecretSHA256:   "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
						ProjectID:      "proj-1",
						OrganizationID: "org-1",
					},
					{PublicKey: "pk-lf-plain", Secret: "sk-lf-plain", ProjectID: "proj-2"},
				},
				CacheTTL:         defaultCacheTTL,
				NegativeCacheTTL: defaultNegativeCacheTTL,
				MaxCacheEntries:  defaultMaxCacheEntries,
			},
		},
		{
			id: component.NewIDWithName(Type, "store"),
			expected: &Config{
				Verifier:         &store,
				CacheTTL:         time.Minute,
				NegativeCacheTTL: 0,
				MaxCacheEntries:  100,
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
	tests := []struct {
		file string
		errs []string
	}{
		{file: "invalid_empty.yaml", errs: []string{errNoKeySource.Error()}},
		{
			file: "invalid_keys.yaml",
			errs: []string{
				"keys[0]: " + errMalformedHash.Error(),
				`keys[1]: public_key "pk-lf-a" duplicates keys[0]`,
				"keys[2]: " + errMissingPublicKey.Error(),
				"keys[2]: " + errMissingProjectID.Error(),
				"keys[2]: " + errBothSecrets.Error(),
				"keys[3]: " + errNoSecret.Error(),
				"keys[4]: " + errMalformedHash.Error(),
			},
		},
		{
			file: "invalid_cache.yaml",
			errs: []string{errNegativeTTL.Error(), errNegativeNegTTL.Error(), errNonPositiveMaxLen.Error()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			cfg := loadConfig(t, tt.file, component.NewID(Type))
			err := confmap.Validate(cfg)
			require.Error(t, err)
			for _, want := range tt.errs {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

func TestSecretIsOpaque(t *testing.T) {
	cfg := loadConfig(t, "config.yaml", component.NewID(Type))
	// configopaque keeps the plaintext secret out of logs and marshalled configs.
	assert.Equal(t, "[REDACTED]", cfg.Keys[1].Secret.String())
	out := confmap.New()
	require.NoError(t, out.Marshal(cfg))
	assert.NotContains(t, fmt.Sprint(out.ToStringMap()), "sk-lf-plain")
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
