package apitest // import "github.com/glassbox-dev/glassbox/apiserver/internal/apitest"

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// Base is when fixture traces start: a fixed instant keeps answers reproducible.
var Base = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// Obs is an observation of a project's trace that starts offset after Base
// and lasts a second; tests set the fields they look at.
func Obs(projectID, traceID, id string, offset time.Duration) model.Observation {
	start := Base.Add(offset).UnixMicro()
	return model.Observation{
		ProjectID:     projectID,
		TraceID:       traceID,
		ID:            id,
		Type:          model.TypeSpan,
		Name:          "span " + id,
		StartTime:     start,
		EndTime:       start + int64(time.Second/time.Microsecond),
		Level:         model.LevelDefault,
		Metadata:      "{}",
		Environment:   "default",
		TraceMetadata: "{}",
		SampleRate:    1,
	}
}

// Insert stores observations, failing the test on error.
func Insert(t testing.TB, s *chstore.Store, obs ...model.Observation) {
	t.Helper()
	require.NoError(t, s.InsertObservations(context.Background(), obs))
}

// InsertScores stores scores, failing the test on error.
func InsertScores(t testing.TB, s *chstore.Store, scores ...chstore.Score) {
	t.Helper()
	require.NoError(t, s.InsertScores(context.Background(), scores))
}
