package controlplane

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func migrationCount(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n))
	return n
}

func TestMigrationsAreIdempotent(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		require.Equal(t, len(migrations), migrationCount(t, s))

		again := openStore(t, dsn)
		assert.Equal(t, len(migrations), migrationCount(t, again))
		org, err := again.GetOrganization(ctx, "org")
		require.NoError(t, err, "reopening keeps the data")
		assert.Equal(t, "Org", org.Name)
	})
}

func TestMigrationVersionsAscend(t *testing.T) {
	for i := 1; i < len(migrations); i++ {
		assert.Greater(t, migrations[i].version, migrations[i-1].version)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		_, err := s.conn().exec(context.Background(),
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, int64(1<<40), "future", int64(0))
		require.NoError(t, err)
		_, err = Open(context.Background(), dsn)
		assert.ErrorContains(t, err, "newer than this build knows")
	})
}

// Replicas starting together must not race on creating the schema.
func TestConcurrentOpen(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		const openers = 6
		var wg sync.WaitGroup
		stores := make([]*Store, openers)
		errs := make([]error, openers)
		for i := range openers {
			wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
		}
		wg.Wait()
		for i := range openers {
			require.NoError(t, errs[i], "opener %d", i)
			assert.Equal(t, len(migrations), migrationCount(t, stores[i]))
			require.NoError(t, stores[i].Close())
		}
	})
}
