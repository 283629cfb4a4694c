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

func TestSearchScores(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	traceA, traceB := "aaaa456789abcdef0123456789abcdef", "bbbb456789abcdef0123456789abcdef"
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", traceA, base)))
	obsB := traceOf("proj", traceB, base)
	for i := range obsB {
		obsB[i].UserID, obsB[i].Tags = "", []string{"x"}
	}
	require.NoError(t, s.InsertObservations(ctx, obsB))

	scores := []chstore.Score{
		{ProjectID: "proj", ID: "s1", Timestamp: base, Name: "accuracy", Value: 0.9, DataType: chstore.ScoreNumeric,
			Source: chstore.SourceAPI, TraceID: traceA, Environment: "production", QueueID: "q1"},
		{ProjectID: "proj", ID: "s2", Timestamp: base + second, Name: "accuracy", Value: 0.2, DataType: chstore.ScoreNumeric,
			Source: chstore.SourceEval, TraceID: traceB, Environment: "default"},
		{ProjectID: "proj", ID: "s3", Timestamp: base + 2*second, Name: "tone", StringValue: "polite", DataType: chstore.ScoreCategorical,
			Source: chstore.SourceAPI, SessionID: "session-1", Environment: "default"},
		{ProjectID: "other", ID: "s4", Timestamp: base, Name: "accuracy", Value: 1, DataType: chstore.ScoreNumeric,
			Source: chstore.SourceAPI, TraceID: traceA, Environment: "default"},
	}
	require.NoError(t, s.InsertScores(ctx, scores))

	ids := func(q chstore.ScoreSearch) []string {
		t.Helper()
		q.ProjectID = "proj"
		got, total, err := s.SearchScores(ctx, q)
		require.NoError(t, err)
		out := []string{}
		for _, sc := range got {
			out = append(out, sc.ID)
		}
		assert.Equal(t, len(out), total)
		return out
	}
	assert.Equal(t, []string{"s3", "s2", "s1"}, ids(chstore.ScoreSearch{}))
	assert.Equal(t, []string{"s3", "s1"}, ids(chstore.ScoreSearch{IDs: []string{"s1", "s3", "s4"}}))
	assert.Equal(t, []string{"s1"}, ids(chstore.ScoreSearch{QueueID: "q1"}))
	assert.Equal(t, []string{"s1"}, ids(chstore.ScoreSearch{Operator: ">", Value: 0.5, ScoreFilter: chstore.ScoreFilter{Name: "accuracy"}}))
	assert.Equal(t, []string{"s2"}, ids(chstore.ScoreSearch{Operator: "<=", Value: 0.2, ScoreFilter: chstore.ScoreFilter{Name: "accuracy"}}))
	assert.Equal(t, []string{"s1"}, ids(chstore.ScoreSearch{UserID: "user-1"}))
	assert.Equal(t, []string{"s2"}, ids(chstore.ScoreSearch{TraceTags: []string{"x"}}))
	assert.Empty(t, ids(chstore.ScoreSearch{TraceTags: []string{"x", "y"}}))
	assert.Equal(t, []string{"s3"}, ids(chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{SessionID: "session-1"}}))
	assert.Equal(t, []string{"s2"}, ids(chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{Source: chstore.SourceEval}}))
	assert.Equal(t, []string{"s2", "s1"}, ids(chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{From: base, To: base + 2*second}}))

	_, _, err := s.SearchScores(ctx, chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: "proj"}, Operator: "; DROP"})
	assert.ErrorIs(t, err, chstore.ErrInvalid)
	_, _, err = s.SearchScores(ctx, chstore.ScoreSearch{})
	assert.ErrorIs(t, err, chstore.ErrInvalid)

	// A rewritten score is judged by its newest version.
	updated := scores[0]
	updated.Value = 0.1
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{updated}))
	assert.Empty(t, ids(chstore.ScoreSearch{Operator: ">", Value: 0.5, ScoreFilter: chstore.ScoreFilter{Name: "accuracy"}}))
	got, err := s.GetScore(ctx, "proj", "s1")
	require.NoError(t, err)
	assert.Equal(t, 0.1, got.Value)
	assert.Equal(t, "q1", got.QueueID)
	assert.Positive(t, got.StoredAt)
}

func TestGetAndDeleteScore(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	sc := chstore.Score{ProjectID: "proj", ID: "s1", Timestamp: base, Name: "n", Value: 1, DataType: chstore.ScoreBoolean,
		StringValue: "True", Source: chstore.SourceAPI, DatasetRunID: "run-1", Comment: "ok", Metadata: `{"k":"v"}`}
	keep := sc
	keep.ID = "s2"
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{sc, keep}))

	got, err := s.GetScore(ctx, "proj", "s1")
	require.NoError(t, err)
	assert.Equal(t, "run-1", got.DatasetRunID)
	assert.Equal(t, `{"k":"v"}`, got.Metadata)
	assert.Equal(t, "True", got.StringValue)

	_, err = s.GetScore(ctx, "other", "s1")
	assert.ErrorIs(t, err, chstore.ErrNotFound, "another project does not see the score")
	assert.ErrorIs(t, s.DeleteScore(ctx, "other", "s1"), chstore.ErrNotFound, "nor delete it")
	assert.ErrorIs(t, s.DeleteScore(ctx, "proj", "missing"), chstore.ErrNotFound)

	// Project other's score with the same id stays when proj's goes.
	foreign := sc
	foreign.ProjectID = "other"
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{foreign}))

	require.NoError(t, s.DeleteScore(ctx, "proj", "s1"))
	_, err = s.GetScore(ctx, "proj", "s1")
	assert.ErrorIs(t, err, chstore.ErrNotFound, "hidden at once")
	listed, total, err := s.ListScores(ctx, chstore.ScoreFilter{ProjectID: "proj"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	require.Len(t, listed, 1)
	assert.Equal(t, "s2", listed[0].ID, "other scores stay")
	assert.ErrorIs(t, s.DeleteScore(ctx, "proj", "s1"), chstore.ErrNotFound, "a deleted score cannot be deleted again")
	_, err = s.GetScore(ctx, "other", "s1")
	assert.NoError(t, err, "the same id in another project stays")

	// The purge removes the stored rows; reads never depended on it.
	purged, err := s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, chstore.PurgeStats{Scores: 1, Mutations: 1}, purged)
	require.Eventually(t, func() bool {
		n, err := s.StoredScoreRows(ctx, "proj", "s1")
		require.NoError(t, err)
		return n == 0
	}, 30*time.Second, 100*time.Millisecond, "the mutation removes the score")

	// Writing the id again after the deletion stores a score that shows.
	sc.Value = 0
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{sc}))
	got, err = s.GetScore(ctx, "proj", "s1")
	require.NoError(t, err)
	assert.Zero(t, got.Value)
}
