package controlplaneextension

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/cpsource"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

func TestConfigNeedsADSN(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.ErrorContains(t, cfg.Validate(), "dsn is required")
	cfg.DSN = "sqlite:///tmp/x.db"
	assert.NoError(t, cfg.Validate())
}

// The extension serves the authenticator and the processors from the store
// alone, and refuses with ErrNotRunning (a 503, not a 401) outside its life.
func TestServesTheComponentsFromTheStore(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	seed, err := controlplane.Open(ctx, dsn)
	require.NoError(t, err)
	env := map[string]string{controlplane.EnvInitOrgID: "org", controlplane.EnvInitProjectID: "proj",
		controlplane.EnvInitPublicKey: "pk-lf-cp-ext", controlplane.EnvInitSecretKey: "sk-lf-0123456789abcdef-0123456789abcdef0"}
	require.NoError(t, seed.InitFromEnv(ctx, func(k string) string { return env[k] }))
	rate := 0.5
	_, err = seed.SetSampling(ctx, "proj", sampling.Rates{Rate: &rate})
	require.NoError(t, err)
	require.NoError(t, seed.Close())

	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.DSN = configopaque.String(dsn)
	ext, err := NewFactory().Create(ctx, extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	verifier := ext.(apikey.Verifier)
	_, err = verifier.Verify(ctx, "pk-lf-cp-ext", env[controlplane.EnvInitSecretKey])
	require.ErrorIs(t, err, cpsource.ErrNotRunning)

	require.NoError(t, ext.Start(ctx, componenttest.NewNopHost()))
	p, err := verifier.Verify(ctx, "pk-lf-cp-ext", env[controlplane.EnvInitSecretKey])
	require.NoError(t, err)
	assert.Equal(t, "proj", p.ProjectID)
	_, err = verifier.Verify(ctx, "pk-lf-cp-ext", "sk-lf-wrong")
	assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	rates, err := ext.(sampling.Source).ProjectSampling(ctx)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, *rates["proj"].Rate, 1e-9)
	models, err := ext.(pricing.ModelSource).ProjectModels(ctx)
	require.NoError(t, err)
	assert.Empty(t, models["proj"])
	rules, err := ext.(evaljobs.RuleSource).ActiveEvalRules(ctx)
	require.NoError(t, err)
	assert.Empty(t, rules)

	require.NoError(t, ext.Shutdown(ctx))
	require.NoError(t, ext.Shutdown(ctx), "shutting down twice is fine")
	_, err = verifier.Verify(ctx, "pk-lf-cp-ext", env[controlplane.EnvInitSecretKey])
	require.ErrorIs(t, err, cpsource.ErrNotRunning)
}

func TestStartFailsOnABadStore(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cp.db"), []byte("not a database"), 0o600))
	cfg := &Config{DSN: configopaque.String("sqlite://" + filepath.Join(dir, "cp.db"))}
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	assert.Error(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, ext.Shutdown(context.Background()))
}
