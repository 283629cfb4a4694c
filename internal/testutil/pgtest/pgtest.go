// Package pgtest gives each test its own PostgreSQL database on the server
// named by GLASSBOX_TEST_POSTGRES_DSN (start one with scripts/postgres.sh).
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// EnvDSN names the variable holding a server DSN whose role may create
// databases.
const EnvDSN = "GLASSBOX_TEST_POSTGRES_DSN"

// DSN creates a fresh, empty database for the test and returns its DSN; the
// database is dropped when the test ends. Without EnvDSN the test is
// skipped, or fails when CI=true.
func DSN(t testing.TB) string {
	t.Helper()
	server := os.Getenv(EnvDSN)
	if server == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s must be set when CI=true", EnvDSN)
		}
		t.Skipf("%s not set; start a server with scripts/postgres.sh and export it", EnvDSN)
	}
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatalf("open %s: %v", EnvDSN, err)
	}
	t.Cleanup(func() { _ = admin.Close() })

	name := "glassbox_test_" + strings.ToLower(rand.Text())
	dsn, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE ends connections a failed test may have left open.
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return dsn
}

// withDatabase points a postgres:// URL at database name.
func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("want a postgres:// URL, got scheme %q", u.Scheme)
	}
	u.Path = "/" + name
	return u.String(), nil
}
