package costing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/refresh"
)

// Config is how a pipeline component prices observations: the models
// source, its reloading, the lookup cache and usage estimation. The
// glassbox_cost processor and the ClickHouse exporter read it alike.
type Config struct {
	// ModelsSource names an extension that serves the projects' own model
	// definitions (pricing.ModelSource, e.g. glassbox_controlplane). Without
	// it only the built-in catalogue applies.
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
}

// DefaultConfig reloads every 30 s and estimates usage.
func DefaultConfig() Config {
	return Config{
		RefreshInterval:  30 * time.Second,
		RefreshTimeout:   10 * time.Second,
		CacheSize:        pricing.DefaultCacheSize,
		EstimateUsage:    DefaultEstimation.Enabled,
		MaxEstimateBytes: DefaultEstimation.MaxBytes,
	}
}

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

// maxLoggedModels bounds the unknown model names logged once each.
const maxLoggedModels = 1000

// Service applies the rule with a pricer that follows the models source.
// It is safe for concurrent use.
type Service struct {
	cfg        Config
	logger     *zap.Logger
	pricer     *pricing.Pricer
	estimation Estimation
	loop       *refresh.Loop

	loggedModels sync.Map // model name -> struct{}
	loggedCount  atomic.Int32
}

// NewService prices with the built-in catalogue until Start loads the
// projects' own definitions.
func NewService(cfg Config, logger *zap.Logger) (*Service, error) {
	builtin, err := pricing.Builtin()
	if err != nil {
		return nil, err
	}
	return &Service{
		cfg:        cfg,
		logger:     logger,
		pricer:     pricing.NewPricer(builtin, cfg.CacheSize),
		estimation: Estimation{Enabled: cfg.EstimateUsage, MaxBytes: cfg.MaxEstimateBytes},
	}, nil
}

// Start resolves the models source and starts reloading the project
// definitions in the background; until the first load the built-in
// catalogue alone applies.
func (s *Service) Start(host component.Host) error {
	if s.cfg.ModelsSource == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*s.cfg.ModelsSource]
	if !ok {
		return fmt.Errorf("models_source extension %q is not configured", s.cfg.ModelsSource)
	}
	source, ok := ext.(pricing.ModelSource)
	if !ok {
		return fmt.Errorf("extension %q does not serve project models", s.cfg.ModelsSource)
	}
	s.loop = refresh.Start(s.cfg.RefreshInterval, s.cfg.RefreshTimeout, func(ctx context.Context) error {
		models, err := source.ProjectModels(ctx)
		if err != nil {
			return fmt.Errorf("load project models: %w", err)
		}
		// Invalid definitions are skipped; the rest apply.
		if err := s.pricer.SetProjectModels(models); err != nil {
			s.logger.Warn("Some project model definitions are invalid and were skipped", zap.Error(err))
		}
		return nil
	}, s.logger, refresh.WatchOf(ext, refresh.KindModels))
	return nil
}

// Shutdown stops the reloading.
func (s *Service) Shutdown() {
	s.loop.Stop()
	s.loop = nil
}

// Pricer is the service's pricer, for benchmarks that load definitions
// without a models source.
func (s *Service) Pricer() *pricing.Pricer { return s.pricer }

// Current waits while a model change made in this process is not loaded
// yet, so that the data sent after an API call is priced by it.
func (s *Service) Current(ctx context.Context) { s.loop.Current(ctx) }

// Apply applies the rule to o, as the package's Apply, and logs what an
// operator should know: a model without a price (once per name) and why an
// estimate failed.
func (s *Service) Apply(o *model.Observation, now time.Time, text func() model.Observation) Result {
	result, err := Apply(s.pricer, o.ProjectID, o, now, s.estimation, text)
	switch result {
	case UnknownModel:
		s.logUnknown(o.Model)
	case NoUsage:
		if err != nil {
			s.logger.Debug("Cannot estimate usage", zap.String("model", o.Model), zap.Error(err))
		}
	}
	return result
}

// logUnknown logs each unknown model name once, so that a model without a
// price does not go unnoticed.
func (s *Service) logUnknown(name string) {
	if s.loggedCount.Load() >= maxLoggedModels {
		return
	}
	if _, seen := s.loggedModels.LoadOrStore(name, struct{}{}); seen {
		return
	}
	s.loggedCount.Add(1)
	s.logger.Info("No price for this model; its generations stay without cost until a model definition matches it",
		zap.String("model", name))
}
