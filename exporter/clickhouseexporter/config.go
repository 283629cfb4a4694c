package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Config configures the glassbox_clickhouse exporter.
type Config struct {
	// DSN is a native-protocol address, e.g. clickhouse://user:password@host:9000.
	DSN configopaque.String `mapstructure:"dsn"`
	// Database holds the tables (default glassbox).
	Database string `mapstructure:"database"`
	// Cluster names the ClickHouse cluster for ON CLUSTER DDL and Distributed
	// tables; empty means a single server.
	Cluster string `mapstructure:"cluster"`
	// ReplicatedEngines selects Replicated*MergeTree engines (needs
	// ZooKeeper/Keeper). The API server reads the same key.
	ReplicatedEngines bool `mapstructure:"replicated_engines"`
	// RenamedReplicated catches the key's old name, so that a configuration
	// that still uses it stops at start with the new name, rather than
	// silently creating non-replicated tables.
	RenamedReplicated *bool `mapstructure:"replicated"`
	// CreateSchema creates the database and migrates the tables at start.
	CreateSchema bool `mapstructure:"create_schema"`

	// Timeout bounds one insert.
	exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// QueueConfig buffers batches; with storage set (e.g. file_storage) the
	// queue survives restarts and ClickHouse outages.
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// BackOffConfig retries failed inserts. max_elapsed_time 0 (the default)
	// keeps retrying until ClickHouse takes the batch, so nothing is dropped.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var errNoDSN = errors.New("dsn is required")

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.DSN == "" {
		return errNoDSN
	}
	if c.RenamedReplicated != nil {
		return errors.New("replicated was renamed replicated_engines, the key the API server's clickhouse section uses")
	}
	if err := c.storeConfig().Validate(); err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return nil
}

func (c *Config) storeConfig() chstore.Config {
	return chstore.Config{
		DSN:               string(c.DSN),
		Database:          c.Database,
		Cluster:           c.Cluster,
		ReplicatedEngines: c.ReplicatedEngines,
		QueryTimeout:      c.Timeout,
	}
}
