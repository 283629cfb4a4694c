package workersextension

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

type extensionHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h extensionHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

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
	ch := chtest.Config(t)
	sf := storageextension.NewFactory()
	sc := sf.CreateDefaultConfig().(*storageextension.Config)
	sc.DSN, sc.Database = configopaque.String(ch.DSN), ch.Database
	storage, err := sf.Create(ctx, extensiontest.NewNopSettings(sf.Type()), sc)
	require.NoError(t, err)
	cf := controlplaneextension.NewFactory()
	cc := cf.CreateDefaultConfig().(*controlplaneextension.Config)
	cc.DSN = configopaque.String("sqlite://" + filepath.Join(t.TempDir(), "cp.db"))
	cp, err := cf.Create(ctx, extensiontest.NewNopSettings(cf.Type()), cc)
	require.NoError(t, err)
	for _, e := range []component.Component{storage, cp} {
		require.NoError(t, e.Start(ctx, componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	}
	cfg := named()
	host := extensionHost{Host: componenttest.NewNopHost(), extensions: map[component.ID]component.Component{
		cfg.Storage: storage, cfg.ControlPlane: cp}}
	ext, err := NewFactory().Create(ctx, extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, host))
	evaluation, automations := ext.(*workersExtension).jobs.Running()
	assert.True(t, evaluation)
	assert.True(t, automations)
	require.NoError(t, ext.Shutdown(ctx))
	require.NoError(t, ext.Shutdown(ctx), "repeated")
}
