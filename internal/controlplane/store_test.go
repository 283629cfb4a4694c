package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/testutil/pgtest"
)

// forEachDSN runs fn once with a fresh SQLite file and once with a fresh
// PostgreSQL database.
func forEachDSN(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, "sqlite://"+filepath.Join(t.TempDir(), "cp.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.DSN(t)) })
}

// forEachBackend runs fn against a store opened on each backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	forEachDSN(t, func(t *testing.T, dsn string) { fn(t, openStore(t, dsn)) })
}

func openStore(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// fakeClock is a settable time source for the store.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestParseDSN(t *testing.T) {
	tests := []struct {
		dsn, driver, source string
		postgres            bool
		wantErr             bool
	}{
		{dsn: "sqlite:///var/lib/glassbox/cp.db", driver: "sqlite", source: "/var/lib/glassbox/cp.db?" + sqliteParams},
		{dsn: "sqlite://cp.db", driver: "sqlite", source: "cp.db?" + sqliteParams},
		{dsn: "data/cp.db", driver: "sqlite", source: "data/cp.db?" + sqliteParams},
		{dsn: "postgres://u@h:5432/db?sslmode=disable", driver: "pgx", source: "postgres://u@h:5432/db?sslmode=disable", postgres: true},
		{dsn: "postgresql://u@h/db", driver: "pgx", source: "postgresql://u@h/db", postgres: true},
		{dsn: "mysql://u@h/db", wantErr: true},
		{dsn: "", wantErr: true},
		{dsn: "sqlite://", wantErr: true},
		{dsn: ":memory:", wantErr: true},
		{dsn: "cp.db?_pragma=foreign_keys(0)", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			driver, source, postgres, err := parseDSN(tt.dsn)
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.driver, driver)
			assert.Equal(t, tt.source, source)
			assert.Equal(t, tt.postgres, postgres)
		})
	}
}

// The SQLite file is the owner's alone, also in a directory that already
// exists and when an earlier release created it with the umask's mode.
func TestSQLiteFileIsOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.db")
	s := openStore(t, "sqlite://"+path)
	_, err := s.CreateOrganization(context.Background(), "org", "Org")
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	old := filepath.Join(dir, "old.db")
	require.NoError(t, os.WriteFile(old, nil, 0o644))
	openStore(t, "sqlite://"+old)
	info, err = os.Stat(old)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// A DSN is never echoed with its password.
func TestDSNPasswordIsNotEchoed(t *testing.T) {
	for _, dsn := range []string{"mysql://glassbox:hunter2-secret@db:3306/gb", "mysql://glassbox:hunter2-secret@db:3306/gb%zz"} {
		_, err := Open(context.Background(), dsn)
		require.ErrorIs(t, err, ErrInvalid)
		assert.NotContains(t, err.Error(), "hunter2-secret")
		assert.Contains(t, err.Error(), "mysql://")
	}
}

func TestValidID(t *testing.T) {
	assert.True(t, validID("proj-1_a.b"))
	assert.True(t, validID("pk-lf-0b6c0b1e-3e5f-4d3c-9f1a-7a3c2b1d0e9f"))
	for _, bad := range []string{"", "has space", "a/b", "ü", string(make([]byte, 129)), ".", "..", ".hidden", "-flag", "_x", "..%2f"} {
		assert.False(t, validID(bad), "%q", bad)
	}
}

func TestSQLiteStoreFileIsWALWithForeignKeys(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "cp.db"))
	var mode string
	var fk int
	require.NoError(t, s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.NoError(t, s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, 1, fk)
}

func TestOpenCreatesSQLiteDirectory(t *testing.T) {
	s := openStore(t, "sqlite://"+filepath.Join(t.TempDir(), "fresh", "data", "cp.db"))
	require.NoError(t, s.Ping(context.Background()))
}

func TestListOrganizations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "org-b", "Beta")
		require.NoError(t, err)
		_, err = s.CreateOrganization(ctx, "org-a", "Alpha")
		require.NoError(t, err)
		orgs, err := s.ListOrganizations(ctx)
		require.NoError(t, err)
		require.Len(t, orgs, 2)
		assert.Equal(t, "Alpha", orgs[0].Name)
		assert.Equal(t, "org-b", orgs[1].ID)
	})
}

// testBox is a secret box under a fixed test key.
func testBox(t *testing.T) *secretbox.Box {
	t.Helper()
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	return box
}
