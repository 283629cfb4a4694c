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
// On its own interval it also deletes what the projects' retention has
// expired.
type purger struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Retentions lists the projects' retention in days; the control plane
// implements it.
type Retentions interface {
	ProjectRetentions(ctx context.Context) (map[string]int, error)
}

func startPurger(ch *chstore.Store, projects Retentions, cfg ClickHouseConfig, logger *zap.Logger) *purger {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purger{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(cfg.PurgeInterval)
		defer ticker.Stop()
		retention := time.NewTicker(cfg.RetentionInterval)
		defer retention.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-retention.C:
				expire(ctx, ch, projects, time.Now(), logger)
				continue
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

// expire deletes every project's data older than its retention.
func expire(ctx context.Context, ch *chstore.Store, projects Retentions, now time.Time, logger *zap.Logger) {
	days, err := projects.ProjectRetentions(ctx)
	if err != nil {
		logger.Warn("reading the projects' retention failed; retrying at the next interval", zap.Error(err))
		return
	}
	cutoffs := make(map[string]time.Time, len(days))
	for project, d := range days {
		cutoffs[project] = now.AddDate(0, 0, -d)
	}
	n, err := ch.ExpireBefore(ctx, cutoffs)
	switch {
	case err != nil && ctx.Err() == nil:
		logger.Warn("deleting data past its retention failed; retrying at the next interval", zap.Error(err))
	case n > 0:
		logger.Info("deleting data past its retention", zap.Int("projects", len(cutoffs)), zap.Int("mutations", n))
	}
}

func (p *purger) stop() {
	p.cancel()
	<-p.done
}
