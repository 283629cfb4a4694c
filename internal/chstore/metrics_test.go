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
