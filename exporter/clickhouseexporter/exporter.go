package clickhouseexporter // import "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/diskqueue"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
)

const scopeName = "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

type chExporter struct {
	cfg    *Config
	logger *zap.Logger

	store *chstore.Store

	// With disk_queue: the queue, its consumer's cancel and end, and the
	// record buffers that enqueue reuses.
	queue    *diskqueue.Queue
	stop     context.CancelFunc
	consumed chan struct{}
	buffers  sync.Pool

	rows      metric.Int64Counter
	invalid   metric.Int64Counter
	failures  metric.Int64Counter
	duration  metric.Float64Histogram
	corrupt   metric.Int64Counter
	meter     metric.Meter
	retryable metric.MeasurementOption
	permanent metric.MeasurementOption
}

func newExporter(cfg *Config, set exporter.Settings) (*chExporter, error) {
	meter := set.MeterProvider.Meter(scopeName)
	rows, err1 := rowsMetric.Int64Counter(meter)
	invalid, err2 := invalidMetric.Int64Counter(meter)
	failures, err3 := failuresMetric.Int64Counter(meter)
	duration, err4 := durationMetric.Float64Histogram(meter)
	corrupt, err5 := corruptMetric.Int64Counter(meter)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	e := &chExporter{
		cfg:       cfg,
		logger:    set.Logger,
		rows:      rows,
		invalid:   invalid,
		failures:  failures,
		duration:  duration,
		corrupt:   corrupt,
		retryable: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", true))),
		permanent: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", false))),
		meter:     meter,
	}
	return e, nil
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
	dq := e.cfg.DiskQueue.Get()
	if dq == nil {
		return nil
	}
	q, err := diskqueue.Open(dq.Directory, diskqueue.Options{MaxBytes: dq.MaxBytes, Sync: dq.Fsync})
	if err != nil {
		return errors.Join(err, s.Close())
	}
	if _, err := queueBytesMetric.Int64ObservableGauge(e.meter, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(q.Size())
		return nil
	}); err != nil {
		return errors.Join(err, q.Close(), s.Close())
	}
	e.queue = q
	ctx, e.stop = context.WithCancel(context.Background())
	e.consumed = make(chan struct{})
	go func() {
		defer close(e.consumed)
		e.consume(ctx, dq)
	}()
	return nil
}

func (e *chExporter) shutdown(context.Context) error {
	var errs []error
	if e.queue != nil {
		// An insert cut short here is sent again after the restart.
		e.stop()
		<-e.consumed
		errs = append(errs, e.queue.Close())
	}
	if e.store != nil {
		errs = append(errs, e.store.Close())
	}
	return errors.Join(errs...)
}

// enqueue maps td and appends it to the disk queue as one record; the
// spans are acknowledged once it is there.
func (e *chExporter) enqueue(ctx context.Context, td ptrace.Traces) error {
	obs := e.dropInvalid(ctx, mapping.Observations(td, time.Now()))
	if len(obs) == 0 {
		return nil
	}
	buf, _ := e.buffers.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer e.buffers.Put(buf)
	*buf = chstore.AppendObservationRecord((*buf)[:0], obs)
	if err := e.queue.Append(*buf); err != nil {
		// Full or a disk error: the receiver refuses the data and the
		// client retries it.
		return fmt.Errorf("queue %d observations: %w", len(obs), err)
	}
	return nil
}

// consume reads the disk queue in batches and inserts them, consumers at
// a time, until ctx ends, so that the next batch is decoded and sent while
// ClickHouse writes the last one. A batch is committed once ClickHouse has
// it; failures are retried with back-off, so the queue holds the backlog of
// an outage. Memory holds at most consumers+1 batches.
func (e *chExporter) consume(ctx context.Context, cfg *DiskQueueConfig) {
	type read struct {
		batch diskqueue.Batch
		buf   []byte
	}
	reads := make(chan read)
	free := make(chan []byte, cfg.Consumers+1)
	for range cfg.Consumers + 1 {
		free <- nil
	}
	var inserters sync.WaitGroup
	for range cfg.Consumers {
		inserters.Go(func() {
			for r := range reads {
				if !e.insertRecords(ctx, r.batch.Records) {
					return // shutting down: the batch stays queued
				}
				if err := e.queue.Commit(r.batch); err != nil {
					e.logger.Error("Cannot record a delivered batch; it will be inserted again after a restart", zap.Error(err))
				}
				free <- r.buf
			}
		})
	}
	defer func() {
		close(reads)
		inserters.Wait()
	}()
	for {
		var r read
		select {
		case r.buf = <-free:
		case <-ctx.Done():
			return
		}
		var err error
		if r.batch, r.buf, err = e.queue.Read(ctx, r.buf, cfg.BatchBytes, cfg.FlushInterval); err != nil {
			return // the exporter is shutting down
		}
		if r.batch.Corrupt > 0 {
			e.corrupt.Add(ctx, r.batch.Corrupt)
			e.logger.Error("Disk queue data failed its checksum and was skipped", zap.Int64("bytes", r.batch.Corrupt))
		}
		select {
		case reads <- r:
		case <-ctx.Done():
			return
		}
	}
}

// insertRecords inserts records until ClickHouse takes them or ctx ends,
// and reports whether it did. Records whose rows ClickHouse refuses are
// dropped, one by one, so that they do not hold up the rest.
func (e *chExporter) insertRecords(ctx context.Context, records [][]byte) bool {
	for attempt := 0; ; attempt++ {
		err := e.insert(ctx, records)
		switch {
		case err == nil:
			return true
		case chstore.Permanent(err) && len(records) > 1:
			for _, r := range records {
				if !e.insertRecords(ctx, [][]byte{r}) {
					return false
				}
			}
			return true
		case chstore.Permanent(err):
			e.logger.Error("ClickHouse refused a queued record; dropping it", zap.Error(err))
			return true
		}
		e.logger.Info("Insert failed; retrying", zap.Error(err), zap.Int("attempt", attempt+1))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(e.backoff(attempt)):
		}
	}
}

func (e *chExporter) insert(ctx context.Context, records [][]byte) error {
	start := time.Now()
	n, err := e.store.InsertObservationRecords(ctx, records)
	e.duration.Record(ctx, time.Since(start).Seconds())
	switch {
	case err == nil:
		e.rows.Add(ctx, int64(n))
	case chstore.Permanent(err):
		e.failures.Add(ctx, 1, e.permanent)
	default:
		e.failures.Add(ctx, 1, e.retryable)
	}
	return err
}

// backoff is the wait before retry attempt+1: retry_on_failure's initial
// interval, multiplied each time up to its maximum.
func (e *chExporter) backoff(attempt int) time.Duration {
	b := e.cfg.BackOffConfig
	d := float64(b.InitialInterval)
	for range attempt {
		d *= b.Multiplier
		if d >= float64(b.MaxInterval) {
			return b.MaxInterval
		}
	}
	return time.Duration(d)
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
