package evaltapprocessor // import "github.com/glassbox-dev/glassbox/processor/evaltapprocessor"

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
)

// Config configures the glassbox_evaltap processor.
type Config struct {
	// Source names the extension that serves the evaluator rules and takes
	// the jobs (evaljobs.RuleSource and evaljobs.Enqueuer): glassbox_controlplane.
	Source component.ID `mapstructure:"source"`
	// RefreshInterval is how often the rules are reloaded.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// RefreshTimeout bounds one reload.
	RefreshTimeout time.Duration `mapstructure:"refresh_timeout"`
	// QueueSize bounds the jobs waiting to be written to the job queue;
	// jobs beyond it are dropped and counted, so the pipeline never waits.
	QueueSize int `mapstructure:"queue_size"`
	// BatchSize is the most jobs written in one call.
	BatchSize int `mapstructure:"batch_size"`
	// FlushInterval is the longest a job waits for its batch to fill.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// EnqueueTimeout bounds one write of a batch.
	EnqueueTimeout time.Duration `mapstructure:"enqueue_timeout"`
	// EnqueueAttempts is how often a batch is tried before it is dropped.
	EnqueueAttempts int `mapstructure:"enqueue_attempts"`
	// DedupeCacheSize is the number of recent (rule, target) pairs
	// remembered, so that the spans of one trace offer its job once.
	DedupeCacheSize int `mapstructure:"dedupe_cache_size"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var (
	errSource          = errors.New("source must name the extension that serves evaluator rules, e.g. glassbox_controlplane")
	errRefreshInterval = errors.New("refresh_interval must be positive")
	errRefreshTimeout  = errors.New("refresh_timeout must be positive")
	errQueueSize       = errors.New("queue_size must be positive")
	errBatchSize       = errors.New("batch_size must be positive")
	errFlushInterval   = errors.New("flush_interval must be positive")
	errEnqueueTimeout  = errors.New("enqueue_timeout must be positive")
	errEnqueueAttempts = errors.New("enqueue_attempts must be at least 1")
	errDedupeCacheSize = errors.New("dedupe_cache_size must not be negative")
)

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, err error) {
		if !ok {
			errs = append(errs, err)
		}
	}
	check(c.Source.Type().String() != "", errSource)
	check(c.RefreshInterval > 0, errRefreshInterval)
	check(c.RefreshTimeout > 0, errRefreshTimeout)
	check(c.QueueSize > 0, errQueueSize)
	check(c.BatchSize > 0, errBatchSize)
	check(c.FlushInterval > 0, errFlushInterval)
	check(c.EnqueueTimeout > 0, errEnqueueTimeout)
	check(c.EnqueueAttempts >= 1, errEnqueueAttempts)
	check(c.DedupeCacheSize >= 0, errDedupeCacheSize)
	return errors.Join(errs...)
}
