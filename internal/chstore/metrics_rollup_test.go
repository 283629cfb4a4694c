package chstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// rollupShapedQuery draws an observations query the daily rollups can
// answer (or, with hourly buckets, one they cannot), over windows of one to
// four days so that whole days fall inside.
func rollupShapedQuery(r *rand.Rand, start time.Time) chstore.MetricsQuery {
	q := chstore.MetricsQuery{View: chstore.ViewObservations}
	for _, d := range []string{"name", "type", "environment", "providedModelName"} {
		if r.IntN(3) == 0 && len(q.Dimensions) < 2 {
			q.Dimensions = append(q.Dimensions, d)
		}
	}
	aggs := []string{"sum", "avg", "min", "max", "count"}
	measures := map[string][]string{"count": {"count"}, "latency": aggs, "totalTokens": aggs, "inputTokens": {"sum", "max"}, "totalCost": aggs}
	names := []string{"count", "inputTokens", "latency", "totalCost", "totalTokens"}
	for range 1 + r.IntN(3) {
		m := pick(r, names)
		metric := chstore.Metric{Measure: m, Aggregation: pick(r, measures[m])}
		if !slices.Contains(q.Metrics, metric) {
			q.Metrics = append(q.Metrics, metric)
		}
	}
	for range r.IntN(3) {
		switch r.IntN(3) {
		case 0:
			q.Filters = append(q.Filters, chstore.Filter{Column: "name", Type: "string", Operator: pick(r, []string{"=", "contains"}), Value: pick(r, propNames)})
		case 1:
			q.Filters = append(q.Filters, chstore.Filter{Column: "providedModelName", Type: "stringOptions", Operator: pick(r, []string{"any of", "none of"}), Value: []any{pick(r, propModels)}})
		default:
			q.Filters = append(q.Filters, chstore.Filter{Column: "environment", Type: "stringOptions", Operator: "any of", Value: []any{pick(r, propEnvs)}})
		}
	}
	q.From = start.Add(time.Duration(r.Int64N(int64(30 * time.Hour)))).Truncate(time.Second)
	if r.IntN(3) == 0 {
		q.From = q.From.Truncate(24 * time.Hour) // day-aligned: no raw edge
	}
	q.To = q.From.Add(20*time.Hour + time.Duration(r.Int64N(int64(80*time.Hour)))).Truncate(time.Second)
	switch r.IntN(3) {
	case 0:
		q.To = q.To.Truncate(24 * time.Hour) // ends at midnight
	case 1:
		q.To = q.To.Truncate(time.Hour)
	}
	if !q.To.After(q.From) {
		q.To = q.From.Add(24 * time.Hour)
	}
	q.Granularity = pick(r, []string{"", "day", "day", "hour"})
	return q
}

// TestMetricsRollupsMatchAPlainComputation checks that the answers stay
// those of a plain computation over the deduplicated, live, retained rows
// when closed days are read from the daily rollups: right after they are
// rolled up, after late spans and duplicates arrive for a rolled-up day,
// after a trace is deleted and under a retention, each before and after
// the background job catches up.
func TestMetricsRollupsMatchAPlainComputation(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 2))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	start := today.AddDate(0, 0, -5)
	ref := propData(t, s, r, start)
	view := propViews()[0]
	require.Equal(t, chstore.ViewObservations, view.name)

	check := func(phase string) (rolledDays int) {
		t.Helper()
		for i := range 40 {
			q := rollupShapedQuery(r, start)
			got, err := s.Metrics(ctx, "p1", q)
			context := fmt.Sprintf("seed %d, %s, query %d: %+v", seed, phase, i, q)
			require.NoError(t, err, context)
			keys := slices.Clone(q.Dimensions)
			if q.Granularity != "" {
				keys = append(keys, chstore.TimeDimensionKey)
			}
			for _, m := range q.Metrics {
				keys = append(keys, m.Key())
			}
			requireSameAnswer(t, sortAnswer(refAnswer(view, q, ref), keys), sortAnswer(got, keys), context)
			n, err := s.RollupDaysRead(ctx, "p1", q.From, q.To)
			require.NoError(t, err)
			rolledDays += n
		}
		return rolledDays
	}
	dayRead := func(day time.Time) int {
		t.Helper()
		n, err := s.RollupDaysRead(ctx, "p1", day, day.AddDate(0, 0, 1))
		require.NoError(t, err)
		return n
	}
	refresh := func() chstore.RollupStats {
		t.Helper()
		st, err := s.RefreshRollups(ctx, 0)
		require.NoError(t, err)
		return st
	}

	require.Zero(t, check("before the first rollup"), "nothing is rolled up yet")
	st := refresh()
	require.Positive(t, st.Days)
	require.Zero(t, st.Skipped)
	require.Positive(t, check("rolled up"), "whole closed days are read from the rollups")
	require.Equal(t, chstore.RollupStats{}, refresh(), "nothing changed, nothing to roll up")

	// Late data for a rolled-up day: a new trace, and a span stored again.
	lateDay := start.AddDate(0, 0, 1)
	require.Equal(t, 1, dayRead(lateDay))
	late := []model.Observation{{
		ProjectID: "p1", TraceID: "late-trace", ID: "late-1", Type: model.TypeGeneration, Name: "llm", Model: "gpt-4o",
		StartTime: lateDay.Add(5 * time.Hour).UnixMicro(), EndTime: lateDay.Add(5*time.Hour + 1500*time.Millisecond).UnixMicro(),
		Level: model.LevelDefault, Environment: "production", Metadata: `{"team":"red"}`, TraceMetadata: "{}", SampleRate: 1, IsRoot: true,
		UsageDetails: map[string]int64{"input": 700, "output": 300, "total": 1000}, CostDetails: map[string]float64{"input": 0.0007, "output": 0.0006},
	}}
	stored, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "p1", From: lateDay.UnixMicro(), To: lateDay.AddDate(0, 0, 1).UnixMicro(), Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, stored.Observations)
	require.NoError(t, s.InsertObservations(ctx, append(late, late[0], stored.Observations[0].Observation)))
	ref.add(late, nil)
	require.Zero(t, dayRead(lateDay), "a day with late rows is read raw until it is rolled up again")
	check("late data, before the job")
	st = refresh()
	require.Equal(t, 1, st.Days)
	require.Equal(t, 1, dayRead(lateDay))
	check("late data, rolled up")

	// A deleted trace leaves at once, and again once its day is rolled up.
	victim := ref.observations[0].values["traceId"].(string)
	victimDay := ref.observations[0].at.Truncate(24 * time.Hour)
	require.NoError(t, s.DeleteTraces(ctx, "p1", []string{victim}))
	ref.observations = slices.DeleteFunc(ref.observations, func(row refRow) bool { return row.values["traceId"] == victim })
	require.Zero(t, dayRead(victimDay))
	check("deleted, before the job")
	require.Positive(t, refresh().Days)
	require.Equal(t, 1, dayRead(victimDay))
	check("deleted, rolled up")

	// A retention hides the older days from both paths.
	s.SetRetention(map[string]int{"p1": 3})
	cutoff := time.Now().AddDate(0, 0, -3)
	ref.observations = slices.DeleteFunc(ref.observations, func(row refRow) bool { return row.at.Before(cutoff) })
	require.Zero(t, dayRead(start), "a day past the retention is not read from its rollup")
	check("retention")
	s.SetRetention(nil)
}

// TestRollupJobPrunesSupersededGenerations checks that a day rolled up
// again leaves its older rows until they outnumber the current ones, and
// that the job then deletes them without touching what reads use.
func TestRollupJobPrunesSupersededGenerations(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2)
	span := func(id string, at time.Time) model.Observation {
		return model.Observation{ProjectID: "p1", TraceID: "t-" + id, ID: id, Type: model.TypeGeneration, Name: "llm", Model: "gpt-4o",
			StartTime: at.UnixMicro(), EndTime: at.Add(time.Second).UnixMicro(), Level: model.LevelDefault, Environment: "production",
			Metadata: "{}", TraceMetadata: "{}", SampleRate: 1, IsRoot: true, CostDetails: map[string]float64{"input": 0.5}}
	}
	require.NoError(t, s.InsertObservations(ctx, []model.Observation{span("a", day.Add(time.Hour)), span("b", day.Add(2*time.Hour))}))
	_, err := s.RefreshRollups(ctx, 0)
	require.NoError(t, err)
	current, superseded, err := s.RollupRows(ctx)
	require.NoError(t, err)
	require.Equal(t, [2]uint64{2, 0}, [2]uint64{current, superseded}, "one row per hour")

	// A late span: the day is rolled up again. The first generation's
	// rows, now as many as the current ones, stay while a query that chose
	// them may still read them, and go after.
	require.NoError(t, s.InsertObservations(ctx, []model.Observation{span("c", day.Add(90*time.Minute))}))
	st, err := s.RefreshRollups(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, st.Days)
	_, superseded, err = s.RollupRows(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(2), superseded, "within the grace period")
	defer chstore.SetRollupPruneGrace(0)()
	time.Sleep(1100 * time.Millisecond) // computed_at has whole seconds
	_, err = s.RefreshRollups(ctx, 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		current, superseded, err = s.RollupRows(ctx)
		require.NoError(t, err)
		return superseded == 0
	}, 30*time.Second, 200*time.Millisecond, "the superseded rows are deleted")
	require.Equal(t, uint64(2), current)

	rows, err := s.Metrics(ctx, "p1", chstore.MetricsQuery{View: chstore.ViewObservations, Granularity: "day",
		Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}, {Measure: "totalCost", Aggregation: "sum"}},
		From:    day, To: day.AddDate(0, 0, 1)})
	require.NoError(t, err)
	n, err := s.RollupDaysRead(ctx, "p1", day, day.AddDate(0, 0, 1))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []map[string]any{{chstore.TimeDimensionKey: day.Format(time.RFC3339), "count_count": "3", "sum_totalCost": 1.5}}, rows)

	// A raw edge without rows (00:30 to 01:00) takes no part in a minimum.
	rows, err = s.Metrics(ctx, "p1", chstore.MetricsQuery{View: chstore.ViewObservations,
		Metrics: []chstore.Metric{{Measure: "totalCost", Aggregation: "min"}, {Measure: "latency", Aggregation: "max"}},
		From:    day.Add(30 * time.Minute), To: day.AddDate(0, 0, 1)})
	require.NoError(t, err)
	require.Equal(t, []map[string]any{{"min_totalCost": 0.5, "max_latency": 1000.0}}, rows)
}
