package evaltapprocessor // import "github.com/glassbox-dev/glassbox/processor/evaltapprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/refresh"
)

const scopeName = "github.com/glassbox-dev/glassbox/processor/evaltapprocessor"

// Job results counted in otelcol_processor_glassbox_evaltap_jobs.
const (
	resultBuffered = "buffered" // offered and taken into the buffer
	resultDropped  = "dropped"  // offered while the buffer was full
	resultWritten  = "written"  // written to the job queue
	resultFailed   = "failed"   // lost after every write attempt failed
)

// Source is what the source extension serves.
type Source interface {
	evaljobs.RuleSource
	evaljobs.Enqueuer
}

// tap offers a job for every arriving trace or observation that an active
// rule of its project selects. Spans pass on untouched; jobs go through a
// bounded buffer to a writer goroutine, so neither a slow job queue nor a
// full buffer ever holds up the pipeline.
type tap struct {
	cfg    *Config
	logger *zap.Logger
	now    func() time.Time
	// retryPause is the first pause between write attempts; it doubles.
	retryPause time.Duration

	rules  atomic.Pointer[map[string][]evaljobs.Rule] // by project id
	recent *recentSet
	jobs   chan evaljobs.Job

	counter   metric.Int64Counter
	resultOpt map[string]metric.AddOption

	loop     *refresh.Loop
	stop     chan struct{}
	done     chan struct{}
	flushCtx context.Context // set before stop closes
}

func newTap(cfg *Config, set processor.Settings) (*tap, error) {
	counter, err := jobsMetric.Int64Counter(set.MeterProvider.Meter(scopeName))
	if err != nil {
		return nil, err
	}
	t := &tap{
		cfg:        cfg,
		logger:     set.Logger,
		now:        time.Now,
		retryPause: time.Second,
		recent:     newRecentSet(cfg.DedupeCacheSize),
		jobs:       make(chan evaljobs.Job, cfg.QueueSize),
		counter:    counter,
		resultOpt:  map[string]metric.AddOption{},
	}
	for _, r := range []string{resultBuffered, resultDropped, resultWritten, resultFailed} {
		t.resultOpt[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r)))
	}
	t.rules.Store(&map[string][]evaljobs.Rule{})
	return t, nil
}

// start finds the source extension, loads the rules in the background and
// starts the writer.
func (t *tap) start(_ context.Context, host component.Host) error {
	ext, ok := host.GetExtensions()[t.cfg.Source]
	if !ok {
		return fmt.Errorf("source extension %q is not configured", t.cfg.Source)
	}
	source, ok := ext.(Source)
	if !ok {
		return fmt.Errorf("extension %q does not serve evaluator rules", t.cfg.Source)
	}
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.write(source, t.stop) //nolint:gosec // the writer lives as long as the processor, not a request
	t.loop = refresh.Start(t.cfg.RefreshInterval, t.cfg.RefreshTimeout, func(ctx context.Context) error {
		rules, err := source.ActiveEvalRules(ctx)
		if err != nil {
			return fmt.Errorf("load evaluator rules: %w", err)
		}
		t.setRules(rules)
		return nil
	}, t.logger, refresh.WatchOf(ext, refresh.KindEvalRules))
	return nil
}

// setRules installs a snapshot; rules whose filter does not validate are
// skipped, so one bad rule does not stop the others.
func (t *tap) setRules(rules []evaljobs.Rule) {
	byProject := map[string][]evaljobs.Rule{}
	for _, r := range rules {
		if err := errors.Join(evaljobs.CheckTarget(r.Target), r.Filter.Validate(r.Target)); err != nil {
			t.logger.Warn("Skipping an invalid evaluator rule", zap.String("rule", r.ID), zap.Error(err))
			continue
		}
		byProject[r.ProjectID] = append(byProject[r.ProjectID], r)
	}
	t.rules.Store(&byProject)
}

// shutdown stops the reloads, writes what is buffered within ctx, and
// stops the writer. It is safe without start and when repeated.
func (t *tap) shutdown(ctx context.Context) error {
	t.loop.Stop()
	t.loop = nil
	if t.stop == nil {
		return nil
	}
	t.flushCtx = ctx
	close(t.stop)
	t.stop = nil
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush evaluation jobs: %w", ctx.Err())
	}
}

func (t *tap) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	t.loop.Current(ctx)
	rules := *t.rules.Load()
	if len(rules) == 0 {
		return td, nil
	}
	now := t.now()
	counts := map[string]int64{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		v, ok := rs.Resource().Attributes().Get(model.ProjectIDAttribute)
		if !ok {
			continue
		}
		projectRules := rules[v.Str()]
		if len(projectRules) == 0 {
			continue
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				o := mapping.FromSpan(rs.Resource(), ss.Scope(), spans.At(k), now)
				for r := range projectRules {
					rule := &projectRules[r]
					if rule.Selects(&o) {
						counts[t.offer(rule.JobFor(&o, now))]++
					}
				}
			}
		}
	}
	t.count(ctx, counts)
	return td, nil
}

// offer hands a job to the writer unless the same rule and target were
// offered recently; it never blocks. The result is "" for a repeat.
func (t *tap) offer(j evaljobs.Job) string {
	key := j.RuleID + "\x00" + j.TraceID + "\x00" + j.ObservationID
	if t.recent.contains(key) {
		return ""
	}
	select {
	case t.jobs <- j:
		t.recent.add(key)
		return resultBuffered
	default:
		// Not remembered: a later span of the target may find room.
		return resultDropped
	}
}

func (t *tap) count(ctx context.Context, counts map[string]int64) {
	for result, n := range counts {
		if result != "" && n > 0 {
			t.counter.Add(ctx, n, t.resultOpt[result])
		}
	}
}

// write batches buffered jobs to the job queue until stop, then writes
// what is left within the shutdown deadline.
func (t *tap) write(q evaljobs.Enqueuer, stop <-chan struct{}) {
	defer close(t.done)
	ticker := time.NewTicker(t.cfg.FlushInterval)
	defer ticker.Stop()
	batch := make([]evaljobs.Job, 0, t.cfg.BatchSize)
	for {
		select {
		case j := <-t.jobs:
			if batch = append(batch, j); len(batch) < t.cfg.BatchSize {
				continue
			}
		case <-ticker.C:
			if len(batch) == 0 {
				continue
			}
		case <-stop:
		drain:
			for {
				select {
				case j := <-t.jobs:
					batch = append(batch, j)
				default:
					break drain
				}
			}
			for len(batch) > 0 {
				n := min(len(batch), t.cfg.BatchSize)
				t.send(t.flushCtx, q, batch[:n], 1, nil)
				batch = batch[n:]
			}
			return
		}
		t.send(context.Background(), q, batch, t.cfg.EnqueueAttempts, stop)
		batch = batch[:0]
	}
}

// send writes one batch, trying up to attempts times with a growing pause
// that stop cuts short.
func (t *tap) send(ctx context.Context, q evaljobs.Enqueuer, batch []evaljobs.Job, attempts int, stop <-chan struct{}) {
	var err error
	pause := t.retryPause
	for attempt := 1; attempt <= attempts; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, t.cfg.EnqueueTimeout)
		err = q.EnqueueEvalJobs(callCtx, batch)
		cancel()
		if err == nil {
			t.counter.Add(ctx, int64(len(batch)), t.resultOpt[resultWritten])
			return
		}
		if attempt == attempts {
			break
		}
		select {
		case <-stop:
			attempts = attempt
		case <-time.After(pause):
			pause *= 2
		}
	}
	t.counter.Add(context.Background(), int64(len(batch)), t.resultOpt[resultFailed])
	t.logger.Warn("Evaluation jobs were lost: the job queue did not take them",
		zap.Int("jobs", len(batch)), zap.Int("attempts", attempts), zap.Error(err))
}

// recentSet remembers the last n keys added, forgetting the oldest first.
type recentSet struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

func newRecentSet(n int) *recentSet {
	return &recentSet{set: make(map[string]struct{}, n), ring: make([]string, n)}
}

func (r *recentSet) contains(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[key]
	return ok
}

func (r *recentSet) add(key string) {
	if len(r.ring) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[key]; ok {
		return
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = key
	r.set[key] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}
