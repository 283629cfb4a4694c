package costprocessor // import "github.com/glassbox-dev/glassbox/processor/costprocessor"

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
)

// Config configures the glassbox_cost processor.
type Config struct {
	// ModelsSource names an extension that serves the projects' own model
	// definitions (pricing.ModelSource, e.g. glassbox_api). Without it only
	// the built-in catalogue applies.
	ModelsSource *component.ID `mapstructure:"models_source"`
	// RefreshInterval is how often the project definitions are reloaded.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// RefreshTimeout bounds one reload.
	RefreshTimeout time.Duration `mapstructure:"refresh_timeout"`
	// CacheSize is the number of (project, model name) lookups kept.
	CacheSize int `mapstructure:"cache_size"`
	// EstimateUsage counts the tokens of generations that report no usage,
	// for models with a known tokenizer.
	EstimateUsage bool `mapstructure:"estimate_usage"`
	// MaxEstimateBytes skips estimation when input and output together are
	// larger, bounding the time one span can take.
	MaxEstimateBytes int `mapstructure:"max_estimate_bytes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

var (
	errRefreshInterval = errors.New("refresh_interval must be positive")
	errRefreshTimeout  = errors.New("refresh_timeout must be positive")
	errCacheSize       = errors.New("cache_size must be positive")
	errEstimateBytes   = errors.New("max_estimate_bytes must be positive when estimate_usage is on")
)

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.RefreshInterval <= 0 {
		errs = append(errs, errRefreshInterval)
	}
	if c.RefreshTimeout <= 0 {
		errs = append(errs, errRefreshTimeout)
	}
	if c.CacheSize <= 0 {
		errs = append(errs, errCacheSize)
	}
	if c.EstimateUsage && c.MaxEstimateBytes <= 0 {
		errs = append(errs, errEstimateBytes)
	}
	return errors.Join(errs...)
}
