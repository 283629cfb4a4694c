// Package workpool runs leased work from a durable queue in the control
// plane: a dispatcher claims as many due items as there are idle workers,
// runs each on its own goroutine, claims again as soon as one finishes or
// the poll interval passes, and prunes the finished items every hour. The
// evaluation workers and the automation deliveries share it.
package workpool // import "github.com/glassbox-dev/glassbox/internal/workpool"

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// pruneInterval is how often finished items past their retention are deleted.
const pruneInterval = time.Hour

// Config is what a pool runs.
type Config[T any] struct {
	// Name names the items in logs, e.g. "evaluation jobs".
	Name         string
	Workers      int
	PollInterval time.Duration
	// Claim leases up to n due items.
	Claim func(ctx context.Context, n int) ([]T, error)
	// Run handles one item and records its outcome; ctx ends at Stop.
	Run func(ctx context.Context, item T)
	// Prune deletes the finished items that now puts past their retention.
	Prune  func(ctx context.Context, now time.Time) (int64, error)
	Now    func() time.Time
	Logger *zap.Logger
}

// Pool runs a Config until Stop.
type Pool[T any] struct {
	cfg      Config[T]
	inflight atomic.Int32
	wake     chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New returns a pool that is not running yet.
func New[T any](cfg Config[T]) *Pool[T] {
	return &Pool[T]{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Start runs the dispatcher in the background.
func (p *Pool[T]) Start() {
	ctx, cancel := context.WithCancel(context.Background()) //nolint:gosec // Stop calls it
	p.cancel = cancel
	p.wg.Add(1)
	go p.dispatch(ctx)
}

// Stop cancels the items in flight and waits for them. It reports whether
// the pool was running; stopping again, or without Start, does nothing.
func (p *Pool[T]) Stop() bool {
	if p.cancel == nil {
		return false
	}
	p.cancel()
	p.wg.Wait()
	p.cancel = nil
	return true
}

func (p *Pool[T]) dispatch(ctx context.Context) {
	defer p.wg.Done()
	lastPrune := time.Time{}
	for {
		if now := p.cfg.Now(); now.Sub(lastPrune) >= pruneInterval {
			lastPrune = now
			if n, err := p.cfg.Prune(ctx, now); err != nil && ctx.Err() == nil {
				p.cfg.Logger.Warn("Pruning finished "+p.cfg.Name+" failed", zap.Error(err))
			} else if n > 0 {
				p.cfg.Logger.Debug("Pruned finished "+p.cfg.Name, zap.Int64("count", n))
			}
		}
		p.claim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-time.After(p.cfg.PollInterval):
		}
	}
}

// claim leases as many due items as there are idle workers and starts them.
func (p *Pool[T]) claim(ctx context.Context) {
	free := p.cfg.Workers - int(p.inflight.Load())
	if free <= 0 {
		return
	}
	items, err := p.cfg.Claim(ctx, free)
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("Claiming "+p.cfg.Name+" failed", zap.Error(err))
		}
		return
	}
	for _, item := range items {
		p.inflight.Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.cfg.Run(ctx, item)
			p.inflight.Add(-1)
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}()
	}
}
