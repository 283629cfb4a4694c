package controlplane

import (
	"context"
	"fmt"
	"sync"

	"github.com/glassbox-dev/glassbox/internal/refresh"
)

// Kinds of change that running pipelines reload: what the processors and
// the authenticator cache from the control plane.
const (
	ChangeModels    = refresh.KindModels
	ChangeSampling  = refresh.KindSampling
	ChangeEvalRules = refresh.KindEvalRules
	ChangeAPIKeys   = refresh.KindAPIKeys
	// ChangeRetention is a change of a project's or an organization's
	// retention, which the API servers' reads apply at once.
	ChangeRetention = "retention"
)

var _ refresh.Changes = (*Store)(nil)

// changeFeed tells this process's subscribers of a change at once: each
// Changed channel is closed by the next change of its kind.
type changeFeed struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

// Changed returns a channel that is closed at the next change of kind made
// through this store. Other processes' changes show in ChangeVersion.
func (s *Store) Changed(kind string) <-chan struct{} {
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.waiting == nil {
		s.feed.waiting = map[string]chan struct{}{}
	}
	ch, ok := s.feed.waiting[kind]
	if !ok {
		ch = make(chan struct{})
		s.feed.waiting[kind] = ch
	}
	return ch
}

// ChangeVersion returns kind's change counter, which every process sharing
// the database bumps: one small read that tells a poller whether to reload.
func (s *Store) ChangeVersion(ctx context.Context, kind string) (int64, error) {
	var v int64
	if err := s.conn().queryRow(ctx, `SELECT version FROM change_versions WHERE kind = ?`, kind).Scan(&v); err != nil {
		return 0, fmt.Errorf("read change version of %s: %w", kind, err)
	}
	return v, nil
}

// changedIf records a change of kinds when the write's err is nil, and
// returns err.
func (s *Store) changedIf(ctx context.Context, err error, kinds ...string) error {
	if err == nil {
		s.changed(ctx, kinds...)
	}
	return err
}

// changed records a committed change of kinds: it bumps their counters for
// other processes and wakes this process's subscribers. A failed bump is
// not the write's failure: pollers still reload at their full interval.
func (s *Store) changed(ctx context.Context, kinds ...string) {
	for _, kind := range kinds {
		_, _ = s.conn().exec(context.WithoutCancel(ctx), `UPDATE change_versions SET version = version + 1 WHERE kind = ?`, kind)
		s.feed.mu.Lock()
		if ch, ok := s.feed.waiting[kind]; ok {
			close(ch)
			delete(s.feed.waiting, kind)
		}
		s.feed.mu.Unlock()
	}
}
