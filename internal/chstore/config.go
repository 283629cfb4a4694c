package chstore

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// DefaultDatabase is the database used when Config.Database is empty.
const DefaultDatabase = "glassbox"

// Defaults for the timeouts left zero in Config.
const (
	DefaultDialTimeout  = 5 * time.Second
	DefaultQueryTimeout = 30 * time.Second
	// DefaultMetricsMaxRowsToRead is about 30 days of a project with three
	// million observations a day.
	DefaultMetricsMaxRowsToRead = 100_000_000
	// DefaultMaxOpenConns bounds the connection pool unless the DSN sets
	// max_open_conns: twice the driver's default, since the exporter and
	// the API, which had a pool each, share one store.
	DefaultMaxOpenConns = 20
)

// Config says where the tables live and how they are laid out.
type Config struct {
	// DSN is a clickhouse-go native-protocol DSN, e.g. clickhouse://user:pass@host:9000.
	// Its database path is ignored: tables are always qualified with Database.
	DSN string
	// Database holds every table; it is created by Migrate.
	Database string
	// Cluster, when set, names the ClickHouse cluster for ON CLUSTER DDL. Each
	// table then exists as <name>_local on every node plus a Distributed <name>
	// sharded by trace id, so that all rows of a trace meet on one shard.
	Cluster string
	// ReplicatedEngines selects Replicated*MergeTree engines (needs ZooKeeper).
	ReplicatedEngines bool
	// DialTimeout bounds connecting; QueryTimeout bounds every single call.
	DialTimeout  time.Duration
	QueryTimeout time.Duration
	// MetricsMaxRowsToRead bounds the rows one metrics query may read; a
	// query past it is refused with what to narrow.
	MetricsMaxRowsToRead int64
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn is required"))
	} else if opts, err := clickhouse.ParseDSN(c.DSN); err != nil {
		errs = append(errs, fmt.Errorf("dsn: %w", err))
	} else if opts.Protocol != clickhouse.Native {
		errs = append(errs, errors.New("dsn: only the native protocol is supported (clickhouse://host:9000)"))
	} else if _, err := newNativeClient(opts); err != nil {
		errs = append(errs, fmt.Errorf("dsn: %w", err))
	}
	if c.Database != "" && !identifier.MatchString(c.Database) {
		errs = append(errs, fmt.Errorf("database %q: letters, digits and underscores only", c.Database))
	}
	if c.Cluster != "" && !identifier.MatchString(c.Cluster) {
		errs = append(errs, fmt.Errorf("cluster %q: letters, digits and underscores only", c.Cluster))
	}
	if c.MetricsMaxRowsToRead < 0 {
		errs = append(errs, errors.New("metrics_max_rows_to_read must not be negative"))
	}
	if c.DialTimeout < 0 || c.QueryTimeout < 0 {
		errs = append(errs, errors.New("timeouts must not be negative"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = DefaultQueryTimeout
	}
	if c.MetricsMaxRowsToRead == 0 {
		c.MetricsMaxRowsToRead = DefaultMetricsMaxRowsToRead
	}
	return c
}
