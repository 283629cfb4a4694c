package chstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func scoreIDs(scores []chstore.Score) []string {
	out := []string{}
	for _, sc := range scores {
		out = append(out, sc.ID)
	}
	return out
}

func TestTraceScores(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	traceA, traceB, traceC := "a0a00000000000000000000000000000", "b0b00000000000000000000000000000", "c0c00000000000000000000000000000"
	require.NoError(t, s.InsertObservations(ctx, append(traceOf("proj", traceA, base), traceOf("proj", traceB, base)...)))
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", traceC, base)))
	day := 24 * 60 * 60 * second

	first := score("proj", "a-first", traceA)
	late := score("proj", "a-late", traceA) // an observation's score, weeks later in another month
	late.ObservationID, late.Timestamp = "a0a0gen", base+40*day
	moved := score("proj", "a-moved", traceA)
	moved.Timestamp = base + second
	other := score("proj", "b-only", traceB)
	foreign := score("other", "a-foreign", traceA)
	session := chstore.Score{ProjectID: "proj", ID: "session", Timestamp: base, Name: "n", Value: 1, DataType: chstore.ScoreNumeric,
		Source: chstore.SourceAPI, SessionID: "session-1"}
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{first, late, moved, other, foreign, session}))
	// Rewritten with a later timestamp two days on: read once, as written last.
	moved.Timestamp, moved.Value = base+2*day, 0.1
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{moved}))

	got, err := s.TraceScores(ctx, "proj", traceA)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-first", "a-moved", "a-late"}, scoreIDs(got), "every score of the trace, oldest first")
	assert.Equal(t, 0.1, got[1].Value)
	assert.Equal(t, "a0a0gen", got[2].ObservationID)
	got, err = s.TraceScores(ctx, "other", traceA)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-foreign"}, scoreIDs(got))
	got, err = s.TraceScores(ctx, "proj", traceC)
	require.NoError(t, err)
	assert.Empty(t, got)

	byTrace, err := s.TraceScoreIDs(ctx, "proj", []string{traceA, traceB, traceC})
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{traceA: {"a-first", "a-moved", "a-late"}, traceB: {"b-only"}}, byTrace)

	// Deleted scores and the scores of deleted traces disappear at once.
	require.NoError(t, s.DeleteScore(ctx, "proj", "a-first"))
	require.NoError(t, s.DeleteTraces(ctx, "proj", []string{traceB}))
	got, err = s.TraceScores(ctx, "proj", traceA)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-moved", "a-late"}, scoreIDs(got))
	byTrace, err = s.TraceScoreIDs(ctx, "proj", []string{traceA, traceB})
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{traceA: {"a-moved", "a-late"}}, byTrace)
	got, err = s.TraceScores(ctx, "proj", traceB)
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = s.TraceScores(ctx, "", traceA)
	assert.ErrorIs(t, err, chstore.ErrInvalid)
	_, err = s.TraceScoreIDs(ctx, "", []string{traceA})
	assert.ErrorIs(t, err, chstore.ErrInvalid)
	byTrace, err = s.TraceScoreIDs(ctx, "proj", nil)
	require.NoError(t, err)
	assert.Empty(t, byTrace)
}

// Scores stored before the trace index existed are found once the schema
// is migrated.
func TestTraceScoresIndexBackfill(t *testing.T) {
	cfg := chtest.Config(t)
	ctx := context.Background()
	s, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.MigrateTo(ctx, 2))
	trace := "bacf0000000000000000000000000000"
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", trace, base)))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("proj", "old", trace)}))

	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("proj", "new", trace)}))
	got, err := s.TraceScores(ctx, "proj", trace)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"old", "new"}, scoreIDs(got))
}
