// Package chtest gives tests a migrated chstore.Store in a database of their own.
package chtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// DSNEnv names the environment variable with the test server's DSN,
// e.g. clickhouse://127.0.0.1:19000.
const DSNEnv = "GLASSBOX_TEST_CLICKHOUSE_DSN"

// ClusterEnv and ReplicatedEnv run the tests against a ClickHouse cluster:
// the cluster name for ON CLUSTER DDL, and "true" for Replicated engines. A
// cluster DSN should set insert_distributed_sync=1 so that reads see inserts
// at once.
const (
	ClusterEnv    = "GLASSBOX_TEST_CLICKHOUSE_CLUSTER"
	ReplicatedEnv = "GLASSBOX_TEST_CLICKHOUSE_REPLICATED"
)

// DSN returns the test server's DSN. Without one the test is skipped, or
// fails when CI=true, because CI must never skip.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI runs every ClickHouse test", DSNEnv)
		}
		t.Skipf("%s is not set; start a server with scripts/clickhouse.sh", DSNEnv)
	}
	return dsn
}

// Config returns a store configuration for a fresh, uniquely named database
// that is dropped when the test ends. Nothing is created yet.
func Config(t testing.TB) chstore.Config {
	t.Helper()
	cfg := chstore.Config{
		DSN:               DSN(t),
		Database:          uniqueName(),
		Cluster:           os.Getenv(ClusterEnv),
		ReplicatedEngines: os.Getenv(ReplicatedEnv) == "true",
		QueryTimeout:      30 * time.Second,
	}
	t.Cleanup(func() { dropDatabase(t, cfg) })
	return cfg
}

// Store returns a store on a fresh, migrated database that is dropped when
// the test ends.
func Store(t testing.TB) *chstore.Store {
	t.Helper()
	return StoreOn(t, Config(t))
}

// StoreOn opens a store on cfg and migrates it; the store is closed when
// the test ends.
func StoreOn(t testing.TB, cfg chstore.Config) *chstore.Store {
	t.Helper()
	ctx := context.Background()
	s, err := chstore.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open clickhouse: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

func uniqueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test_" + hex.EncodeToString(b)
}

func dropDatabase(t testing.TB, cfg chstore.Config) {
	// A benchmark's database of millions of rows takes a while to drop.
	cfg.QueryTimeout = 5 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), cfg.QueryTimeout)
	defer cancel()
	s, err := chstore.Open(ctx, cfg)
	if err != nil {
		t.Errorf("drop test database %s: %v", cfg.Database, err)
		return
	}
	defer s.Close()
	if err := s.DropDatabase(ctx); err != nil {
		t.Errorf("drop test database %s: %v", cfg.Database, err)
	}
}
