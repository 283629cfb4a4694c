package workersextension

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs/storerefstest"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
)

func named() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Storage, cfg.ControlPlane = component.NewID(storageextension.Type), component.NewID(controlplaneextension.Type)
	return cfg
}

func TestDependsOnTheStoresItNames(t *testing.T) {
	cfg := named()
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	assert.ElementsMatch(t, []component.ID{cfg.Storage, cfg.ControlPlane}, ext.(*workersExtension).Dependencies())
}

// Without the extensions it names, Start fails naming the key.
func TestStartNamesAMissingStore(t *testing.T) {
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), named())
	require.NoError(t, err)
	err = ext.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "control_plane: no extension")
	require.NoError(t, ext.Shutdown(context.Background()), "safe after a failed Start")
}

// Over running stores the jobs start, and Shutdown stops them (goleak
// checks that nothing keeps running).
func TestStartsAndStopsTheJobs(t *testing.T) {
	ctx := context.Background()
	cfg := createDefaultConfig().(*Config)
	host, refs := storerefstest.Start(t)
	cfg.Refs = refs
	ext, err := NewFactory().Create(ctx, extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, host))
	evaluation, automations := ext.(*workersExtension).jobs.Running()
	assert.True(t, evaluation)
	assert.True(t, automations)
	require.NoError(t, ext.Shutdown(ctx))
	require.NoError(t, ext.Shutdown(ctx), "repeated")
}
