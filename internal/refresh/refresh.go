// Package refresh runs the background reloads of the processors' runtime
// settings (project models, sampling rates, evaluator rules) and of the
// authenticator's verdicts, so that the pipeline reads the last loaded
// snapshot and never waits on the store.
package refresh // import "github.com/glassbox-dev/glassbox/internal/refresh"

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultChangePoll bounds how long a change made by another process (an API
// server on the same PostgreSQL) takes to reach a collector.
const DefaultChangePoll = 5 * time.Second

// Kinds of change: what the pipelines cache from the control plane.
const (
	KindModels    = "models"
	KindSampling  = "sampling"
	KindEvalRules = "eval_rules"
	KindAPIKeys   = "api_keys"
)

// Changes is a store that tells of changes: at once for changes made in this
// process, by a counter that a poller reads for changes made elsewhere.
type Changes interface {
	// Changed returns a channel closed at the next change of kind made in
	// this process.
	Changed(kind string) <-chan struct{}
	// ChangeVersion returns kind's change counter, shared by every process.
	ChangeVersion(ctx context.Context, kind string) (int64, error)
}

// Watch makes a loop reload as soon as kind changes rather than only every
// interval.
type Watch struct {
	Changes Changes
	Kind    string
	// Poll is how often the change counter is read; DefaultChangePoll when 0.
	Poll time.Duration
}

// WatchOf watches kind when source (the extension a component loads from)
// tells of changes, and returns nil when it does not.
func WatchOf(source any, kind string) *Watch {
	changes, ok := source.(Changes)
	if !ok {
		return nil
	}
	return &Watch{Changes: changes, Kind: kind}
}

// Loop calls a load function at once and then at every interval, and on
// every change a Watch reports, until Stop.
type Loop struct {
	cancel  context.CancelFunc
	done    chan struct{}
	timeout time.Duration
	// changed is the in-process change channel subscribed before the last
	// completed load: once it is closed, the snapshot is older than a change.
	changed atomic.Pointer[<-chan struct{}]
	// loaded is closed when the load in progress completes.
	loaded atomic.Pointer[chan struct{}]
}

// Start runs load in a goroutine: now, then every interval and, with a
// watch, whenever its kind changes; each call is bounded by timeout. A
// failed load is logged and the previous snapshot stays in use until a later
// load succeeds.
func Start(interval, timeout time.Duration, load func(context.Context) error, logger *zap.Logger, watch *Watch) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{}), timeout: timeout}
	first := make(chan struct{})
	l.loaded.Store(&first)
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		w := newWatcher(watch, timeout, logger)
		defer w.stop()
		for {
			// Subscribed before loading, so that a change during the load
			// brings another one.
			changed := w.subscribe(ctx)
			callCtx, cancelCall := context.WithTimeout(ctx, timeout)
			err := load(callCtx)
			cancelCall()
			if err != nil && ctx.Err() == nil {
				logger.Warn("Refresh failed; keeping the previous settings", zap.Error(err))
			}
			// The subscription is published before the completion, so that
			// a waiter woken by the completion sees the newer one.
			l.changed.Store(&changed)
			next := make(chan struct{})
			close(*l.loaded.Swap(&next))
			if !w.wait(ctx, ticker.C, changed) {
				return
			}
		}
	}()
	return l
}

// Current waits, at most the load timeout, while a change made in this
// process is newer than the loaded snapshot, so that the request after an
// API call sees its effect. Without a pending change it returns at once: it
// costs the pipeline two atomic loads.
func (l *Loop) Current(ctx context.Context) {
	if l == nil || !l.stale() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	for {
		// Read before the check: a load completing in between closes it.
		loaded := l.loaded.Load()
		if !l.stale() {
			return
		}
		select {
		case <-*loaded:
		case <-ctx.Done():
			return
		}
	}
}

// stale reports whether a change made in this process is newer than the
// last completed load.
func (l *Loop) stale() bool {
	changed := l.changed.Load()
	if changed == nil || *changed == nil {
		return false
	}
	select {
	case <-*changed:
		return true
	default:
		return false
	}
}

// watcher follows a Watch; without one it only waits for the ticker.
type watcher struct {
	watch   *Watch
	timeout time.Duration
	logger  *zap.Logger
	poll    *time.Ticker
	version int64
}

func newWatcher(watch *Watch, timeout time.Duration, logger *zap.Logger) *watcher {
	w := &watcher{watch: watch, timeout: timeout, logger: logger}
	if watch != nil {
		every := watch.Poll
		if every <= 0 {
			every = DefaultChangePoll
		}
		w.poll = time.NewTicker(every)
	}
	return w
}

func (w *watcher) stop() {
	if w.poll != nil {
		w.poll.Stop()
	}
}

// subscribe returns the channel of this process's next change and notes the
// shared counter, before a load.
func (w *watcher) subscribe(ctx context.Context) <-chan struct{} {
	if w.watch == nil {
		return nil
	}
	if v, ok := w.readVersion(ctx); ok {
		w.version = v
	}
	return w.watch.Changes.Changed(w.watch.Kind)
}

// wait returns true when it is time to load again, false when ctx ended.
func (w *watcher) wait(ctx context.Context, tick <-chan time.Time, changed <-chan struct{}) bool {
	var poll <-chan time.Time
	if w.poll != nil {
		poll = w.poll.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-changed:
			return true
		case <-poll:
			if v, ok := w.readVersion(ctx); ok && v != w.version {
				return true
			}
		}
	}
}

func (w *watcher) readVersion(ctx context.Context) (int64, bool) {
	callCtx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	v, err := w.watch.Changes.ChangeVersion(callCtx, w.watch.Kind)
	if err != nil {
		if ctx.Err() == nil {
			w.logger.Debug("Reading the change version failed; the full interval still applies", zap.Error(err))
		}
		return 0, false
	}
	return v, true
}

// Stop ends the loop, cancelling a load in progress, and waits for it. It
// is safe on a nil Loop and when repeated.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}
