package refresh

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLoopLoadsAtOnceAndRepeatedly(t *testing.T) {
	var calls atomic.Int32
	l := Start(10*time.Millisecond, time.Second, func(context.Context) error {
		calls.Add(1)
		return nil
	}, zap.NewNop(), nil)
	require.Eventually(t, func() bool { return calls.Load() >= 3 }, 5*time.Second, time.Millisecond)
	l.Stop()
	n := calls.Load()
	time.Sleep(30 * time.Millisecond)
	assert.Equal(t, n, calls.Load(), "no load after Stop")
	l.Stop()
	(*Loop)(nil).Stop()
}

func TestLoopLogsFailures(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := Start(time.Hour, time.Hour, func(context.Context) error {
		return errors.New("store down")
	}, zap.New(core), nil)
	defer l.Stop()
	require.Eventually(t, func() bool { return logs.Len() == 1 }, 5*time.Second, time.Millisecond)
	assert.Contains(t, logs.All()[0].ContextMap()["error"], "store down")
}

func TestStopCancelsALoadInProgress(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	running := make(chan struct{})
	var cancelled atomic.Bool
	l := Start(time.Hour, time.Hour, func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		cancelled.Store(true)
		return ctx.Err()
	}, zap.New(core), nil)
	<-running
	l.Stop()
	assert.True(t, cancelled.Load())
	assert.Zero(t, logs.Len(), "a load cancelled by Stop is not a failure")
}

// fakeChanges is a store whose changes the test makes: in this process
// (notify) or in another one (bump the counter only).
type fakeChanges struct {
	mu      sync.Mutex
	ch      chan struct{}
	version atomic.Int64
}

func (f *fakeChanges) Changed(string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

func (f *fakeChanges) ChangeVersion(context.Context, string) (int64, error) {
	return f.version.Load(), nil
}

func (f *fakeChanges) notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
}

// A change in this process reloads at once; one made elsewhere within the
// poll; neither waits for the (here: hour-long) interval.
func TestWatchReloadsOnChange(t *testing.T) {
	changes := &fakeChanges{}
	loads := make(chan struct{}, 10)
	l := Start(time.Hour, time.Second, func(context.Context) error {
		loads <- struct{}{}
		return nil
	}, zap.NewNop(), &Watch{Changes: changes, Kind: "models", Poll: 20 * time.Millisecond})
	defer l.Stop()
	<-loads // the first load

	changes.notify()
	select {
	case <-loads:
	case <-time.After(5 * time.Second):
		t.Fatal("a change in this process did not reload")
	}

	changes.version.Add(1)
	select {
	case <-loads:
	case <-time.After(5 * time.Second):
		t.Fatal("a change in another process did not reload within the poll")
	}

	// Nothing changed: no reload.
	select {
	case <-loads:
		t.Fatal("reloaded without a change")
	case <-time.After(100 * time.Millisecond):
	}
}

// After a change in this process, Current returns only once a load that
// began after the change has completed, however slow the load; without a
// pending change it returns at once.
func TestCurrentWaitsForTheLoadAfterAChange(t *testing.T) {
	changes := &fakeChanges{}
	var value atomic.Int32
	release := make(chan struct{})
	l := Start(time.Hour, 10*time.Second, func(ctx context.Context) error {
		n := value.Load()
		if n > 0 {
			select { // the loads after the first wait for the test
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		value.Store(n + 1)
		return nil
	}, zap.NewNop(), &Watch{Changes: changes, Kind: "models", Poll: time.Hour})
	defer l.Stop()
	require.Eventually(t, func() bool { return value.Load() == 1 }, 5*time.Second, time.Millisecond)

	start := time.Now()
	l.Current(context.Background())
	assert.Less(t, time.Since(start), 50*time.Millisecond, "nothing pending: no wait")

	changes.notify()
	done := make(chan struct{})
	go func() {
		l.Current(context.Background())
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Current returned before the load after the change")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Current did not return after the load")
	}
	assert.Equal(t, int32(2), value.Load())
	(*Loop)(nil).Current(context.Background())
}
