package refresh

import (
	"context"
	"errors"
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
	}, zap.NewNop())
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
	}, zap.New(core))
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
	}, zap.New(core))
	<-running
	l.Stop()
	assert.True(t, cancelled.Load())
	assert.Zero(t, logs.Len(), "a load cancelled by Stop is not a failure")
}
