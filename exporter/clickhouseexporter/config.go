package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

// Config configures the glassbox_clickhouse exporter.
type Config struct {
	// Storage names the glassbox_storage extension that defines the
	// ClickHouse store (dsn, database, cluster, replicated_engines): one
	// definition, shared with the API.
	Storage component.ID `mapstructure:"storage"`

	// Timeout bounds one export without disk_queue (the store's
	// query_timeout bounds each insert).
	exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// DiskQueue holds spans on disk, already mapped, between the pipeline
	// and ClickHouse, and inserts them in large batches. It replaces
	// sending_queue.
	DiskQueue configoptional.Optional[DiskQueueConfig] `mapstructure:"disk_queue"`
	// QueueConfig is exporterhelper's queue, used when disk_queue is not
	// set; with storage set (e.g. file_storage) it survives restarts and
	// ClickHouse outages.
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// queueConfigured records that sending_queue was written in the
	// configuration, which disk_queue does not allow.
	queueConfigured bool
	// BackOffConfig retries failed inserts. max_elapsed_time 0 (the default)
	// keeps retrying until ClickHouse takes the batch, so nothing is dropped.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// Pricing, when set, fills in the cost of each observation that names a
	// model and carries none, by the rule the glassbox_cost processor
	// applies, as the spans are mapped for storage: the same result without
	// a processor that maps every span a second time. Keep the processor
	// where other exporters of the pipeline need the cost attributes; the
	// spans it priced are left as they are.
	Pricing configoptional.Optional[costing.Config] `mapstructure:"pricing"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Unmarshal reads the configuration and notes whether it sets sending_queue.
// With disk_queue, the default in-memory sending_queue is left out.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if err := movedKeys(conf); err != nil {
		return err
	}
	type plain Config // without this method, so that the call below does not recurse
	if err := conf.Unmarshal((*plain)(c)); err != nil {
		return err
	}
	c.queueConfigured = conf.IsSet("sending_queue")
	if c.DiskQueue.HasValue() && !c.queueConfigured {
		c.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	}
	return nil
}

// DiskQueueConfig configures the exporter's own queue on disk.
type DiskQueueConfig struct {
	// Directory holds the queue's segment files; one collector at a time.
	Directory string `mapstructure:"directory"`
	// MaxBytes bounds the queued data on disk; beyond it the pipeline
	// refuses new spans (the receiver answers 503 and clients retry).
	MaxBytes int64 `mapstructure:"max_bytes"`
	// BatchBytes is the size of queued data read and sent as one block of
	// an insert; it bounds the memory of each consumer.
	BatchBytes int64 `mapstructure:"batch_bytes"`
	// FlushInterval is how much traffic one insert takes at most, from its
	// first block, and so about how long a span waits: ClickHouse does best
	// with few large inserts. An insert ends sooner once no data comes for
	// maxBlockGap.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// Consumers is how many inserts are in flight: one collects the queued
	// records while the others wait for ClickHouse to write their part.
	Consumers int `mapstructure:"consumers"`
	// Fsync flushes every append to the device, so that queued spans
	// survive a power loss, not only a crash of the collector.
	Fsync bool `mapstructure:"fsync"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the disk queue's settings.
func (c *DiskQueueConfig) Validate() error {
	var errs []error
	if c.Directory == "" {
		errs = append(errs, errors.New("disk_queue: directory is required"))
	}
	if c.BatchBytes <= 0 {
		errs = append(errs, errors.New("disk_queue: batch_bytes must be positive"))
	}
	if c.MaxBytes < c.BatchBytes {
		errs = append(errs, errors.New("disk_queue: max_bytes must be at least batch_bytes"))
	}
	if c.Consumers < 1 {
		errs = append(errs, errors.New("disk_queue: consumers must be at least 1"))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, errors.New("disk_queue: flush_interval must not be negative"))
	}
	return errors.Join(errs...)
}

// moved lists the keys that moved to the glassbox_storage extension, by
// their name there.
var moved = []struct{ key, now string }{
	{"dsn", "dsn"},
	{"database", "database"},
	{"cluster", "cluster"},
	{"replicated_engines", "replicated_engines"},
	{"replicated", "replicated_engines"},
	{"create_schema", "create_schema"},
}

// movedKeys stops a configuration that still sets the ClickHouse location
// here with where it went, rather than an unknown-key error.
func movedKeys(conf *confmap.Conf) error {
	var errs []error
	for _, m := range moved {
		if conf.IsSet(m.key) {
			errs = append(errs, fmt.Errorf("%q moved to the glassbox_storage extension (as %q): "+
				"add it under extensions, list it in service.extensions and set storage: glassbox_storage", m.key, m.now))
		}
	}
	return errors.Join(errs...)
}

var errNoStorage = errors.New("storage is required: the id of a glassbox_storage extension, e.g. storage: glassbox_storage")

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Storage == (component.ID{}) {
		return errNoStorage
	}
	if c.DiskQueue.HasValue() && c.queueConfigured {
		return errors.New("disk_queue replaces sending_queue: configure one of them")
	}
	return nil
}
