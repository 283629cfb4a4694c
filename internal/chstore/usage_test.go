package chstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// Usage counts traces, observations and scores per project and month, and
// a row stored twice once.
func TestUsageByMonth(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	nov := time.Date(2025, 11, 20, 12, 0, 0, 0, time.UTC).UnixMicro()
	dec := time.Date(2025, 12, 2, 12, 0, 0, 0, time.UTC).UnixMicro()
	require.NoError(t, s.InsertObservations(ctx, traceOf("pa", "aaaa0000000000000000000000000001", nov)))
	require.NoError(t, s.InsertObservations(ctx, traceOf("pa", "aaaa0000000000000000000000000001", nov)), "a retry")
	require.NoError(t, s.InsertObservations(ctx, traceOf("pa", "aaaa0000000000000000000000000002", dec)))
	require.NoError(t, s.InsertObservations(ctx, traceOf("pb", "bbbb0000000000000000000000000001", dec)))
	sc := score("pa", "s-1", "aaaa0000000000000000000000000002")
	sc.Timestamp = dec
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{sc}))

	usage, err := s.Usage(ctx, []string{"pa"}, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Len(t, usage, 2, "pb is not asked for")
	assert.Equal(t, chstore.MonthUsage{ProjectID: "pa", Month: time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC), Traces: 1, Observations: 3}, usage[0])
	assert.Equal(t, chstore.MonthUsage{ProjectID: "pa", Month: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), Traces: 1, Observations: 3, Scores: 1}, usage[1])
	assert.EqualValues(t, 5, usage[1].Units())

	usage, err = s.Usage(ctx, []string{"pa", "pb"}, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Len(t, usage, 2, "November is before the window")
}
