package apiserver // import "github.com/glassbox-dev/glassbox/apiserver"

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// purger removes the rows of deleted traces and scores in the background, one
// batch per interval: requests only write tombstones, so that a burst of
// deletes never becomes a burst of mutations on tables all tenants share.
type purger struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startPurger(ch *chstore.Store, interval time.Duration, logger *zap.Logger) *purger {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purger{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			st, err := ch.PurgeDeleted(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				logger.Warn("purging deleted traces and scores failed; retrying at the next interval", zap.Error(err))
			case st.Mutations > 0:
				logger.Info("purging deleted traces and scores", zap.Int("traces", st.Traces), zap.Int("scores", st.Scores),
					zap.Int("mutations", st.Mutations))
			}
		}
	}()
	return p
}

func (p *purger) stop() {
	p.cancel()
	<-p.done
}
