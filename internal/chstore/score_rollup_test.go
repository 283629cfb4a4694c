package chstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// TestScoreRollupsMatchTheRawPath checks that the trace list's score
// filters answer as the raw path does when closed days are read from the
// score rollups: right after the job, after a late score, a rewritten
// score (on its day, moved to another closed day, moved to today), a
// deleted score, under a retention, and with another project's scores on
// the same traces, each before and after the job catches up.
func TestScoreRollupsMatchTheRawPath(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 7))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	start := today.AddDate(0, 0, -5)
	now := time.Now().UTC()

	type trace struct {
		id string
		at time.Time
	}
	var (
		traces []trace
		spans  []model.Observation
		scores []chstore.Score
	)
	score := func(project, id, traceID, obsID, name string, at time.Time, value float64, label string) chstore.Score {
		sc := chstore.Score{ProjectID: project, ID: id, TraceID: traceID, ObservationID: obsID, Timestamp: at.UnixMicro(), Name: name,
			Value: value, DataType: chstore.ScoreNumeric, Source: chstore.SourceEval, Environment: "production", Metadata: "{}"}
		if label != "" {
			sc.DataType, sc.StringValue = chstore.ScoreCategorical, label
		}
		return sc
	}
	round := func(v float64) float64 { return math.Round(v*100) / 100 }
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i)*150*time.Minute + time.Duration(r.IntN(3600))*time.Second)
		if at.After(now.Add(-time.Minute)) {
			break
		}
		tr := trace{id: fmt.Sprintf("t%03d", i), at: at}
		traces = append(traces, tr)
		for _, project := range []string{"p1", "p2"} {
			spans = append(spans, model.Observation{ProjectID: project, TraceID: tr.id, ID: tr.id + "-root", Type: model.TypeSpan, Name: "root",
				StartTime: at.UnixMicro(), EndTime: at.Add(time.Second).UnixMicro(), Level: model.LevelDefault, Environment: "production",
				Metadata: "{}", TraceMetadata: "{}", SampleRate: 1, IsRoot: true})
		}
		scores = append(scores, score("p1", tr.id+"-q", tr.id, "", "quality", at, round(r.Float64()), ""))
		// The other project's score of the same name on the same trace.
		scores = append(scores, score("p2", tr.id+"-q", tr.id, "", "quality", at, round(r.Float64()), ""))
		if i%3 == 0 { // a second score, on the observation, a day later at most
			scores = append(scores, score("p1", tr.id+"-q2", tr.id, tr.id+"-root", "quality", earlier(at.Add(time.Duration(r.IntN(24))*time.Hour), now), round(r.Float64()), ""))
		}
		scores = append(scores, score("p1", tr.id+"-l", tr.id, "", "label", at, 0, pick(r, []string{"good", "bad", "meh"})))
	}
	require.NoError(t, s.InsertObservations(ctx, spans))
	require.NoError(t, s.InsertScores(ctx, scores))
	// p1Quality is a trace score of p1 named quality on the day k days
	// after start.
	p1Quality := func(k int) chstore.Score {
		for _, sc := range scores {
			at := time.UnixMicro(sc.Timestamp).UTC()
			if sc.ProjectID == "p1" && sc.Name == "quality" && sc.ObservationID == "" && at.Truncate(24*time.Hour).Equal(start.AddDate(0, 0, k)) {
				return sc
			}
		}
		t.Fatalf("no score on day %d", k)
		return chstore.Score{}
	}

	filters := func() [][]chstore.Filter {
		return [][]chstore.Filter{
			{{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: ">", Value: 0.5}},
			{{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: "<=", Value: round(r.Float64())}},
			{{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: "=", Value: scores[0].Value}},
			{{Column: "score_categories", Type: "categoryOptions", Key: "label", Operator: "any of", Value: []any{"good"}}},
			{{Column: "score_categories", Type: "categoryOptions", Key: "label", Operator: "none of", Value: []any{"bad", "meh"}}},
			{
				{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: ">=", Value: 0.2},
				{Column: "score_categories", Type: "categoryOptions", Key: "label", Operator: "any of", Value: []any{"meh", "good"}},
			},
		}
	}
	check := func(phase string) {
		t.Helper()
		for i, fs := range filters() {
			f := chstore.TraceFilter{ProjectID: "p1", From: start.Add(-time.Hour).UnixMicro(), To: now.Add(time.Hour).UnixMicro(), Limit: 200, Filters: fs}
			context := fmt.Sprintf("seed %d, %s, filter set %d: %+v", seed, phase, i, fs)
			want, wantTotal, err := s.ListTracesRaw(ctx, f)
			require.NoError(t, err, context)
			got, total, err := s.ListTraces(ctx, f)
			require.NoError(t, err, context)
			require.Equal(t, wantTotal, total, context)
			require.Equal(t, traceIDs(want), traceIDs(got), context)
		}
	}
	daysRead := func() int {
		t.Helper()
		n, err := s.ScoreRollupDaysRead(ctx, "p1", "quality")
		require.NoError(t, err)
		return n
	}
	refresh := func() chstore.RollupStats {
		t.Helper()
		st, err := s.RefreshRollups(ctx, 0)
		require.NoError(t, err)
		return st
	}
	// A filter set that some traces pass and some do not, so that a wrong
	// answer shows.
	_, total, err := s.ListTracesRaw(ctx, chstore.TraceFilter{ProjectID: "p1", Filters: filters()[0], Limit: 1})
	require.NoError(t, err)
	require.Positive(t, total)
	require.Less(t, total, len(traces))

	require.Zero(t, daysRead(), "nothing is rolled up yet")
	check("before the first rollup")
	st := refresh()
	require.GreaterOrEqual(t, st.ScoreDays, 5, "the closed days of both projects")
	require.Equal(t, 5, daysRead(), "the closed days")
	check("rolled up")
	require.Zero(t, refresh().ScoreDays, "nothing changed, nothing to roll up")

	// A late score on a closed day: that day is read raw until the job.
	late := traces[3]
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("p1", "late-q", late.id, "", "quality", late.at, 0.99, "")}))
	require.Equal(t, 4, daysRead())
	check("late score")
	require.Equal(t, 1, refresh().ScoreDays)
	require.Equal(t, 5, daysRead())
	check("late score, rolled up")

	// A score on a later closed day for a trace rolled up with one score:
	// the older day's row, marked single when it was rolled up, must be
	// averaged with the new one, which flips the trace out of "> 0.5".
	var lone trace
	for i, tr := range traces {
		if i%3 == 0 || i == 3 || !tr.at.Before(start.AddDate(0, 0, 1)) {
			continue
		}
		for _, sc := range scores {
			if sc.ProjectID == "p1" && sc.ID == tr.id+"-q" && sc.Value > 0.5 {
				lone = tr
			}
		}
		if lone.id != "" {
			break
		}
	}
	require.NotEmpty(t, lone.id, "a trace of day 0 with one quality score above 0.5")
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("p1", lone.id+"-later", lone.id, "", "quality", start.AddDate(0, 0, 4).Add(time.Hour), 0, "")}))
	check("score on a later day")
	refresh()
	check("score on a later day, rolled up")

	// A score rewritten on its day.
	rewritten := p1Quality(0)
	rewritten.Value = 1 - rewritten.Value
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{rewritten}))
	require.Equal(t, 4, daysRead())
	check("rewritten score")
	// A background merge folds the two versions and so changes the day's
	// fingerprint once more; folding them now, before the job, keeps the
	// days counted below from depending on when it comes.
	require.NoError(t, s.MergeScores(ctx))
	check("rewritten score, merged")
	refresh()
	check("rewritten score, rolled up")

	// A deleted score: every day of the project is read raw until the job.
	victim := p1Quality(2)
	require.NoError(t, s.DeleteScore(ctx, "p1", victim.ID))
	require.Zero(t, daysRead())
	check("deleted score")
	require.Positive(t, refresh().ScoreDays)
	require.Equal(t, 5, daysRead())
	check("deleted score, rolled up")

	// A score rewritten to another closed day: both days' rollups would
	// pick a version, so both are read raw, also after the job.
	moved := p1Quality(1)
	moved.Timestamp = today.Add(-time.Hour).UnixMicro()
	moved.Value = 1 - moved.Value
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{moved}))
	check("score moved to another closed day")
	refresh()
	require.Equal(t, 3, daysRead(), "the two days of the moved score are read raw")
	check("score moved to another closed day, rolled up")

	// A retention hides the older days from both paths; the day it starts
	// in is read raw.
	s.SetRetention(map[string]int{"p1": 3})
	require.Equal(t, 1, daysRead(), "of the two closed days wholly retained, the moved score's is read raw")
	check("retention")
	s.SetRetention(nil)

	// A score rewritten to today: today is read raw, and so is the day
	// that holds its older version.
	movedToday := p1Quality(3)
	movedToday.Timestamp = earlier(today.Add(time.Minute), now).UnixMicro()
	movedToday.Value = 1 - movedToday.Value
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{movedToday}))
	refresh()
	require.Equal(t, 2, daysRead(), "days 0 and 2; 1 and 4 hold a moved score, 3 one moved to today")
	check("score moved to today")

	// The other project's rollups are untouched by all of it.
	n, err := s.ScoreRollupDaysRead(ctx, "p2", "quality")
	require.NoError(t, err)
	require.Equal(t, 5, n)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
