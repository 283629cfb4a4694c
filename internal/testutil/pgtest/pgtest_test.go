package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithDatabase(t *testing.T) {
	got, err := withDatabase("postgres://u@127.0.0.1:5432/postgres?sslmode=disable", "x")
	require.NoError(t, err)
	assert.Equal(t, "postgres://u@127.0.0.1:5432/x?sslmode=disable", got)

	got, err = withDatabase("postgresql://u@h", "y")
	require.NoError(t, err)
	assert.Equal(t, "postgresql://u@h/y", got)

	_, err = withDatabase("host=h dbname=z", "x")
	assert.Error(t, err)
}

func TestDSNCreatesAndDropsDatabase(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		db, err := sql.Open("pgx", DSN(t))
		require.NoError(t, err)
		defer db.Close()
		require.NoError(t, db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name))
		assert.Regexp(t, `^glassbox_test_[a-z2-7]+$`, name)
		var tables int
		require.NoError(t, db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables))
		assert.Zero(t, tables, "a fresh database is empty")
	})
	if name == "" {
		return // the subtest was skipped or failed and says why
	}
	admin, err := sql.Open("pgx", os.Getenv(EnvDSN))
	require.NoError(t, err)
	defer admin.Close()
	var n int
	require.NoError(t, admin.QueryRowContext(context.Background(),
		"SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	assert.Zero(t, n, "database is dropped at cleanup")
}
