package chstore

import (
	"time"

	"go.opentelemetry.io/collector/config/configopaque"
)

// Settings is the one definition of where the tables live and how they are
// laid out, with the key names every configuration uses: the
// glassbox_storage extension's (which the exporter and the API extension
// name by id) and the standalone API server's clickhouse section.
type Settings struct {
	// DSN is a native-protocol DSN, e.g. clickhouse://user:password@host:9000.
	DSN configopaque.String `mapstructure:"dsn"`
	// Database holds every table (default glassbox).
	Database string `mapstructure:"database"`
	// Cluster names the ClickHouse cluster for ON CLUSTER DDL and
	// Distributed tables; empty means a single server.
	Cluster string `mapstructure:"cluster"`
	// ReplicatedEngines selects Replicated*MergeTree engines (needs
	// ZooKeeper or Keeper).
	ReplicatedEngines bool `mapstructure:"replicated_engines"`
	// DialTimeout bounds connecting (0: DefaultDialTimeout).
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// QueryTimeout bounds every single call, inserts included
	// (0: DefaultQueryTimeout).
	QueryTimeout time.Duration `mapstructure:"query_timeout"`
	// MetricsMaxRowsToRead bounds the rows one metrics query reads; past it
	// the query is refused with a 400 that says what to narrow
	// (0: DefaultMetricsMaxRowsToRead).
	MetricsMaxRowsToRead int64 `mapstructure:"metrics_max_rows_to_read"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultSettings returns the settings of a local single server.
func NewDefaultSettings() Settings {
	return Settings{DSN: "clickhouse://127.0.0.1:9000", Database: DefaultDatabase}
}

// Config is the store configuration the settings describe.
func (s Settings) Config() Config {
	return Config{
		DSN:                  string(s.DSN),
		Database:             s.Database,
		Cluster:              s.Cluster,
		ReplicatedEngines:    s.ReplicatedEngines,
		DialTimeout:          s.DialTimeout,
		QueryTimeout:         s.QueryTimeout,
		MetricsMaxRowsToRead: s.MetricsMaxRowsToRead,
	}
}

// Validate reports every problem with the settings.
func (s Settings) Validate() error {
	return s.Config().Validate()
}
