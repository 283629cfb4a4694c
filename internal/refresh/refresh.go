// Package refresh runs the background reloads of the processors' runtime
// settings (project models, sampling rates), so that the pipeline reads the
// last loaded snapshot and never waits on the store.
package refresh // import "github.com/glassbox-dev/glassbox/internal/refresh"

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Loop calls a load function at once and then at every interval until Stop.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs load in a goroutine: now, then every interval, each call
// bounded by timeout. A failed load is logged and the previous snapshot
// stays in use until a later load succeeds.
func Start(interval, timeout time.Duration, load func(context.Context) error, logger *zap.Logger) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			callCtx, cancelCall := context.WithTimeout(ctx, timeout)
			err := load(callCtx)
			cancelCall()
			if err != nil && ctx.Err() == nil {
				logger.Warn("Refresh failed; keeping the previous settings", zap.Error(err))
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return l
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
