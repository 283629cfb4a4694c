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

// Every dimension, measure with each aggregation it takes, and filter of
// every type on every field compiles into SQL that ClickHouse runs.
func TestEveryMetricsFieldRuns(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", "0123456789abcdef0123456789abcdef", base)))
	to := time.UnixMicro(base).Add(24 * time.Hour)
	from := to.Add(-48 * time.Hour)
	queries := chstore.EveryMetricsQuery()
	require.Greater(t, len(queries), 300)
	for _, q := range queries {
		q.From, q.To = from, to
		_, err := s.Metrics(ctx, "proj", q)
		assert.NoError(t, err, "%+v", q)
	}
}

// A query that would read more rows than metrics_max_rows_to_read is refused
// as the caller's to narrow, not run to the end.
func TestMetricsRowsToReadBound(t *testing.T) {
	cfg := chtest.Config(t)
	ctx := context.Background()
	s, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", "0123456789abcdef0123456789abcdef", base)))
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", "fedcba9876543210fedcba9876543210", base)))
	q := chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}},
		From: time.UnixMicro(base).Add(-time.Hour), To: time.UnixMicro(base).Add(time.Hour)}
	rows, err := s.Metrics(ctx, "proj", q)
	require.NoError(t, err)
	require.Len(t, rows, 1)

	cfg.MetricsMaxRowsToRead = 2
	bounded, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bounded.Close() })
	_, err = bounded.Metrics(ctx, "proj", q)
	require.ErrorIs(t, err, chstore.ErrInvalid)
	assert.Contains(t, err.Error(), "would read more than 2 rows")
}
