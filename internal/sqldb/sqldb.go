// Package sqldb is the SQL layer the control plane's packages share: one
// connection pool, the dialect it speaks (SQLite or PostgreSQL) and
// transactions over it. Statements are written once with `?` placeholders
// and rebound to `$n` for PostgreSQL; ids are TEXT and timestamps BIGINT
// microseconds since the Unix epoch (UTC).
//
// The schema and its one list of migrations belong to internal/controlplane,
// which opens the database; a package that owns some of its tables (the
// evaluation job queue) runs its statements through the DB it is handed, so
// that they join the store's transactions and use its dialect.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The verdicts every package over the database returns, so that callers
// (and the API's error mapping) tell them apart without knowing the backend.
var (
	// ErrNotFound means the addressed row does not exist in the given scope.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a row with the same identity or unique name exists.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the input was rejected before reaching the database.
	ErrInvalid = errors.New("invalid input")
)

// DB is an open database and its dialect. It is safe for concurrent use.
type DB struct {
	db       *sql.DB
	postgres bool
}

// New wraps an open pool; postgres says which dialect it speaks.
func New(db *sql.DB, postgres bool) *DB {
	return &DB{db: db, postgres: postgres}
}

// Postgres reports whether the database is PostgreSQL (else SQLite).
func (d *DB) Postgres() bool { return d.postgres }

// Conn runs statements on the pool, each in its own transaction.
func (d *DB) Conn() Conn {
	return Conn{q: d.db, postgres: d.postgres}
}

// InTx runs fn in a transaction and commits when fn returns nil. On SQLite
// the transaction is immediate (the DSN's _txlock), so it holds the write
// lock from the start.
func (d *DB) InTx(ctx context.Context, fn func(Conn) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(Conn{q: tx, postgres: d.postgres}); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", Classify(err))
	}
	return nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Conn runs portable statements on the pool or in a transaction.
type Conn struct {
	q        querier
	postgres bool
}

// Postgres reports whether the statements run on PostgreSQL (else SQLite).
func (c Conn) Postgres() bool { return c.postgres }

// Exec runs a statement that returns no rows.
func (c Conn) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.q.ExecContext(ctx, Rebind(query, c.postgres), args...)
}

// Query runs a statement that returns rows.
func (c Conn) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, Rebind(query, c.postgres), args...)
}

// QueryRow runs a statement that returns at most one row.
func (c Conn) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.q.QueryRowContext(ctx, Rebind(query, c.postgres), args...)
}

// Rebind turns `?` placeholders into PostgreSQL's `$n`. Statements are
// constants of this module, so quoted literals are the only place a `?` may
// appear that is not a placeholder.
func Rebind(query string, postgres bool) string {
	if !postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n, quoted := 0, false
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case ch == '\'':
			quoted = !quoted
		case ch == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// Classify tags driver constraint errors with ErrConflict or ErrNotFound.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		}
	}
	return err
}

// FromMicros reads a stored timestamp.
func FromMicros(v int64) time.Time {
	return time.UnixMicro(v).UTC()
}
