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

	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/diskqueue"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

const scopeName = "github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"

type chExporter struct {
	cfg    *Config
	logger *zap.Logger

	store *chstore.Store

	// With disk_queue: the queue, its consumer's cancel and end, and the
	// space that enqueue reuses.
	queue    *diskqueue.Queue
	stop     context.CancelFunc
	consumed chan struct{}
	scratch  sync.Pool // *enqueueScratch
	// collecting is held by the consumer whose insert takes the queued
	// records, one at a time (see insertLoop).
	collecting sync.Mutex

	rows      metric.Int64Counter
	invalid   metric.Int64Counter
	failures  metric.Int64Counter
	duration  metric.Float64Histogram
	corrupt   metric.Int64Counter
	priced    metric.Int64Counter
	meter     metric.Meter
	retryable metric.MeasurementOption
	permanent metric.MeasurementOption

	// pricing is set with the pricing option; resultOpt labels its counts.
	pricing   *costing.Service
	resultOpt [costing.NumResults]metric.AddOption
}

func newExporter(cfg *Config, set exporter.Settings) (*chExporter, error) {
	meter := set.MeterProvider.Meter(scopeName)
	rows, err1 := rowsMetric.Int64Counter(meter)
	invalid, err2 := invalidMetric.Int64Counter(meter)
	failures, err3 := failuresMetric.Int64Counter(meter)
	duration, err4 := durationMetric.Float64Histogram(meter)
	corrupt, err5 := corruptMetric.Int64Counter(meter)
	priced, err6 := pricedMetric.Int64Counter(meter)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
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
		priced:    priced,
		retryable: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", true))),
		permanent: metric.WithAttributeSet(attribute.NewSet(attribute.Bool("retryable", false))),
		meter:     meter,
	}
	if p := cfg.Pricing.Get(); p != nil {
		var err error
		if e.pricing, err = costing.NewService(*p, set.Logger); err != nil {
			return nil, err
		}
		for r := costing.ClientCost; r < costing.NumResults; r++ {
			e.resultOpt[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r.String())))
		}
	}
	return e, nil
}

// start takes the store of the glassbox_storage extension that `storage`
// names. That store connects in the background while ClickHouse is not
// there, so start neither fails nor holds up the collector: until it
// connects, pushes fail as retryable, so batches wait in the queue and the
// retry policy delivers them later.
func (e *chExporter) start(_ context.Context, host component.Host) error {
	s, err := storageextension.GetStore(host, e.cfg.Storage, "storage")
	if err != nil {
		return err
	}
	e.store = s
	if e.pricing != nil {
		if err := e.pricing.Start(host); err != nil {
			return err
		}
	}
	dq := e.cfg.DiskQueue.Get()
	if dq == nil {
		return nil
	}
	q, err := diskqueue.Open(dq.Directory, diskqueue.Options{MaxBytes: dq.MaxBytes, Sync: dq.Fsync})
	if err != nil {
		return err
	}
	if _, err := queueBytesMetric.Int64ObservableGauge(e.meter, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(q.Size())
		return nil
	}); err != nil {
		return errors.Join(err, q.Close())
	}
	e.queue = q
	var ctx context.Context
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
	if e.pricing != nil {
		e.pricing.Shutdown()
	}
	// The store is the extension's: it closes it after the pipelines stop.
	return errors.Join(errs...)
}

// enqueueScratch is what enqueue reuses from call to call: the mapped
// observations, which live only until they are encoded, and their record.
type enqueueScratch struct {
	obs    []model.Observation
	record []byte
}

// maxPooledObservations bounds the observation slices kept for reuse, so
// that one large request does not pin its memory.
const maxPooledObservations = 4096

// enqueue maps td and appends it to the disk queue as one record; the
// spans are acknowledged once it is there.
func (e *chExporter) enqueue(ctx context.Context, td ptrace.Traces) error {
	s, _ := e.scratch.Get().(*enqueueScratch)
	if s == nil {
		s = new(enqueueScratch)
	}
	defer func() {
		clear(s.obs) // the observations point into td
		if s.obs = s.obs[:0]; cap(s.obs) <= maxPooledObservations {
			e.scratch.Put(s)
		}
	}()
	now := time.Now()
	s.obs = mapping.AppendObservations(s.obs[:0], td, now)
	obs := e.dropInvalid(ctx, s.obs)
	e.price(ctx, obs, now)
	if len(obs) == 0 {
		return nil
	}
	s.record = chstore.AppendObservationRecord(s.record[:0], obs)
	if err := e.queue.Append(s.record); err != nil {
		// Full or a disk error: the receiver refuses the data and the
		// client retries it.
		return fmt.Errorf("queue %d observations: %w", len(obs), err)
	}
	return nil
}

// consume runs the disk queue's consumers until ctx ends.
func (e *chExporter) consume(ctx context.Context, cfg *DiskQueueConfig) {
	var consumers sync.WaitGroup
	for range cfg.Consumers {
		consumers.Go(func() { e.insertLoop(ctx, cfg) })
	}
	consumers.Wait()
}

// maxBlockGap bounds how long an open insert waits for its next block. While
// ClickHouse 18.16 shuts down, it ends an insert whose client has sent
// nothing for poll_interval (whole seconds, 10 by default), stores the blocks
// it received and reports success: a block sent after a longer pause would be
// lost without an error. An insert that finds nothing queued within the gap
// ends there.
const maxBlockGap = 250 * time.Millisecond

// insertLoop delivers the queue's records in inserts that each collect
// flush_interval of traffic, from their first block: it sends each batch as
// one block as soon as batch_bytes are queued (or what is queued after
// maxBlockGap or at the end of the interval), so that ClickHouse writes one
// part per interval while the collector holds one batch. One consumer
// collects at a time, so the parts do not shrink with more consumers or less
// traffic (an insert that ended whenever the queue was momentarily empty
// made ClickHouse write several small parts a second at half load, and merge
// them again); the others meanwhile wait for ClickHouse to write their part.
// The batches are committed once the insert succeeded.
func (e *chExporter) insertLoop(ctx context.Context, cfg *DiskQueueConfig) {
	var buf []byte
	read := func(b diskqueue.Batch, next []byte, err error) (diskqueue.Batch, error) {
		buf = next
		if b.Corrupt > 0 {
			e.corrupt.Add(ctx, b.Corrupt)
			e.logger.Error("Disk queue data failed its checksum and was skipped", zap.Int64("bytes", b.Corrupt))
		}
		return b, err
	}
	for {
		e.collecting.Lock()
		collecting := true
		stopCollecting := func() {
			if collecting {
				collecting = false
				e.collecting.Unlock()
			}
		}
		first, err := read(e.queue.Read(ctx, buf, cfg.BatchBytes))
		if err != nil {
			stopCollecting()
			return // the exporter is shutting down
		}
		window := []diskqueue.Batch{first}
		var deadline time.Time
		err = e.insertWindow(ctx, first, func() (diskqueue.Batch, bool) {
			if deadline.IsZero() {
				// The interval starts once the insert is open and has its
				// first block: a ClickHouse slow to answer makes a larger
				// part, not two.
				deadline = time.Now().Add(cfg.FlushInterval)
			} else if !time.Now().Before(deadline) {
				stopCollecting()
				return diskqueue.Batch{}, false
			}
			due := deadline
			if gap := time.Now().Add(maxBlockGap); gap.Before(due) {
				due = gap
			}
			b, err := read(e.queue.ReadBy(ctx, buf, cfg.BatchBytes, due))
			if err != nil || (len(b.Records) == 0 && b.Corrupt == 0) {
				stopCollecting() // stopping, or nothing came by the deadline
				return b, false
			}
			window = append(window, b) // committed with the rest, skipped data too
			return b, true
		})
		stopCollecting()
		if err != nil && !e.retryWindow(ctx, window, err, &buf) {
			return
		}
		for _, b := range window {
			if err := e.queue.Commit(b); err != nil {
				e.logger.Error("Cannot record a delivered batch; it will be inserted again after a restart", zap.Error(err))
			}
		}
	}
}

// insertWindow sends first and then the batches more returns, as blocks of
// one insert.
func (e *chExporter) insertWindow(ctx context.Context, first diskqueue.Batch, more func() (diskqueue.Batch, bool)) error {
	began := time.Now()
	ins, err := e.store.BeginObservationInsert(ctx)
	if err != nil {
		return e.count(ctx, err)
	}
	defer ins.Close()
	b, ok := first, true
	for ; ok; b, ok = more() {
		if err := ins.Add(b.Records); err != nil {
			return e.count(ctx, err)
		}
	}
	n, err := ins.Send()
	if err != nil {
		return e.count(ctx, err)
	}
	e.duration.Record(ctx, time.Since(began).Seconds())
	e.rows.Add(ctx, int64(n))
	return nil
}

// retryWindow delivers the batches of a failed insert again, read back from
// the queue, until ClickHouse takes them or ctx ends, and reports whether it
// did. When ClickHouse refuses rows, the records go one by one and only
// those it refuses are dropped.
func (e *chExporter) retryWindow(ctx context.Context, window []diskqueue.Batch, err error, buf *[]byte) bool {
	for attempt := 0; ; attempt++ {
		if chstore.Permanent(err) {
			return e.insertEachRecord(ctx, window, buf)
		}
		e.logger.Info("Insert failed; retrying", zap.Error(err), zap.Int("attempt", attempt+1))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(e.backoff(attempt)):
		}
		i := 0
		var reread error
		err = e.insertWindow(ctx, diskqueue.Batch{}, func() (diskqueue.Batch, bool) {
			if i == len(window) || reread != nil {
				return diskqueue.Batch{}, false
			}
			var b diskqueue.Batch
			b, *buf, reread = e.queue.Reread(window[i], *buf)
			i++
			return b, reread == nil
		})
		if reread != nil {
			return false // the queue is closing: the window stays queued
		}
		if err == nil {
			return true
		}
	}
}

// insertEachRecord inserts the window's records one at a time, dropping
// those ClickHouse refuses, and reports whether it got through before ctx
// ended.
func (e *chExporter) insertEachRecord(ctx context.Context, window []diskqueue.Batch, buf *[]byte) bool {
	for _, w := range window {
		var b diskqueue.Batch
		var err error
		if b, *buf, err = e.queue.Reread(w, *buf); err != nil {
			return false
		}
		for _, rec := range b.Records {
			for attempt := 0; ; attempt++ {
				err := e.insertWindow(ctx, diskqueue.Batch{Records: [][]byte{rec}}, func() (diskqueue.Batch, bool) { return diskqueue.Batch{}, false })
				if err == nil {
					break
				}
				if chstore.Permanent(err) {
					e.logger.Error("ClickHouse refused a queued record; dropping it", zap.Error(err))
					break
				}
				select {
				case <-ctx.Done():
					return false
				case <-time.After(e.backoff(attempt)):
				}
			}
		}
	}
	return true
}

// count records a failed insert by whether it can be retried.
func (e *chExporter) count(ctx context.Context, err error) error {
	if chstore.Permanent(err) {
		e.failures.Add(ctx, 1, e.permanent)
	} else {
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
	now := time.Now()
	obs := mapping.Observations(td, now)
	obs = e.dropInvalid(ctx, obs)
	e.price(ctx, obs, now)
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

// price fills in the cost of the observations that name a model, with the
// pricing option. Each observation is complete, so an estimate reads its own
// input and output.
func (e *chExporter) price(ctx context.Context, obs []model.Observation, now time.Time) {
	if e.pricing == nil {
		return
	}
	e.pricing.Current(ctx)
	var counts [costing.NumResults]int64
	for i := range obs {
		counts[e.pricing.Apply(&obs[i], now, nil)]++
	}
	for r := costing.ClientCost; r < costing.NumResults; r++ {
		if counts[r] > 0 {
			e.priced.Add(ctx, counts[r], e.resultOpt[r])
		}
	}
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
