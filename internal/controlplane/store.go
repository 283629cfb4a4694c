// Package controlplane is the SQL store behind the API server: organizations,
// projects, users, memberships, API keys and everything else but traces. One
// set of statements serves both backends: SQLite (embedded, pure Go) and
// PostgreSQL (replicated API servers), through internal/sqldb. The store owns
// the schema and its one list of migrations; the evaluation job queue
// (internal/evalqueue) runs over the same database.
package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/promptcompose"
	"github.com/glassbox-dev/glassbox/internal/sqldb"
)

// The store's verdicts, shared with the other packages over its database.
var (
	// ErrNotFound means the addressed row does not exist in the given scope.
	ErrNotFound = sqldb.ErrNotFound
	// ErrConflict means a row with the same identity or unique name exists.
	ErrConflict = sqldb.ErrConflict
	// ErrInvalid means the input was rejected before reaching the database.
	ErrInvalid = sqldb.ErrInvalid
)

// sqliteParams are applied to every SQLite connection. WAL lets readers run
// beside the writer; immediate transactions take the write lock up front, so
// two writers wait on busy_timeout instead of failing on lock upgrade.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
	"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// Store is the control-plane store. It is safe for concurrent use.
type Store struct {
	// Queue is the evaluation job queue over the same database; its
	// methods are the store's.
	*evalqueue.Queue

	db       *sql.DB
	sql      *sqldb.DB
	postgres bool
	now      func() time.Time

	promptLimits promptcompose.Limits
	// hasher stores API key secrets, keyed with apikey.HashKeyEnv when set.
	hasher    apikey.Hasher
	dummyHash string // compared against for unknown public keys

	feed changeFeed

	touchMu sync.Mutex
	touched map[string]time.Time // public key -> when this process last wrote last_used_at
}

// Open connects to dsn and applies pending migrations. dsn is either
// `postgres://...` / `postgresql://...`, or `sqlite:///path/to/file.db`, or a
// plain file path (SQLite).
func Open(ctx context.Context, dsn string) (*Store, error) {
	driver, source, postgres, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if !postgres {
		if err := ownerOnlyFile(strings.TrimPrefix(strings.SplitN(source, "?", 2)[0], "file:")); err != nil {
			return nil, fmt.Errorf("open control plane: %w", err)
		}
	}
	// Every process that opens the store hashes secrets the same way: the
	// servers, the admin CLI and headless initialisation.
	hasher, err := apikey.HasherFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, fmt.Errorf("open control plane: %w", err)
	}
	s := &Store{db: db, sql: sqldb.New(db, postgres), postgres: postgres, now: time.Now, promptLimits: promptcompose.DefaultLimits(), touched: map[string]time.Time{},
		hasher: hasher, dummyHash: hasher.Hash(secretKeyPrefix + "00000000-0000-0000-0000-000000000000")}
	s.Queue = evalqueue.New(s.sql, func() time.Time { return s.now() })
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("connect control plane: %w", err), db.Close())
	}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := s.pepperSecretHashes(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// ownerOnlyFile creates the SQLite file, and its directory on a fresh
// install, readable by the owner alone: it holds key hashes, sessions and
// the media signing key, and the driver would create it with the umask's
// mode (often 0644). SQLite gives its -wal and -shm files the same mode.
func ownerOnlyFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // the operator names the database file in the DSN
	if err != nil {
		return err
	}
	return errors.Join(f.Chmod(0o600), f.Close())
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping control plane: %w", err)
	}
	return nil
}

// Close releases the connection pool.
func (s *Store) Close() error {
	return s.db.Close()
}

func parseDSN(dsn string) (driver, source string, postgres bool, err error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "pgx", dsn, true, nil
	case strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://"):
		return "", "", false, fmt.Errorf("%w: control plane dsn: unsupported scheme in %q (expected postgres:// or sqlite://)", ErrInvalid, redactDSN(dsn))
	}
	path := strings.TrimPrefix(dsn, "sqlite://")
	if path == "" {
		return "", "", false, fmt.Errorf("%w: control plane dsn: empty SQLite path", ErrInvalid)
	}
	if path == ":memory:" {
		// Each pooled connection would get its own empty database.
		return "", "", false, fmt.Errorf("%w: control plane dsn: SQLite needs a file, not the in-memory database", ErrInvalid)
	}
	if strings.Contains(path, "?") {
		return "", "", false, fmt.Errorf("%w: control plane dsn: SQLite options are fixed, remove %q", ErrInvalid, path[strings.Index(path, "?"):])
	}
	return "sqlite", path + "?" + sqliteParams, false, nil
}

// redactDSN hides the password of a URL-form DSN, for errors and logs.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		// Unparseable: show the scheme at most.
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://…"
	}
	return u.Redacted()
}

// DB is the store's SQL layer, for the packages that own some of its tables
// (the evaluation job queue): their statements then run on the same pool,
// in the same dialect, and can join the store's transactions.
func (s *Store) DB() *sqldb.DB {
	return s.sql
}

// conn is this package's shorthand for sqldb.Conn.
type conn struct{ sqldb.Conn }

func (c conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.Exec(ctx, query, args...)
}

func (c conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.Query(ctx, query, args...)
}

func (c conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.QueryRow(ctx, query, args...)
}

func (s *Store) conn() conn {
	return conn{s.sql.Conn()}
}

// inTx runs fn in a transaction and commits when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(conn) error) error {
	return s.sql.InTx(ctx, func(c sqldb.Conn) error { return fn(conn{c}) })
}

// classify tags driver constraint errors with ErrConflict or ErrNotFound.
func classify(err error) error {
	return sqldb.Classify(err)
}

// requireOne turns "no row changed" into ErrNotFound.
func requireOne(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

func (s *Store) micros() int64 {
	return s.now().UnixMicro()
}

func fromMicros(v int64) time.Time {
	return sqldb.FromMicros(v)
}

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// validID accepts caller-chosen ids: 1 to 128 characters from a set that is
// safe in URLs, headers, log lines and file names, starting with a letter or
// a digit, so that no id is "." or ".." or a hidden file.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i, r := range id {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '-' && r != '_' && r != '.') {
			return false
		}
	}
	return true
}

func checkID(kind, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w: %s id %q must be 1-128 characters of letters, digits, '-', '_' or '.', starting with a letter or digit",
			ErrInvalid, kind, id)
	}
	return nil
}

func checkName(kind, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 255 {
		return "", fmt.Errorf("%w: %s name must be 1-255 characters", ErrInvalid, kind)
	}
	return name, nil
}

// projectPage returns one page of a project's rows of table, in orderBy
// order, and the number of all of them; what names the rows in errors.
func projectPage[T any](ctx context.Context, c conn, what, table, columns, orderBy, projectID string,
	offset, limit int, scan func(scanner) (T, error),
) ([]T, int, error) {
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM `+table+` WHERE project_id = ?`, projectID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", what, err)
	}
	rows, err := c.query(ctx, `SELECT `+columns+` FROM `+table+` WHERE project_id = ?
		ORDER BY `+orderBy+` LIMIT ? OFFSET ?`, projectID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list %s: %w", what, err)
		}
		out = append(out, v)
	}
	return out, total, rows.Err()
}
