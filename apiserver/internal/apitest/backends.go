package apitest // import "github.com/glassbox-dev/glassbox/apiserver/internal/apitest"

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/pgtest"
)

// ForEachBackend runs fn once on a SQLite control plane store and once on a
// PostgreSQL one (skipped without a server, failed in CI), for routes whose
// behaviour depends on the database, such as concurrent writes.
func ForEachBackend(t *testing.T, fn func(t *testing.T, s *controlplane.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, ControlPlane(t)) })
	t.Run("postgres", func(t *testing.T) {
		s, err := controlplane.Open(context.Background(), pgtest.DSN(t))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		fn(t, s)
	})
}
