package apiserver // import "github.com/glassbox-dev/glassbox/apiserver"

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// retentionRefresh bounds how long another process's retention change takes
// to reach this server's reads; a change made through this server reaches
// them at once.
const retentionRefresh = 30 * time.Second

// purger removes the rows of deleted traces and scores in the background, one
// batch per interval: requests only write tombstones, so that a burst of
// deletes never becomes a burst of mutations on tables all tenants share.
// It keeps the reads' retention windows current and, on its own interval,
// deletes what the projects' retention has expired. Beside it, a second
// loop keeps the daily metrics rollups current.
type purger struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Retentions is what the purger reads from the control plane.
type Retentions interface {
	// ProjectRetentions lists the projects' effective retention in days.
	ProjectRetentions(ctx context.Context, instanceDefault int) (map[string]int, error)
	// Changed is closed at the next retention change made in this process.
	Changed(kind string) <-chan struct{}
	// ExpireMedia deletes the media records of a project created before
	// cutoff and returns their ids, whose files the caller removes.
	ExpireMedia(ctx context.Context, projectID string, cutoff time.Time) ([]string, error)
}

// MediaFiles removes stored media bytes.
type MediaFiles interface {
	Remove(projectID, mediaID string) error
}

func startPurger(ch *chstore.Store, projects Retentions, files MediaFiles, cfg Maintenance, logger *zap.Logger) *purger {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purger{cancel: cancel}
	loadRetention := func() map[string]int {
		days, err := projects.ProjectRetentions(ctx, cfg.DefaultRetentionDays)
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("reading the projects' retention failed; keeping the last known", zap.Error(err))
			}
			return nil
		}
		ch.SetRetention(days)
		return days
	}
	loadRetention()
	p.done.Add(2)
	go func() {
		defer p.done.Done()
		rollUp(ctx, ch, cfg.RollupInterval, logger)
	}()
	go func() {
		defer p.done.Done()
		ticker := time.NewTicker(cfg.PurgeInterval)
		defer ticker.Stop()
		retention := time.NewTicker(cfg.RetentionInterval)
		defer retention.Stop()
		refresh := time.NewTicker(retentionRefresh)
		defer refresh.Stop()
		for {
			changed := projects.Changed(controlplane.ChangeRetention)
			select {
			case <-ctx.Done():
				return
			case <-changed:
				loadRetention()
				continue
			case <-refresh.C:
				loadRetention()
				continue
			case <-retention.C:
				if days := loadRetention(); days != nil {
					expire(ctx, ch, projects, files, days, time.Now(), logger)
				}
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

// expire deletes every project's data and media older than its retention.
func expire(ctx context.Context, ch *chstore.Store, projects Retentions, files MediaFiles, days map[string]int, now time.Time, logger *zap.Logger) {
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
	for project, cutoff := range cutoffs {
		ids, err := projects.ExpireMedia(ctx, project, cutoff)
		if err != nil {
			logger.Warn("deleting media past its retention failed; retrying at the next interval", zap.String("project", project), zap.Error(err))
			continue
		}
		for _, id := range ids {
			if err := files.Remove(project, id); err != nil {
				logger.Warn("removing an expired media file failed", zap.String("project", project), zap.String("media", id), zap.Error(err))
			}
		}
	}
}

func (p *purger) stop() {
	p.cancel()
	p.done.Wait()
}

// rollupDaysPerRun bounds one run of the rollup job, so that a first
// backfill of a large store is spread over several intervals.
const rollupDaysPerRun = 200

// rollUp brings the metrics and score rollups up to date at start and then
// every interval, until ctx ends.
func rollUp(ctx context.Context, ch *chstore.Store, interval time.Duration, logger *zap.Logger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		st, err := ch.RefreshRollups(ctx, rollupDaysPerRun)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("updating the metrics rollups failed; retrying at the next interval", zap.Error(err))
		case st.Days > 0 || st.Skipped > 0 || st.ScoreDays > 0 || st.ScoreSkipped > 0:
			logger.Debug("updated the metrics rollups", zap.Int("days", st.Days), zap.Int("skipped", st.Skipped),
				zap.Int("score_days", st.ScoreDays), zap.Int("score_skipped", st.ScoreSkipped))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
