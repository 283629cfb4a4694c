// Package chstore is the one place that knows the ClickHouse schema and the
// queries over it: migrations, the observation write path and the reads the
// API server serves. It speaks the native protocol through clickhouse-go and
// keeps to SQL that runs on ClickHouse 18.16 as well as on current releases
// (docs/storage.md).
package chstore

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/zap"
)

// ErrNotFound is returned by the Get* methods when nothing matches in the project.
var ErrNotFound = errors.New("not found")

// ErrUnavailable means ClickHouse did not answer or its schema is not in
// place yet: the same call may succeed later.
var ErrUnavailable = errors.New("ClickHouse is unavailable")

// Store reads and writes the Glassbox tables of one database.
type Store struct {
	conn driver.Conn
	cfg  Config
	ddl  ddl
	// ready is false while Connect is still bringing the store up.
	ready atomic.Bool
	stop  context.CancelFunc
	done  chan struct{}
	// retention holds each project's retention in days (SetRetention):
	// reads leave out rows older than it before ExpireBefore deletes them.
	retention atomic.Pointer[map[string]int]
	// native sends the observation inserts (native.go).
	native *nativeClient
	// blocks keeps the column buffers of observation inserts for the next
	// ones (Store.block). A sync.Pool would not: it empties at every garbage
	// collection, several a second under load, and the buffers of each block
	// would grow again from nothing.
	blocks chan *observationBlock
}

// Open connects to ClickHouse and checks that the server answers. It creates
// nothing; call Migrate for that.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.ping(ctx); err != nil {
		return nil, errors.Join(err, s.conn.Close())
	}
	return s, nil
}

// Reconnect backoff of Connect.
const (
	connectInitialBackoff = time.Second
	connectMaxBackoff     = 30 * time.Second
)

// Connect tries once, within ctx, to reach the server and, with migrate, to
// create the schema. If that fails it returns the store anyway and keeps
// trying in the background with backoff until it succeeds or Close is
// called. Meanwhile calls fail with ErrUnavailable, and so does Ping: a
// process can start, queue and serve what does not need ClickHouse while
// ClickHouse is down.
func Connect(ctx context.Context, cfg Config, migrate bool, logger *zap.Logger) (*Store, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	if err = s.bringUp(ctx, migrate); err == nil {
		return s, nil
	}
	logger.Warn("ClickHouse is not reachable; retrying in the background", zap.Error(err))
	s.ready.Store(false)
	runCtx, stop := context.WithCancel(context.Background())
	s.stop, s.done = stop, make(chan struct{})
	go s.retryBringUp(runCtx, migrate, logger)
	return s, nil
}

func (s *Store) bringUp(ctx context.Context, migrate bool) error {
	err := s.ping(ctx)
	if err == nil && migrate {
		err = s.Migrate(ctx)
	}
	return err
}

func (s *Store) retryBringUp(ctx context.Context, migrate bool, logger *zap.Logger) {
	defer close(s.done)
	wait := connectInitialBackoff
	for attempt := 2; ; attempt++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, connectMaxBackoff)
		err := s.bringUp(ctx, migrate)
		if err == nil {
			s.ready.Store(true)
			logger.Info("connected to ClickHouse", zap.Int("attempt", attempt))
			return
		}
		if ctx.Err() != nil {
			return
		}
		logger.Warn("ClickHouse is still not reachable", zap.Int("attempt", attempt), zap.Duration("next", wait), zap.Error(err))
	}
}

func newStore(cfg Config) (*Store, error) {
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
	// One store serves the exporter's inserts (each consumer holds a
	// connection for about a flush interval) and the API's reads; the DSN's
	// max_open_conns overrides this.
	if opts.MaxOpenConns == 0 {
		opts.MaxOpenConns = DefaultMaxOpenConns
	}
	// A read that outlives the query deadline means a hung connection.
	opts.ReadTimeout = cfg.QueryTimeout + cfg.DialTimeout
	native, err := newNativeClient(opts)
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	// Open does not dial; the first call does.
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse: %w", err)
	}
	s := &Store{
		conn:   conn,
		native: native,
		cfg:    cfg,
		ddl:    ddl{db: cfg.Database, cluster: cfg.Cluster, replicated: cfg.ReplicatedEngines},
	}
	s.blocks = make(chan *observationBlock, nativeMaxIdle)
	s.ready.Store(true)
	return s, nil
}

// Close stops Connect's attempts and releases the connection pool.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	s.native.close()
	return s.conn.Close()
}

// Ping checks that the server answers within the dial timeout and, for a
// store from Connect, that Connect has brought it up.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return err
	}
	if !s.ready.Load() {
		return fmt.Errorf("%w: the schema is not in place yet", ErrUnavailable)
	}
	return nil
}

func (s *Store) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse: %w", unavailable(err))
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
	return unavailable(s.conn.Exec(ctx, query, args...))
}

// Exception codes of a schema that is not (yet) there.
const (
	codeUnknownTable    = 60
	codeUnknownDatabase = 81
)

// unavailable marks the errors that say ClickHouse is not there, rather than
// that the call was wrong: refused or broken connections, timeouts while
// connecting, and a missing schema.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var opErr *net.OpError
	var ex *clickhouse.Exception
	switch {
	case errors.As(err, &opErr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, sqldriver.ErrBadConn),
		errors.Is(err, clickhouse.ErrAcquireConnTimeout):
	case errors.As(err, &ex) && (ex.Code == codeUnknownTable || ex.Code == codeUnknownDatabase):
	default:
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
