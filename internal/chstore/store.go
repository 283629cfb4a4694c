// Package chstore is the one place that knows the ClickHouse schema and the
// queries over it: migrations, the observation write path and the reads the
// API server serves. It speaks the native protocol through clickhouse-go and
// keeps to SQL that runs on ClickHouse 18.16 as well as on current releases
// (docs/storage.md).
package chstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ErrNotFound is returned by the Get* methods when nothing matches in the project.
var ErrNotFound = errors.New("not found")

// Store reads and writes the Glassbox tables of one database.
type Store struct {
	conn driver.Conn
	cfg  Config
	ddl  ddl
}

// Open connects to ClickHouse and checks that the server answers. It creates
// nothing; call Migrate for that.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts, err := clickhouse.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	// Every statement names its database, and the database may not exist yet
	// when Migrate runs, so connections start in the server's default one.
	opts.Auth.Database = ""
	opts.DialTimeout = cfg.DialTimeout
	// A read that outlives the query deadline means a hung connection.
	opts.ReadTimeout = cfg.QueryTimeout + cfg.DialTimeout
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse: %w", err)
	}
	s := &Store{
		conn: conn,
		cfg:  cfg,
		ddl:  ddl{db: cfg.Database, cluster: cfg.Cluster, replicated: cfg.ReplicatedEngines},
	}
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return s, nil
}

// Close releases the connection pool.
func (s *Store) Close() error { return s.conn.Close() }

// Ping checks that the server answers within the dial timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse: %w", err)
	}
	return nil
}

// Database is the database that holds the tables.
func (s *Store) Database() string { return s.cfg.Database }

// deadline bounds one call: 18.16 can leave a connection waiting for data that
// never comes, and the driver's own read timeout is five minutes.
func (s *Store) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.QueryTimeout)
}

func (s *Store) exec(ctx context.Context, query string, args ...any) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.conn.Exec(ctx, query, args...)
}
