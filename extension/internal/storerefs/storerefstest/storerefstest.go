// Package storerefstest runs the two store extensions for the tests of the
// extensions that name them (storerefs.Refs).
package storerefstest // import "github.com/glassbox-dev/glassbox/extension/internal/storerefs/storerefstest"

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// Host offers extensions by id, as the collector does to a starting component.
type Host struct {
	component.Host
	Extensions map[component.ID]component.Component
}

// GetExtensions returns the extensions it offers.
func (h Host) GetExtensions() map[component.ID]component.Component { return h.Extensions }

// Start starts a glassbox_storage extension on a fresh test database and a
// glassbox_controlplane extension on a fresh SQLite file, both stopped when
// the test ends, and returns a host that offers them and the refs that name
// them.
func Start(t *testing.T) (Host, storerefs.Refs) {
	t.Helper()
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
	refs := storerefs.Refs{Storage: component.NewID(sf.Type()), ControlPlane: component.NewID(cf.Type())}
	return Host{Host: componenttest.NewNopHost(), Extensions: map[component.ID]component.Component{
		refs.Storage: storage, refs.ControlPlane: cp}}, refs
}
