package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"context"
	"errors"
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

type chExporter struct {
	cfg    *Config
	logger *zap.Logger

	store *chstore.Store

	rows      metric.Int64Counter
	invalid   metric.Int64Counter
	failures  metric.Int64Counter
	duration  metric.Float64Histogram
	retryable metric.MeasurementOption
	permanent metric.MeasurementOption
}

func newExporter(cfg *Config, set exporter.Settings) (*chExporter, error) {
	meter := set.MeterProvider.Meter(scopeName)
	rows, err1 := rowsMetric.Int64Counter(meter)
	invalid, err2 := invalidMetric.Int64Counter(meter)
	failures, err3 := failuresMetric.Int64Counter(meter)
	duration, err4 := durationMetric.Float64Histogram(meter)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
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

// start tries once to connect (and migrate); when ClickHouse is not there
// it keeps trying in the background instead of failing or holding up the
// collector: until it connects, pushes fail as retryable, so batches wait in
// the sending queue (on disk with a storage extension) and the retry policy
// delivers them later.
func (e *chExporter) start(ctx context.Context, _ component.Host) error {
	s, err := chstore.Connect(ctx, e.cfg.storeConfig(), e.cfg.CreateSchema, e.logger)
	if err != nil {
		return err
	}
	e.store = s
	return nil
}

func (e *chExporter) shutdown(context.Context) error {
	if e.store == nil {
		return nil
	}
	return e.store.Close()
}

func (e *chExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	obs := mapping.Observations(td, time.Now())
	obs = e.dropInvalid(ctx, obs)
	if len(obs) == 0 {
		return nil
	}
	start := time.Now()
	err := e.store.InsertObservations(ctx, obs)
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
