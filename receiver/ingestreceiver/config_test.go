package ingestreceiver

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
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
	t.Run("defaults", func(t *testing.T) {
		cfg := loadConfig(t, "config.yaml", component.NewID(Type))
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, "127.0.0.1:3000", cfg.HTTP.NetAddr.Endpoint)
		assert.False(t, cfg.GRPC.HasValue(), "gRPC is off unless configured")
		assert.Equal(t, component.MustNewID("glassbox_auth"), cfg.Authenticator)
		assert.Nil(t, cfg.Fallback)
		assert.Equal(t, int64(16<<20), cfg.MaxRequestBodyBytes)
		assert.Equal(t, int64(64<<20), cfg.MaxDecompressedBodyBytes)
	})
	t.Run("custom", func(t *testing.T) {
		cfg := loadConfig(t, "config.yaml", component.NewIDWithName(Type, "custom"))
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, "0.0.0.0:3001", cfg.HTTP.NetAddr.Endpoint)
		require.True(t, cfg.HTTP.CORS.HasValue())
		assert.Equal(t, []string{"https://app.example.com"}, cfg.HTTP.CORS.Get().AllowedOrigins)
		require.True(t, cfg.GRPC.HasValue())
		assert.Equal(t, "0.0.0.0:14317", cfg.GRPC.Get().NetAddr.Endpoint)
		assert.Equal(t, component.MustNewIDWithName("glassbox_auth", "tenant"), cfg.Authenticator)
		require.NotNil(t, cfg.Fallback)
		assert.Equal(t, component.MustNewID("glassbox_api"), *cfg.Fallback)
		assert.Equal(t, int64(1<<20), cfg.MaxRequestBodyBytes)
		assert.Equal(t, int64(4<<20), cfg.MaxDecompressedBodyBytes)
	})
}

func TestInvalidConfig(t *testing.T) {
	tests := []struct {
		file string
		errs []error
	}{
		{file: "invalid_owned_fields.yaml", errs: []error{errHTTPAuth, errHTTPBodySize, errHTTPCompression, errGRPCAuth}},
		{file: "invalid_limits.yaml", errs: []error{errDecompressedBelowIn, errSpanLimit}},
		{file: "invalid_zero_limits.yaml", errs: []error{errBodyLimit, errDecompressedLimit}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.file, component.NewID(Type)))
			for _, want := range tt.errs {
				assert.ErrorIs(t, err, want)
			}
		})
	}
}

func TestInvalidAuthenticator(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "invalid_authenticator.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewID(Type).String())
	require.NoError(t, err)
	// An empty id is refused while decoding; Validate covers configs built in code.
	require.ErrorContains(t, sub.Unmarshal(createDefaultConfig()), "must not be empty")
	cfg := &Config{HTTP: confighttp.NewDefaultServerConfig(), MaxRequestBodyBytes: 1, MaxDecompressedBodyBytes: 1}
	assert.ErrorIs(t, cfg.Validate(), errNoAuthenticator)
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
