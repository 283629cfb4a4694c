package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
)

const scopeName = "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

// Reconnect backoff while ClickHouse is unreachable at start.
const (
	connectInitialBackoff = time.Second
	connectMaxBackoff     = 30 * time.Second
)

var errNotConnected = errors.New("not connected to ClickHouse yet")

type chExporter struct {
	cfg    *Config
	logger *zap.Logger

	store atomic.Pointer[chstore.Store]
	// lastErr is why the store is not there yet, for push errors.
	lastErr atomic.Pointer[error]

	cancel context.CancelFunc
	wg     sync.WaitGroup

	rows      metric.Int64Counter
	invalid   metric.Int64Counter
	failures  metric.Int64Counter
	duration  metric.Float64Histogram
	retryable metric.MeasurementOption
	permanent metric.MeasurementOption
}

func newExporter(cfg *Config, set exporter.Settings) (*chExporter, error) {
	meter := set.MeterProvider.Meter(scopeName)
	rows, err1 := meter.Int64Counter("otelcol_exporter_glassbox_clickhouse_rows",
		metric.WithDescription("Observations written to ClickHouse."), metric.WithUnit("{observation}"))
	invalid, err2 := meter.Int64Counter("otelcol_exporter_glassbox_clickhouse_invalid_spans",
		metric.WithDescription("Spans dropped because they lack a project, trace or span id."), metric.WithUnit("{span}"))
	failures, err3 := meter.Int64Counter("otelcol_exporter_glassbox_clickhouse_insert_failures",
		metric.WithDescription("Failed inserts, by whether a retry can succeed."), metric.WithUnit("{insert}"))
	duration, err4 := meter.Float64Histogram("otelcol_exporter_glassbox_clickhouse_insert_duration",
		metric.WithDescription("Duration of one insert into ClickHouse."), metric.WithUnit("s"))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("create metrics: %w", err)
	}
	return &chExporter{
		cfg:       cfg,
		logger:    set.Logger,
		rows:      rows,
		invalid:   invalid,
		failures:  failures,
		duration:  duration,
		retryable: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", true))),
		permanent: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", false))),
	}, nil
}

// start tries once to connect (and migrate). When ClickHouse is not there it
// keeps trying in the background instead of failing or holding up the
// collector: until it connects, pushes fail as retryable, so batches wait in
// the sending queue (on disk with a storage extension) and the retry policy
// delivers them later.
func (e *chExporter) start(ctx context.Context, _ component.Host) error {
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	if err := e.connect(ctx); err != nil {
		e.logger.Warn("ClickHouse is not reachable; retrying in the background", zap.Error(err))
		e.wg.Add(1)
		go e.connectLoop(runCtx)
	}
	return nil
}

func (e *chExporter) connectLoop(ctx context.Context) {
	defer e.wg.Done()
	b := backoff{next: connectInitialBackoff, max: connectMaxBackoff}
	for attempt := 2; ; attempt++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.step()):
		}
		err := e.connect(ctx)
		if err == nil {
			e.logger.Info("connected to ClickHouse", zap.Int("attempt", attempt))
			return
		}
		if ctx.Err() != nil {
			return
		}
		e.logger.Warn("ClickHouse is still not reachable", zap.Int("attempt", attempt), zap.Error(err))
	}
}

func (e *chExporter) connect(ctx context.Context) error {
	s, err := chstore.Open(ctx, e.cfg.storeConfig())
	if err == nil && e.cfg.CreateSchema {
		if err = s.Migrate(ctx); err != nil {
			err = errors.Join(fmt.Errorf("create schema: %w", err), s.Close())
		}
	}
	if err != nil {
		e.lastErr.Store(&err)
		return err
	}
	e.store.Store(s)
	return nil
}

func (e *chExporter) shutdown(context.Context) error {
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	if s := e.store.Swap(nil); s != nil {
		return s.Close()
	}
	return nil
}

func (e *chExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	s := e.store.Load()
	if s == nil {
		if last := e.lastErr.Load(); last != nil {
			return fmt.Errorf("%w: %w", errNotConnected, *last)
		}
		return errNotConnected
	}
	obs := mapping.Observations(td, time.Now())
	obs = e.dropInvalid(ctx, obs)
	if len(obs) == 0 {
		return nil
	}
	start := time.Now()
	err := s.InsertObservations(ctx, obs)
	e.duration.Record(ctx, time.Since(start).Seconds())
	if err != nil {
		if chstore.Permanent(err) {
			e.failures.Add(ctx, 1, e.permanent)
			return consumererror.NewPermanent(err)
		}
		e.failures.Add(ctx, 1, e.retryable)
		return err
	}
	e.rows.Add(ctx, int64(len(obs)))
	return nil
}

// dropInvalid removes observations that can never be stored, so that one bad
// span does not hold up the rest of its batch.
func (e *chExporter) dropInvalid(ctx context.Context, obs []model.Observation) []model.Observation {
	kept := obs[:0]
	for i := range obs {
		if chstore.ValidateObservation(&obs[i]) == nil {
			kept = append(kept, obs[i])
		}
	}
	if dropped := len(obs) - len(kept); dropped > 0 {
		e.invalid.Add(ctx, int64(dropped))
	}
	return kept
}

// backoff doubles the wait between connection attempts up to max.
type backoff struct{ next, max time.Duration }

func (b *backoff) step() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d
}
