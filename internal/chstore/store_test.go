package chstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// base is 2025-11-13 02:13:20 UTC in Unix µs.
const base = int64(1763000000) * 1e6

const second = int64(1e6)

// traceOf builds a root span with two children: a generation with usage and
// cost, and a tool span that sets trace-level attributes late.
func traceOf(project, trace string, start int64) []model.Observation {
	root := model.Observation{
		ProjectID: project, TraceID: trace, ID: trace[:4] + "root", Type: model.TypeSpan, Name: "handle-request",
		StartTime: start, EndTime: start + 3*second, Level: model.LevelDefault,
		Input: `{"q":"hi"}`, Output: `"hello"`, Metadata: `{"step":"root"}`,
		Environment: "production", Release: "r1", Version: "v1",
		TraceName: "chat", UserID: "user-1", SessionID: "session-1", Tags: []string{"b", "a"},
		TraceMetadata: `{"team":"x","tier":"free"}`, TraceInput: `{"q":"hi"}`, TraceOutput: `"hello"`,
		IsRoot: true, ServiceName: "svc", ScopeName: "langfuse-sdk", ScopeVersion: "3.0.0", SampleRate: 1,
	}
	gen := model.Observation{
		ProjectID: project, TraceID: trace, ID: trace[:4] + "gen", ParentID: root.ID, Type: model.TypeGeneration, Name: "llm",
		StartTime: start + second, EndTime: start + 2*second, CompletionStartTime: start + second + 200_000,
		Level: model.LevelDefault, Input: `[{"role":"user","content":"hi"}]`, Output: `{"role":"assistant","content":"hello"}`,
		Metadata: "{}", Model: "gpt-4o", ModelParameters: `{"temperature":0}`,
		UsageDetails: map[string]int64{"input": 10, "output": 5, "total": 15},
		CostDetails:  map[string]float64{"input": 0.001, "output": 0.002, "total": 0.003},
		PromptName:   "greeting", PromptVersion: 2, Environment: "production", Tags: []string{"c"},
		TraceMetadata: "{}", SampleRate: 1,
	}
	tool := model.Observation{
		ProjectID: project, TraceID: trace, ID: trace[:4] + "tool", ParentID: root.ID, Type: model.TypeTool, Name: "search",
		StartTime: start + 2*second, EndTime: start + 4*second, Level: model.LevelWarning, StatusMessage: "slow",
		Metadata: "{}", Environment: "production", UserID: "user-2", Public: true,
		TraceMetadata: `{"tier":"pro"}`, CostDetails: map[string]float64{"input": 0.5, "output": 0.25}, SampleRate: 1,
	}
	return []model.Observation{root, gen, tool}
}

func TestInsertAndGetTrace(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	obs := traceOf("proj", "0123456789abcdef0123456789abcdef", base)
	require.NoError(t, s.InsertObservations(ctx, obs))

	got, err := s.GetTrace(ctx, "proj", "0123456789abcdef0123456789abcdef")
	require.NoError(t, err)
	tr := got.Trace
	assert.Equal(t, "proj", tr.ProjectID)
	assert.Equal(t, base, tr.Timestamp)
	assert.Equal(t, "chat", tr.Name)
	assert.Equal(t, "user-2", tr.UserID, "the newest span's user id wins")
	assert.Equal(t, "session-1", tr.SessionID)
	assert.Equal(t, "r1", tr.Release)
	assert.Equal(t, "v1", tr.Version)
	assert.Equal(t, "production", tr.Environment)
	assert.Equal(t, []string{"a", "b", "c"}, tr.Tags)
	assert.True(t, tr.Public)
	assert.JSONEq(t, `{"team":"x","tier":"pro"}`, tr.Metadata)
	assert.Equal(t, `{"q":"hi"}`, tr.Input)
	assert.Equal(t, `"hello"`, tr.Output)
	assert.InDelta(t, 4.0, tr.LatencySeconds, 1e-9)
	assert.InDelta(t, 0.753, tr.TotalCost, 1e-9, "generation total plus the tool's summed parts")
	assert.Equal(t, []string{"0123root", "0123gen", "0123tool"}, tr.ObservationIDs)
	assert.Positive(t, tr.CreatedAt)
	assert.GreaterOrEqual(t, tr.UpdatedAt, tr.CreatedAt)

	require.Len(t, got.Observations, 3)
	for i, o := range got.Observations {
		assert.Positive(t, o.StoredAt)
		want := obs[i]
		if want.UsageDetails == nil {
			want.UsageDetails = map[string]int64{}
		}
		if want.CostDetails == nil {
			want.CostDetails = map[string]float64{}
		}
		if want.Tags == nil {
			want.Tags = []string{}
		}
		assert.Equal(t, want, o.Observation)
	}

	_, err = s.GetTrace(ctx, "proj", "ffffffffffffffffffffffffffffffff")
	require.ErrorIs(t, err, chstore.ErrNotFound)
}

func TestTraceNameFallsBackToRootSpan(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	obs := traceOf("proj", "aaaa0000000000000000000000000000", base)
	obs[0].TraceName = ""
	require.NoError(t, s.InsertObservations(ctx, obs))
	got, err := s.GetTrace(ctx, "proj", "aaaa0000000000000000000000000000")
	require.NoError(t, err)
	assert.Equal(t, "handle-request", got.Name)
}

// A root span's input and output that stand for its trace's are stored once;
// a root stored before that, with its own copy, reads the same way.
func TestATraceInputTakenFromTheRootIsStoredOnce(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	const flagged, unflagged = "cccc0000000000000000000000000000", "dddd0000000000000000000000000000"
	obs := traceOf("proj", flagged, base)
	require.NoError(t, s.InsertObservations(ctx, obs))
	require.NoError(t, s.InsertUnflaggedRoot(ctx, "proj", unflagged, "old-root", base+second, `{"q":"older"}`, `"reply"`))

	in, out, err := s.StoredText(ctx, "proj", flagged, obs[0].ID)
	require.NoError(t, err)
	assert.Empty(t, in+out, "written once, as the trace's input and output")
	in, _, err = s.StoredText(ctx, "proj", flagged, obs[1].ID)
	require.NoError(t, err)
	assert.Equal(t, obs[1].Input, in, "a child keeps its own input")
	in, _, err = s.StoredText(ctx, "proj", unflagged, "old-root")
	require.NoError(t, err)
	assert.Equal(t, `{"q":"older"}`, in)

	for trace, want := range map[string][2]string{flagged: {`{"q":"hi"}`, `"hello"`}, unflagged: {`{"q":"older"}`, `"reply"`}} {
		got, err := s.GetTrace(ctx, "proj", trace)
		require.NoError(t, err)
		assert.Equal(t, want, [2]string{got.Input, got.Output}, trace)
		root := got.Observations[0]
		assert.Equal(t, want, [2]string{root.Input, root.Output}, trace)
		assert.Equal(t, want, [2]string{root.TraceInput, root.TraceOutput}, trace)
		page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", TraceID: trace, Page: 1, Limit: 10})
		require.NoError(t, err)
		for _, o := range page.Observations {
			if o.IsRoot {
				assert.Equal(t, want, [2]string{o.Input, o.Output}, trace)
			}
		}
	}
	for text, want := range map[string][]string{`"q":"hi"`: {flagged}, `reply`: {unflagged}, `"q":"`: {unflagged, flagged}} {
		list, _, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj", Filters: []chstore.Filter{
			{Column: "inputOutput", Type: "string", Operator: "contains", Value: text}}})
		require.NoError(t, err)
		var ids []string
		for _, tr := range list {
			ids = append(ids, tr.ID)
			assert.NotEmpty(t, tr.Input, tr.ID)
		}
		assert.Equal(t, want, ids, text)
	}
}

func TestDuplicateInsertsReadOnce(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	obs := traceOf("proj", "dddd0000000000000000000000000000", base)
	require.NoError(t, s.InsertObservations(ctx, obs))
	require.NoError(t, s.InsertObservations(ctx, obs))
	require.NoError(t, s.InsertObservations(ctx, obs[1:2]))

	got, err := s.GetTrace(ctx, "proj", "dddd0000000000000000000000000000")
	require.NoError(t, err)
	assert.Len(t, got.Observations, 3)
	assert.Len(t, got.ObservationIDs, 3)
	assert.InDelta(t, 0.753, got.TotalCost, 1e-9)

	traces, total, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	require.Len(t, traces, 1)
	assert.InDelta(t, 0.753, traces[0].TotalCost, 1e-9)

	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
	assert.Len(t, page.Observations, 3)

	sess, err := s.GetSession(ctx, "proj", "session-1")
	require.NoError(t, err)
	assert.Equal(t, []string{"dddd0000000000000000000000000000"}, sess.TraceIDs)
}

func TestDeleteTracesHidesAtOnce(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	gone, kept := "de1e0000000000000000000000000000", "kee00000000000000000000000000000"
	require.NoError(t, s.InsertObservations(ctx, append(traceOf("proj", gone, base), traceOf("proj", kept, base+10*second)...)))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{
		score("proj", "s-gone", gone), score("proj", "s-kept", kept),
	}))

	require.NoError(t, s.DeleteTraces(ctx, "proj", []string{gone}))

	_, err := s.GetTrace(ctx, "proj", gone)
	require.ErrorIs(t, err, chstore.ErrNotFound)
	_, err = s.GetObservation(ctx, "proj", "de1eroot")
	require.ErrorIs(t, err, chstore.ErrNotFound)
	traces, total, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, []string{kept}, traceIDs(traces))
	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
	scores, total, err := s.ListScores(ctx, chstore.ScoreFilter{ProjectID: "proj"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, "s-kept", scores[0].ID)
	sess, err := s.GetSession(ctx, "proj", "session-1")
	require.NoError(t, err)
	assert.Equal(t, []string{kept}, sess.TraceIDs)
	many, err := s.GetTraces(ctx, "proj", []string{gone, kept, "no-such-trace"})
	require.NoError(t, err)
	require.Len(t, many, 1, "only the live trace")
	assert.Equal(t, kept, many[kept].ID)
	assert.Positive(t, many[kept].LatencySeconds)
	many, err = s.GetTraces(ctx, "other-project", []string{kept})
	require.NoError(t, err)
	assert.Empty(t, many, "another project's trace")

	// A late span of a deleted trace stays hidden.
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", gone, base)[:1]))
	_, err = s.GetTrace(ctx, "proj", gone)
	require.ErrorIs(t, err, chstore.ErrNotFound)

	// The purge removes the stored rows, the late span included.
	purged, err := s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, purged.Traces)
	require.Eventually(t, func() bool {
		n, err := s.StoredObservationRows(ctx, "proj", gone)
		require.NoError(t, err)
		return n == 0
	}, 30*time.Second, 200*time.Millisecond)
	_, err = s.GetTrace(ctx, "proj", gone)
	require.ErrorIs(t, err, chstore.ErrNotFound, "the tombstone stays after the purge")
	again, err := s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, chstore.PurgeStats{}, again, "a purged tombstone is not purged again")
}

func score(project, id, trace string) chstore.Score {
	return chstore.Score{
		ProjectID: project, ID: id, Timestamp: base + 5*second, Name: "quality", Value: 0.9,
		DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Environment: "production", TraceID: trace, Metadata: "{}",
	}
}

func traceIDs(ts []chstore.Trace) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// Delete requests cost ClickHouse no mutation each: the purge issues one
// per table for everything pending, none for ids that match nothing, and
// nothing when no tombstone is pending.
func TestDeletesAreBatched(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	var stored []string
	for i := range 50 {
		id := fmt.Sprintf("ba7c%028x", i)
		require.NoError(t, s.InsertObservations(ctx, traceOf("proj", id, base)))
		stored = append(stored, id)
	}
	for i := range 50 {
		require.NoError(t, s.DeleteTraces(ctx, "proj", []string{fmt.Sprintf("0000%028x", i)}))
	}
	mutations := func() int {
		n, err := s.Mutations(ctx)
		require.NoError(t, err)
		return n
	}
	assert.Zero(t, mutations(), "requests start no mutation")
	st, err := s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, chstore.PurgeStats{Traces: 50}, st, "ids that match nothing cost nothing")
	assert.Zero(t, mutations())

	for _, id := range stored {
		require.NoError(t, s.DeleteTraces(ctx, "proj", []string{id}))
	}
	st, err = s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, chstore.PurgeStats{Traces: 50, Mutations: 2}, st, "observations and trace_index, once each; no scores")
	assert.Equal(t, 2, mutations())
	st, err = s.PurgeDeleted(ctx)
	require.NoError(t, err)
	assert.Equal(t, chstore.PurgeStats{}, st, "nothing pending")
	require.Eventually(t, func() bool {
		n, err := s.StoredObservationRows(ctx, "proj", stored[49])
		require.NoError(t, err)
		return n == 0
	}, 30*time.Second, 200*time.Millisecond)
}

func TestProjectIsolation(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	shared := "5ade0000000000000000000000000000"
	onlyA := "aaaa1111111111111111111111111111"
	require.NoError(t, s.InsertObservations(ctx, append(traceOf("A", shared, base), traceOf("A", onlyA, base+second)...)))
	bObs := traceOf("B", shared, base+time.Hour.Microseconds())
	for i := range bObs {
		bObs[i].UserID, bObs[i].SessionID = "", ""
	}
	bObs[0].UserID, bObs[0].SessionID = "user-b", "session-b"
	require.NoError(t, s.InsertObservations(ctx, bObs))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("A", "sa", onlyA), score("B", "sb", shared)}))

	_, err := s.GetTrace(ctx, "B", onlyA)
	require.ErrorIs(t, err, chstore.ErrNotFound)
	got, err := s.GetTrace(ctx, "B", shared)
	require.NoError(t, err)
	assert.Equal(t, "user-b", got.UserID)
	for _, o := range got.Observations {
		assert.Equal(t, "B", o.ProjectID)
	}

	traces, total, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "B"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, []string{shared}, traceIDs(traces))
	_, total, err = s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "B", UserID: "user-1"})
	require.NoError(t, err)
	assert.Zero(t, total)

	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "B", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
	for _, o := range page.Observations {
		assert.Equal(t, "B", o.ProjectID)
	}
	_, err = s.GetObservation(ctx, "B", "aaaaroot")
	require.ErrorIs(t, err, chstore.ErrNotFound)

	sessions, total, err := s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "B"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, "session-b", sessions[0].ID)
	_, err = s.GetSession(ctx, "B", "session-1")
	require.ErrorIs(t, err, chstore.ErrNotFound)

	scores, total, err := s.ListScores(ctx, chstore.ScoreFilter{ProjectID: "B"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, "sb", scores[0].ID)

	// Deleting in B leaves A's trace with the same id alone.
	require.NoError(t, s.DeleteTraces(ctx, "B", []string{shared}))
	_, err = s.GetTrace(ctx, "A", shared)
	require.NoError(t, err)
}

// listFixture stores 12 traces a minute apart: users alternate u0/u1/u2,
// names alternate n0/n1, every third is in staging, every fourth has tag "vip".
func listFixture(t *testing.T, s *chstore.Store) []string {
	t.Helper()
	var obs []model.Observation
	var ids []string
	for i := range 12 {
		id := fmt.Sprintf("%04x", i) + "0000000000000000000000000000"
		ids = append(ids, id)
		env := "production"
		if i%3 == 0 {
			env = "staging"
		}
		tags := []string{"all"}
		if i%4 == 0 {
			tags = append(tags, "vip")
		}
		o := model.Observation{
			ProjectID: "proj", TraceID: id, ID: id[:4] + "root", Type: model.TypeSpan, Name: "root",
			StartTime: base + int64(i)*60*second, EndTime: base + int64(i)*60*second + second,
			Environment: env, TraceName: fmt.Sprintf("n%d", i%2), UserID: fmt.Sprintf("u%d", i%3),
			SessionID: fmt.Sprintf("s%d", i/4), Tags: tags, Release: fmt.Sprintf("r%d", i%2), Version: "v1",
			IsRoot: true, Metadata: "{}", TraceMetadata: "{}",
		}
		child := o
		child.ID, child.ParentID, child.IsRoot, child.Name = id[:4]+"kid", o.ID, false, "child"
		child.StartTime += 100_000
		child.TraceName, child.UserID, child.SessionID, child.Tags = "", "", "", nil
		obs = append(obs, o, child)
	}
	require.NoError(t, s.InsertObservations(context.Background(), obs))
	return ids
}

func TestListTracesFiltersAndPages(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	ids := listFixture(t, s)
	minute := 60 * second

	cases := []struct {
		name string
		f    chstore.TraceFilter
		want []string // in list order
	}{
		{"all newest first", chstore.TraceFilter{}, reversed(ids)},
		{"user", chstore.TraceFilter{UserID: "u1"}, []string{ids[10], ids[7], ids[4], ids[1]}},
		{"name", chstore.TraceFilter{Name: "n0", Limit: 3}, []string{ids[10], ids[8], ids[6]}},
		{"session", chstore.TraceFilter{SessionID: "s1"}, []string{ids[7], ids[6], ids[5], ids[4]}},
		{"tags all", chstore.TraceFilter{Tags: []string{"vip", "all"}}, []string{ids[8], ids[4], ids[0]}},
		{"tag missing", chstore.TraceFilter{Tags: []string{"vip", "none"}}, nil},
		{"environment any", chstore.TraceFilter{Environment: []string{"staging", "other"}}, []string{ids[9], ids[6], ids[3], ids[0]}},
		{"release", chstore.TraceFilter{Release: "r1", Version: "v1", Limit: 2}, []string{ids[11], ids[9]}},
		{"window", chstore.TraceFilter{From: base + 2*minute, To: base + 5*minute}, []string{ids[4], ids[3], ids[2]}},
		{"window and user", chstore.TraceFilter{From: base + 2*minute, To: base + 9*minute, UserID: "u0"}, []string{ids[6], ids[3]}},
		{"order by id asc", chstore.TraceFilter{OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderID}, Limit: 2}, ids[:2]},
		{"order by user desc", chstore.TraceFilter{OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderUserID, Desc: true}, Limit: 2}, []string{ids[11], ids[8]}},
		{"second page", chstore.TraceFilter{Page: 2, Limit: 5}, reversed(ids)[5:10]},
		{"last page", chstore.TraceFilter{Page: 3, Limit: 5}, reversed(ids)[10:]},
		{"past the end", chstore.TraceFilter{Page: 4, Limit: 5}, nil},
	}
	wantTotals := map[string]int{
		"all newest first": 12, "user": 4, "name": 6, "session": 4, "tags all": 3, "tag missing": 0,
		"environment any": 4, "release": 6, "window": 3, "window and user": 2, "order by id asc": 12,
		"order by user desc": 12, "second page": 12, "last page": 12, "past the end": 12,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.ProjectID = "proj"
			traces, total, err := s.ListTraces(ctx, tc.f)
			require.NoError(t, err)
			assert.Equal(t, wantTotals[tc.name], total)
			if tc.want == nil {
				tc.want = []string{}
			}
			assert.Equal(t, tc.want, traceIDs(traces))
		})
	}

	traces, _, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj", UserID: "u2", Limit: 1})
	require.NoError(t, err)
	require.Len(t, traces, 1)
	assert.Equal(t, "n1", traces[0].Name)
	assert.Equal(t, []string{"all"}, traces[0].Tags)
	assert.Equal(t, []string{"000broot", "000bkid"}, traces[0].ObservationIDs)
	assert.InDelta(t, 1.0, traces[0].LatencySeconds, 1e-9)

	_, _, err = s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj", OrderBy: chstore.TraceOrder{Field: "bookmarked"}})
	require.ErrorIs(t, err, chstore.ErrInvalid)
	_, _, err = s.ListTraces(ctx, chstore.TraceFilter{})
	require.ErrorIs(t, err, chstore.ErrInvalid)
}

// TestListedTraceKeepsItsSpansOutsideTheWindow lists a trace by its first
// span while a later span of it started days after the window: the page
// shows the whole trace, not the part the list read.
func TestListedTraceKeepsItsSpansOutsideTheWindow(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	day := 24 * 3600 * second
	spans := traceOf("proj", "longtrace", base)
	late := spans[2]
	late.StartTime, late.EndTime = base+3*day, base+3*day+second
	spans[2] = late
	require.NoError(t, s.InsertObservations(ctx, spans))

	traces, total, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "proj", From: base - 60*second, To: base + 60*second})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Len(t, traces, 1)
	assert.Equal(t, []string{"longroot", "longgen", "longtool"}, traces[0].ObservationIDs)
	assert.InDelta(t, 0.003+0.75, traces[0].TotalCost, 1e-9, "the late span's cost counts")
	assert.InDelta(t, float64(3*day+second)/1e6, traces[0].LatencySeconds, 1e-6)
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func TestListObservations(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	ids := listFixture(t, s)
	minute := 60 * second

	count := func(f chstore.ObservationFilter) int {
		t.Helper()
		f.ProjectID, f.Page = "proj", 1
		page, err := s.ListObservations(ctx, f)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(page.Observations), page.Total)
		return page.Total
	}
	assert.Equal(t, 24, count(chstore.ObservationFilter{}))
	assert.Equal(t, 2, count(chstore.ObservationFilter{TraceID: ids[3]}))
	assert.Equal(t, 12, count(chstore.ObservationFilter{Name: "child"}))
	assert.Equal(t, 8, count(chstore.ObservationFilter{UserID: "u0"}), "children of u0's traces count too")
	assert.Equal(t, 24, count(chstore.ObservationFilter{Type: model.TypeSpan}))
	assert.Equal(t, 0, count(chstore.ObservationFilter{Type: model.TypeGeneration}))
	assert.Equal(t, 1, count(chstore.ObservationFilter{ParentID: ids[5][:4] + "root"}))
	assert.Equal(t, 8, count(chstore.ObservationFilter{Environment: []string{"staging"}}))
	assert.Equal(t, 4, count(chstore.ObservationFilter{From: base + 2*minute, To: base + 4*minute}))
	assert.Equal(t, 24, count(chstore.ObservationFilter{Version: "v1"}))
	assert.Equal(t, 8, count(chstore.ObservationFilter{SessionID: "s1"}), "children of the session's traces count too")
	assert.Equal(t, 1, count(chstore.ObservationFilter{SessionID: "s1", UserID: "u0", Root: ptr(true)}), "trace 6's root")

	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Page: 2, Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Observations, 5)
	assert.Equal(t, ids[9][:4]+"root", page.Observations[0].ID, "newest start first: 11kid 11root 10kid 10root 9kid | 9root")

	// Cursor mode walks every observation exactly once.
	seen := map[string]bool{}
	var cursor *chstore.ObservationCursor
	for range 10 {
		page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Limit: 7, Cursor: cursor})
		require.NoError(t, err)
		assert.Equal(t, -1, page.Total)
		for _, o := range page.Observations {
			assert.False(t, seen[o.ID], o.ID)
			seen[o.ID] = true
		}
		if page.Next == nil {
			break
		}
		cursor = page.Next
	}
	assert.Len(t, seen, 24)

	o, err := s.GetObservation(ctx, "proj", ids[2][:4]+"kid")
	require.NoError(t, err)
	assert.Equal(t, ids[2], o.TraceID)
	_, err = s.GetObservation(ctx, "proj", "missing")
	require.ErrorIs(t, err, chstore.ErrNotFound)

	// A span marked the trace root counts as a root although it has a parent.
	asRoot := model.Observation{
		ProjectID: "proj", TraceID: "a5a5" + ids[0][4:], ID: "a5a5root", ParentID: "remote-parent", IsRoot: true,
		Type: model.TypeSpan, Name: "root", StartTime: base, Level: model.LevelDefault, Metadata: "{}", TraceMetadata: "{}",
	}
	require.NoError(t, s.InsertObservations(ctx, []model.Observation{asRoot}))
	assert.Equal(t, 13, count(chstore.ObservationFilter{Root: ptr(true)}))
	assert.Equal(t, 12, count(chstore.ObservationFilter{Root: ptr(false)}))
	assert.Equal(t, 1, count(chstore.ObservationFilter{Root: ptr(true), ParentID: "remote-parent"}))
}

func ptr[T any](v T) *T { return &v }

func TestSessions(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	ids := listFixture(t, s)
	minute := 60 * second

	sessions, total, err := s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "proj"})
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	require.Len(t, sessions, 3)
	assert.Equal(t, "s2", sessions[0].ID)
	assert.Equal(t, base+8*minute, sessions[0].CreatedAt)
	assert.Equal(t, "production", sessions[0].Environment)

	sessions, total, err = s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "proj", Environment: []string{"staging"}})
	require.NoError(t, err)
	assert.Equal(t, 1, total, "only s0 starts with a staging trace")
	assert.Equal(t, "s0", sessions[0].ID)

	sessions, total, err = s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "proj", From: base + 4*minute, To: base + 8*minute, Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, "s1", sessions[0].ID)

	sess, err := s.GetSession(ctx, "proj", "s1")
	require.NoError(t, err)
	assert.Equal(t, ids[4:8], sess.TraceIDs)
	assert.Equal(t, base+4*minute, sess.CreatedAt)
}

func TestScores(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	trace := "5c0e0000000000000000000000000000"
	numeric := score("proj", "n1", trace)
	categorical := chstore.Score{
		ProjectID: "proj", ID: "c1", Timestamp: base + 6*second, Name: "tone", Value: 1, StringValue: "friendly",
		DataType: chstore.ScoreCategorical, Source: chstore.SourceAnnotation, ConfigID: "cfg-1", Comment: "ok",
		Metadata: `{"by":"qa"}`, Environment: "production", TraceID: trace, ObservationID: "5c0egen",
	}
	session := chstore.Score{
		ProjectID: "proj", ID: "b1", Timestamp: base + 7*second, Name: "resolved", Value: 1,
		DataType: chstore.ScoreBoolean, Source: chstore.SourceEval, Environment: "staging", SessionID: "session-1",
	}
	run := chstore.Score{
		ProjectID: "proj", ID: "r1", Timestamp: base + 8*second, Name: "accuracy", Value: 0.5,
		DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Environment: "production", DatasetRunID: "run-1",
	}
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{numeric, categorical, session, run}))

	list := func(f chstore.ScoreFilter) []string {
		t.Helper()
		f.ProjectID = "proj"
		scores, _, err := s.ListScores(ctx, f)
		require.NoError(t, err)
		ids := []string{}
		for _, sc := range scores {
			ids = append(ids, sc.ID)
		}
		return ids
	}
	assert.Equal(t, []string{"r1", "b1", "c1", "n1"}, list(chstore.ScoreFilter{}))
	assert.Equal(t, []string{"c1", "n1"}, list(chstore.ScoreFilter{TraceID: trace}))
	assert.Equal(t, []string{"c1"}, list(chstore.ScoreFilter{ObservationID: "5c0egen"}))
	assert.Equal(t, []string{"b1"}, list(chstore.ScoreFilter{SessionID: "session-1"}))
	assert.Equal(t, []string{"r1"}, list(chstore.ScoreFilter{DatasetRunID: "run-1"}))
	assert.Equal(t, []string{"c1"}, list(chstore.ScoreFilter{Source: chstore.SourceAnnotation, ConfigID: "cfg-1"}))
	assert.Equal(t, []string{"b1"}, list(chstore.ScoreFilter{DataType: chstore.ScoreBoolean}))
	assert.Equal(t, []string{"r1", "c1", "n1"}, list(chstore.ScoreFilter{Environment: []string{"production"}}))
	assert.Equal(t, []string{"b1", "c1"}, list(chstore.ScoreFilter{From: base + 6*second, To: base + 8*second}))
	assert.Equal(t, []string{"b1"}, list(chstore.ScoreFilter{Page: 2, Limit: 1}))

	// Writing the same id again replaces the score on read.
	numeric.Value, numeric.Name = 0.1, "quality-v2"
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{numeric}))
	assert.Equal(t, []string{"n1"}, list(chstore.ScoreFilter{Name: "quality-v2"}))
	assert.Empty(t, list(chstore.ScoreFilter{Name: "quality"}))
	scores, total, err := s.ListScores(ctx, chstore.ScoreFilter{ProjectID: "proj", TraceID: trace})
	require.NoError(t, err)
	assert.Equal(t, 2, total)
	got := scores[1]
	got.StoredAt = 0
	assert.Equal(t, numeric, got)
	assert.Equal(t, categorical.Metadata, scores[0].Metadata)

	err = s.InsertScores(ctx, []chstore.Score{{ProjectID: "proj", ID: "x", Name: "n", DataType: chstore.ScoreNumeric, TraceID: "t", SessionID: "s"}})
	require.ErrorIs(t, err, chstore.ErrInvalid)
	assert.True(t, chstore.Permanent(err))
}

func TestInvalidObservationsAreRejected(t *testing.T) {
	s := chtest.Store(t)
	err := s.InsertObservations(context.Background(), []model.Observation{{ProjectID: "p", TraceID: "t"}})
	require.ErrorIs(t, err, chstore.ErrInvalid)
	assert.True(t, chstore.Permanent(err))
	_, err = s.GetTrace(context.Background(), "", "t")
	require.ErrorIs(t, err, chstore.ErrInvalid)
}

func TestConcurrentMigrate(t *testing.T) {
	cfg := chtest.Config(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := chstore.Open(ctx, cfg)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			// Half of them also add a column in a further version.
			if i%2 == 0 {
				errs[i] = s.Migrate(ctx)
			} else {
				errs[i] = s.MigrateAddingColumn(ctx, "extra_note", "String DEFAULT ''")
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	s, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.MigrateAddingColumn(ctx, "extra_note", "String DEFAULT ''"), "a second run finds nothing to do")
	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	current, err := chtest.Store(t).SchemaVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, current+1, v, "every version applied, the added one last")
	n, err := s.ColumnCount(ctx, "observations", "extra_note")
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// The schema works after the race.
	require.NoError(t, s.InsertObservations(ctx, traceOf("p", "c0c0000000000000000000000000000c", base)))
	_, err = s.GetTrace(ctx, "p", "c0c0000000000000000000000000000c")
	require.NoError(t, err)
}

// A store from Connect exists while ClickHouse is down: its calls fail as
// unavailable (retryable), Ping says so, and Close stops the attempts.
func TestConnectWhileClickHouseIsDown(t *testing.T) {
	ctx := context.Background()
	s, err := chstore.Connect(ctx, chstore.Config{DSN: "clickhouse://127.0.0.1:1", Database: "down"}, true, zap.NewNop())
	require.NoError(t, err)
	require.ErrorIs(t, s.Ping(ctx), chstore.ErrUnavailable)
	err = s.InsertObservations(ctx, traceOf("proj", "0123456789abcdef0123456789abcdef", base))
	require.ErrorIs(t, err, chstore.ErrUnavailable)
	assert.False(t, chstore.Permanent(err))
	_, err = s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Page: 1, Limit: 10})
	require.ErrorIs(t, err, chstore.ErrUnavailable)
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for the reconnect backoff")
	}
}

// Reached at once, Connect returns a migrated store; a database without the
// schema reads as unavailable, not as a failed query.
func TestConnectMigratesAndMissingSchemaIsUnavailable(t *testing.T) {
	ctx := context.Background()
	cfg := chtest.Config(t)
	bare, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	defer bare.Close()
	_, err = bare.GetTrace(ctx, "proj", "0123456789abcdef0123456789abcdef")
	require.ErrorIs(t, err, chstore.ErrUnavailable)

	s, err := chstore.Connect(ctx, cfg, true, zap.NewNop())
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Ping(ctx))
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", "0123456789abcdef0123456789abcdef", base)))
	_, err = bare.GetTrace(ctx, "proj", "0123456789abcdef0123456789abcdef")
	require.NoError(t, err)
}

// Retention with nothing past it starts no mutation: the tables all
// projects share are not rewritten on every run.
func TestExpireBeforeStartsNoMutationWithoutWork(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	require.NoError(t, s.InsertObservations(ctx, traceOf("proj", "0123456789abcdef0123456789abcdef", time.Now().UnixMicro())))
	n, err := s.ExpireBefore(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = s.ExpireBefore(ctx, map[string]time.Time{"proj": time.Now().AddDate(0, 0, -7), "other": time.Now()})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing of proj is older than 7 days, and other has no rows")
	require.NoError(t, s.InsertObservations(ctx, traceOf("keeps", "0123456789abcdef0123456789abcdee", time.Now().UnixMicro())))
	n, err = s.ExpireBefore(ctx, map[string]time.Time{"proj": time.Now().AddDate(0, 0, 2)})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "observations and trace_index, whose month another project shares; no scores to expire")
}

// A project's retention hides its older rows from every read at once,
// before ExpireBefore deletes them; other projects and newer rows stay.
func TestRetentionHidesOlderRowsAtOnce(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	old, recent := time.Now().AddDate(0, 0, -10).UnixMicro(), time.Now().Add(-time.Hour).UnixMicro()
	const oldTrace, newTrace = "0123456789abcdef0123456789abc0d1", "0123456789abcdef0123456789abc0d2"
	for _, project := range []string{"short", "forever"} {
		require.NoError(t, s.InsertObservations(ctx, append(traceOf(project, oldTrace, old), traceOf(project, newTrace, recent)...)))
		require.NoError(t, s.InsertScores(ctx, []chstore.Score{
			{ProjectID: project, ID: "old-score", TraceID: oldTrace, Name: "q", Value: 1, DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Timestamp: old, Metadata: "{}"},
			{ProjectID: project, ID: "new-score", TraceID: newTrace, Name: "q", Value: 1, DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Timestamp: recent, Metadata: "{}"},
		}))
	}
	s.SetRetention(map[string]int{"short": 7})

	traceIDs := func(project string) []string {
		list, _, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: project, Limit: 10})
		require.NoError(t, err)
		var out []string
		for _, tr := range list {
			out = append(out, tr.ID)
		}
		return out
	}
	assert.Equal(t, []string{newTrace}, traceIDs("short"))
	assert.ElementsMatch(t, []string{oldTrace, newTrace}, traceIDs("forever"))
	_, err := s.GetTrace(ctx, "short", oldTrace)
	assert.ErrorIs(t, err, chstore.ErrNotFound)
	_, err = s.GetTrace(ctx, "forever", oldTrace)
	require.NoError(t, err)
	_, err = s.GetObservation(ctx, "short", oldTrace[:4]+"gen")
	require.NoError(t, err, "the recent trace's span of the same id shows")
	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "short", Limit: 50})
	require.NoError(t, err)
	for _, o := range page.Observations {
		assert.Equal(t, newTrace, o.TraceID)
	}
	scores, _, err := s.SearchScores(ctx, chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: "short", Limit: 10}})
	require.NoError(t, err)
	require.Len(t, scores, 1)
	assert.Equal(t, "new-score", scores[0].ID)
	traceScores, err := s.TraceScores(ctx, "short", oldTrace)
	require.NoError(t, err)
	assert.Empty(t, traceScores)
	rows, err := s.Metrics(ctx, "short", chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}},
		From: time.Now().AddDate(0, 0, -30), To: time.Now()})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "3", rows[0]["count_count"], "the recent trace's three spans (integer sums come back as strings)")

	s.SetRetention(map[string]int{"short": 30})
	assert.ElementsMatch(t, []string{oldTrace, newTrace}, traceIDs("short"), "a longer retention shows what is not yet deleted")
}

// A month wholly past its projects' retention is dropped as a partition;
// a month shared with a project that keeps its data is left to the delete.
func TestExpireBeforeDropsWhollyExpiredPartitions(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	month := func(monthsAgo int) int64 {
		now := time.Now().UTC()
		return time.Date(now.Year(), now.Month()-time.Month(monthsAgo), 10, 12, 0, 0, 0, time.UTC).UnixMicro()
	}
	require.NoError(t, s.InsertObservations(ctx, traceOf("short", "0123456789abcdef0123456789abc001", month(4))))
	require.NoError(t, s.InsertObservations(ctx, traceOf("short", "0123456789abcdef0123456789abc002", month(3))))
	require.NoError(t, s.InsertObservations(ctx, traceOf("keeps", "0123456789abcdef0123456789abc003", month(3))))
	require.NoError(t, s.InsertObservations(ctx, traceOf("short", "0123456789abcdef0123456789abc004", time.Now().UnixMicro())))
	partitions := func() []string {
		out, err := s.ActivePartitions(ctx)
		require.NoError(t, err)
		return out
	}
	before := partitions()
	require.Len(t, before, 3)

	_, err := s.ExpireBefore(ctx, map[string]time.Time{"short": time.Now().AddDate(0, 0, -30)})
	require.NoError(t, err)
	after := partitions()
	assert.Equal(t, before[1:], after, "the fourth month held only short's rows and is gone at once")
	require.Eventually(t, func() bool {
		list, _, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "short", Limit: 10})
		return err == nil && len(list) == 1
	}, 30*time.Second, 200*time.Millisecond, "the third month's rows of short go by the delete; its recent trace stays")
	kept, _, err := s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "keeps", Limit: 10})
	require.NoError(t, err)
	assert.Len(t, kept, 1, "the project without retention keeps its rows in the shared month")
}
