package workpool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The pool never runs more items than it has workers, claims again as soon
// as one finishes, prunes on start, and Stop waits for what runs.
func TestPoolRunsClaimedItems(t *testing.T) {
	var mu sync.Mutex
	queue := []int{1, 2, 3, 4, 5, 6, 7}
	var done []int
	var running, peak atomic.Int32
	var pruned atomic.Int32
	p := New(Config[int]{
		Name: "items", Workers: 2, PollInterval: time.Hour, Logger: zap.NewNop(), Now: time.Now,
		Claim: func(_ context.Context, n int) ([]int, error) {
			mu.Lock()
			defer mu.Unlock()
			n = min(n, len(queue))
			out := queue[:n]
			queue = queue[n:]
			return out, nil
		},
		Run: func(_ context.Context, item int) {
			if r := running.Add(1); r > peak.Load() {
				peak.Store(r)
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			mu.Lock()
			done = append(done, item)
			mu.Unlock()
		},
		Prune: func(context.Context, time.Time) (int64, error) { pruned.Add(1); return 0, nil },
	})
	assert.False(t, p.Stop(), "stopping a pool never started does nothing")
	p.Start()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == 7
	}, 5*time.Second, 5*time.Millisecond, "finished items wake the dispatcher long before the poll interval")
	assert.True(t, p.Stop())
	assert.False(t, p.Stop(), "a second Stop does nothing")
	assert.LessOrEqual(t, peak.Load(), int32(2), "no more items at once than workers")
	assert.Equal(t, int32(1), pruned.Load(), "pruned once at start, then hourly")
}

// Stop cancels the context of the items in flight and waits for them.
func TestStopCancelsItemsInFlight(t *testing.T) {
	started := make(chan struct{})
	var cancelled atomic.Bool
	claimed := false
	p := New(Config[int]{
		Name: "items", Workers: 1, PollInterval: time.Hour, Logger: zap.NewNop(), Now: time.Now,
		Claim: func(context.Context, int) ([]int, error) {
			if claimed {
				return nil, nil
			}
			claimed = true
			return []int{1}, nil
		},
		Run: func(ctx context.Context, _ int) {
			close(started)
			<-ctx.Done()
			cancelled.Store(true)
		},
		Prune: func(context.Context, time.Time) (int64, error) { return 0, nil },
	})
	p.Start()
	<-started
	p.Stop()
	assert.True(t, cancelled.Load(), "Stop returned only after the item saw its context end")
}
