package controlplane

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/testutil/pgtest"
)

// BenchmarkVerify measures key verification, the per-request cost when the
// caller does not cache principals.
func BenchmarkVerify(b *testing.B) {
	run := func(b *testing.B, dsn string) {
		ctx := context.Background()
		s, err := Open(ctx, dsn)
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, s.Close()) })
		_, err = s.CreateOrganization(ctx, "o", "o")
		require.NoError(b, err)
		_, err = s.CreateProject(ctx, "o", NewProject{ID: "p", Name: "p"})
		require.NoError(b, err)
		key, secret, err := s.CreateAPIKey(ctx, "o", "p", NewAPIKey{})
		require.NoError(b, err)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Verify(ctx, key.PublicKey, secret); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("sqlite", func(b *testing.B) { run(b, filepath.Join(b.TempDir(), "cp.db")) })
	b.Run("postgres", func(b *testing.B) { run(b, pgtest.DSN(b)) })
}
