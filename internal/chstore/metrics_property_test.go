package chstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// The property test: random data, random queries, and the engine's answers
// against a plain computation in Go over the same rows.

// refRow is one row of a view as the reference computes it: field values
// by name (string, int64, float64, []string, nil) and, for the time
// dimension, its time.
type refRow struct {
	values map[string]any
	at     time.Time
}

type refData struct {
	observations []refRow
	traces       []refRow
	scores       []refRow
}

var (
	propNames  = []string{"llm", "retrieve", "Search", "tool-call"}
	propModels = []string{"", "gpt-4o", "claude"}
	propEnvs   = []string{"production", "staging"}
	propUsers  = []string{"", "alice", "bob", "carol"}
	propTags   = []string{"x", "y", "z"}
	propTraces = []string{"chat", "Search", "agent"}
)

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// propData stores random traces in two projects and returns the rows the
// views of project p1 hold, computed in Go.
func propData(t *testing.T, s *chstore.Store, r *rand.Rand, start time.Time) refData {
	ctx := context.Background()
	var all []model.Observation
	var scores []chstore.Score
	ref := refData{}
	deleted := ""
	for i := range 80 {
		project := "p1"
		if i%4 == 3 {
			project = "p2"
		}
		traceID := fmt.Sprintf("%032x", i+1)
		t0 := start.Add(time.Duration(r.Int64N(int64(72 * time.Hour)))).Truncate(time.Millisecond)
		n := 1 + r.IntN(4)
		var spans []model.Observation
		traceMeta := fmt.Sprintf(`{"team":%q,"a":{"b":%q}}`, pick(r, []string{"red", "blue"}), pick(r, []string{"x", "y"}))
		for k := range n {
			o := model.Observation{
				ProjectID: project, TraceID: traceID, ID: fmt.Sprintf("%016x", i*10+k+1), Type: model.TypeSpan,
				Name: pick(r, propNames), StartTime: t0.Add(time.Duration(k) * time.Duration(1+r.IntN(90)) * time.Second).UnixMicro(),
				Level: model.LevelDefault, Environment: pick(r, propEnvs), Metadata: "{}", TraceMetadata: "{}", SampleRate: 1,
			}
			if k > 0 {
				o.ParentID = spans[0].ID
				o.StartTime = spans[k-1].StartTime + int64(1+r.IntN(90))*1e6
			} else {
				o.IsRoot, o.TraceName, o.Tags, o.TraceMetadata = true, pick(r, propTraces), []string{pick(r, propTags)}, traceMeta
			}
			if r.IntN(4) > 0 {
				o.EndTime = o.StartTime + r.Int64N(5e6)
			}
			o.UserID = pick(r, propUsers)
			if r.IntN(2) == 0 {
				o.Tags = append(o.Tags, pick(r, propTags))
			}
			if m := pick(r, propModels); m != "" {
				o.Type, o.Model = model.TypeGeneration, m
				in, out := r.Int64N(1000), r.Int64N(500)
				o.UsageDetails = map[string]int64{"input": in, "input_cached_tokens": in / 3, "output": out, "total": in + out}
				o.CostDetails = map[string]float64{"input": float64(in) * 1e-6, "output": float64(out) * 2e-6}
			}
			o.Metadata = fmt.Sprintf(`{"team":%q,"a":{"b":%q},"n":%d}`, pick(r, []string{"red", "blue"}), pick(r, []string{"x", "y"}), r.IntN(10))
			spans = append(spans, o)
		}
		all = append(all, spans...)
		if r.IntN(3) == 0 {
			all = append(all, spans[0]) // a retry: stored twice, counted once
		}
		for k := range r.IntN(3) {
			sc := chstore.Score{ProjectID: project, ID: fmt.Sprintf("score-%d-%d", i, k), TraceID: traceID, Name: pick(r, []string{"quality", "helpful"}),
				Value: float64(r.IntN(100)) / 100, DataType: chstore.ScoreNumeric, Source: pick(r, []string{chstore.SourceAPI, chstore.SourceEval}),
				Environment: "production", Timestamp: spans[0].StartTime + r.Int64N(3600e6), Metadata: "{}"}
			if r.IntN(2) == 0 {
				sc.ObservationID = pick(r, spans).ID
			}
			scores = append(scores, sc)
		}
		if project != "p1" {
			continue
		}
		if deleted == "" && i > 10 {
			deleted = traceID // tombstoned below: in no view
			continue
		}
		ref.add(spans, scores)
	}
	require.NoError(t, s.InsertObservations(ctx, all))
	require.NoError(t, s.InsertScores(ctx, scores))
	require.NoError(t, s.DeleteTraces(ctx, "p1", []string{deleted}))
	return ref
}

// add computes the view rows of one p1 trace; scores holds every score so far.
func (ref *refData) add(spans []model.Observation, scores []chstore.Score) {
	traceID := spans[0].TraceID
	latest := func(get func(model.Observation) string) string {
		v, at := "", int64(-1)
		for _, o := range spans {
			if s := get(o); s != "" && o.StartTime > at {
				v, at = s, o.StartTime
			}
		}
		return v
	}
	name := latest(func(o model.Observation) string { return o.TraceName })
	user := latest(func(o model.Observation) string { return o.UserID })
	var tags []string
	first, end := spans[0].StartTime, int64(0)
	var cost float64
	var tokens int64
	var meta []string
	for _, o := range spans {
		for _, tag := range o.Tags {
			if !slices.Contains(tags, tag) {
				tags = append(tags, tag)
			}
		}
		end = max(end, o.EndTime, o.StartTime)
		cost += o.CostDetails["input"] + o.CostDetails["output"]
		tokens += o.UsageDetails["total"]
		if o.TraceMetadata != "{}" {
			meta = append(meta, o.TraceMetadata)
		}
	}
	sort.Strings(tags)
	var traceScores []chstore.Score
	for _, sc := range scores {
		if sc.TraceID == traceID && sc.ProjectID == "p1" {
			traceScores = append(traceScores, sc)
		}
	}
	ref.traces = append(ref.traces, refRow{at: time.UnixMicro(first).UTC(), values: map[string]any{
		"name": name, "userId": user, "environment": spans[0].Environment, "tags": tags, "metadata": meta,
		"timestamp": first, "totalCost": cost, "totalTokens": tokens, "latency": float64(end-first) / 1000,
		"observationsCount": int64(len(spans)), "scoresCount": int64(len(traceScores)), "uniqueUserIds": user, "count": int64(1),
	}})
	for _, o := range spans {
		var latency any
		if o.EndTime > 0 {
			latency = float64(o.EndTime-o.StartTime) / 1000
		}
		var n int64
		for _, sc := range traceScores {
			if sc.ObservationID == o.ID {
				n++
			}
		}
		in := o.UsageDetails["input"] + o.UsageDetails["input_cached_tokens"]
		ref.observations = append(ref.observations, refRow{at: time.UnixMicro(o.StartTime).UTC(), values: map[string]any{
			"traceId": o.TraceID, "name": o.Name, "type": o.Type, "environment": o.Environment, "providedModelName": o.Model,
			"traceName": name, "userId": user, "tags": tags, "startTime": o.StartTime, "metadata": []string{o.Metadata},
			"latency": latency, "totalTokens": o.UsageDetails["total"], "inputTokens": in,
			"totalCost": o.CostDetails["input"] + o.CostDetails["output"], "countScores": n, "uniqueUserIds": user, "count": int64(1),
		}})
	}
	for _, sc := range traceScores {
		ref.scores = append(ref.scores, refRow{at: time.UnixMicro(sc.Timestamp).UTC(), values: map[string]any{
			"name": sc.Name, "source": sc.Source, "traceName": name, "value": sc.Value, "timestamp": sc.Timestamp, "count": int64(1),
		}})
	}
}

// propView is what the random queries draw on, per view.
type propView struct {
	name       string
	dimensions []string
	measures   map[string][]string // measure: aggregations
	integer    map[string]bool
	filters    func(r *rand.Rand) chstore.Filter
	rows       func(ref refData) []refRow
	time       string
}

var allAggs = []string{"sum", "avg", "min", "max", "count", "p50", "p75", "p90", "p95", "p99"}

func propViews() []propView {
	stringFilter := func(r *rand.Rand, column string, values []string) chstore.Filter {
		op := pick(r, []string{"=", "contains", "does not contain", "starts with", "ends with"})
		v := pick(r, values)
		if op != "=" && len(v) > 2 {
			v = strings.ToUpper(v[1:3])
		}
		return chstore.Filter{Column: column, Type: "string", Operator: op, Value: v}
	}
	metaFilter := func(r *rand.Rand) chstore.Filter {
		if r.IntN(2) == 0 {
			return chstore.Filter{Column: "metadata", Type: "stringObject", Key: "team", Operator: "=", Value: pick(r, []string{"red", "blue"})}
		}
		return chstore.Filter{Column: "metadata", Type: "stringObject", Key: "a.b", Operator: pick(r, []string{"=", "does not contain"}), Value: "x"}
	}
	return []propView{
		{
			name: chstore.ViewObservations, time: "startTime",
			dimensions: []string{"name", "type", "environment", "providedModelName", "traceName", "userId"},
			measures: map[string][]string{"count": {"count"}, "latency": allAggs, "totalTokens": allAggs, "inputTokens": {"sum", "max"},
				"totalCost": {"sum", "avg", "max"}, "countScores": {"sum", "max"}, "uniqueUserIds": {"count", "uniq"}},
			integer: map[string]bool{"totalTokens": true, "inputTokens": true, "countScores": true},
			filters: func(r *rand.Rand) chstore.Filter {
				switch r.IntN(7) {
				case 0:
					return stringFilter(r, "name", propNames)
				case 1:
					return stringFilter(r, "traceName", propTraces)
				case 2:
					return chstore.Filter{Column: "providedModelName", Type: "stringOptions", Operator: pick(r, []string{"any of", "none of"}), Value: []any{pick(r, propModels)}}
				case 3:
					return chstore.Filter{Column: "latency", Type: "number", Operator: pick(r, []string{">", "<=", "="}), Value: float64(r.IntN(5000))}
				case 4:
					return chstore.Filter{Column: "tags", Type: "arrayOptions", Operator: pick(r, []string{"any of", "none of", "all of"}), Value: []any{pick(r, propTags), pick(r, propTags)}}
				case 5:
					return metaFilter(r)
				}
				return chstore.Filter{Column: "environment", Type: "stringOptions", Operator: "any of", Value: []any{pick(r, propEnvs)}}
			},
			rows: func(ref refData) []refRow { return ref.observations },
		},
		{
			name: chstore.ViewTraces, time: "timestamp",
			dimensions: []string{"name", "userId", "environment", "tags"},
			measures: map[string][]string{"count": {"count"}, "latency": allAggs, "totalCost": {"sum", "avg", "min"},
				"totalTokens": {"sum", "p50", "max"}, "observationsCount": {"sum", "avg"}, "scoresCount": {"sum"}, "uniqueUserIds": {"count"}},
			integer: map[string]bool{"totalTokens": true, "observationsCount": true, "scoresCount": true},
			filters: func(r *rand.Rand) chstore.Filter {
				switch r.IntN(3) {
				case 0:
					return stringFilter(r, "name", propTraces)
				case 1:
					return metaFilter(r)
				}
				return chstore.Filter{Column: "totalTokens", Type: "number", Operator: pick(r, []string{">", "<"}), Value: float64(r.IntN(2000))}
			},
			rows: func(ref refData) []refRow { return ref.traces },
		},
		{
			name: chstore.ViewScoresNumeric, time: "timestamp",
			dimensions: []string{"name", "source", "traceName"},
			measures:   map[string][]string{"count": {"count"}, "value": allAggs},
			filters: func(r *rand.Rand) chstore.Filter {
				if r.IntN(2) == 0 {
					return stringFilter(r, "traceName", propTraces)
				}
				return chstore.Filter{Column: "value", Type: "number", Operator: pick(r, []string{">=", "<"}), Value: float64(r.IntN(100)) / 100}
			},
			rows: func(ref refData) []refRow { return ref.scores },
		},
	}
}

// refMatch is the filter grammar's meaning, in Go.
func refMatch(f chstore.Filter, row refRow) bool {
	v := row.values[f.Column]
	lowerLike := func(x string, op string, want string) bool {
		x, want = strings.ToLower(x), strings.ToLower(want)
		switch op {
		case "contains":
			return strings.Contains(x, want)
		case "does not contain":
			return !strings.Contains(x, want)
		case "starts with":
			return strings.HasPrefix(x, want)
		case "ends with":
			return strings.HasSuffix(x, want)
		}
		return false
	}
	switch f.Type {
	case "string":
		if f.Operator == "=" {
			return v == f.Value
		}
		return lowerLike(v.(string), f.Operator, f.Value.(string))
	case "stringOptions":
		in := slices.Contains(f.Value.([]any), any(v.(string)))
		return in == (f.Operator == "any of")
	case "arrayOptions":
		tags := v.([]string)
		var hits int
		for _, w := range f.Value.([]any) {
			if slices.Contains(tags, w.(string)) {
				hits++
			}
		}
		switch f.Operator {
		case "any of":
			return hits > 0
		case "none of":
			return hits == 0
		}
		return hits == len(f.Value.([]any))
	case "number":
		var x float64
		switch n := v.(type) {
		case nil:
			return false
		case int64:
			x = float64(n)
		case float64:
			x = n
		}
		want := f.Value.(float64)
		switch f.Operator {
		case ">":
			return x > want
		case "<":
			return x < want
		case "<=":
			return x <= want
		case ">=":
			return x >= want
		}
		return x == want
	case "stringObject":
		positive := f.Operator
		if positive == "does not contain" {
			positive = "contains"
		}
		matched := false
		for _, text := range v.([]string) {
			var obj map[string]any
			_ = json.Unmarshal([]byte(text), &obj)
			var cur any = obj
			for _, seg := range strings.Split(f.Key, ".") {
				m, _ := cur.(map[string]any)
				cur = m[seg]
			}
			s, _ := cur.(string)
			if (positive == "=" && s == f.Value) || (positive == "contains" && lowerLike(s, "contains", f.Value.(string))) {
				matched = true
			}
		}
		return matched == (f.Operator != "does not contain")
	}
	panic("no reference for filter type " + f.Type)
}

// refAggregate is each aggregation's meaning, in Go.
func refAggregate(agg string, values []any, integer bool, distinct bool) any {
	if distinct {
		seen := map[string]bool{}
		for _, v := range values {
			if s := v.(string); s != "" {
				seen[s] = true
			}
		}
		return strconv.Itoa(len(seen))
	}
	var xs []float64
	for _, v := range values {
		switch n := v.(type) {
		case int64:
			xs = append(xs, float64(n))
		case float64:
			xs = append(xs, n)
		}
	}
	if agg == "count" {
		return strconv.Itoa(len(xs))
	}
	if agg == "uniq" {
		return strconv.Itoa(len(slices.Compact(slices.Sorted(slices.Values(xs)))))
	}
	if len(xs) == 0 {
		switch {
		case agg != "sum":
			return nil
		case integer:
			return "0"
		}
		return 0.0
	}
	sort.Float64s(xs)
	var out float64
	switch agg {
	case "sum":
		for _, x := range xs {
			out += x
		}
	case "avg":
		for _, x := range xs {
			out += x
		}
		return out / float64(len(xs))
	case "min":
		out = xs[0]
	case "max":
		out = xs[len(xs)-1]
	default:
		level, _ := strconv.ParseFloat(agg[1:], 64)
		out = xs[min(int(level/100*float64(len(xs))), len(xs)-1)]
	}
	if integer {
		return strconv.FormatInt(int64(math.Round(out)), 10)
	}
	return out
}

// refBucket is a time bucket in the reference: plain calendar arithmetic.
func refBucket(granularity string, t time.Time) time.Time {
	y, m, d := t.Date()
	switch granularity {
	case "hour":
		return time.Date(y, m, d, t.Hour(), 0, 0, 0, time.UTC)
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, d, t.Hour(), t.Minute(), 0, 0, time.UTC)
}

func refAnswer(v propView, q chstore.MetricsQuery, ref refData) []map[string]any {
	type group struct {
		row    map[string]any
		values [][]any
	}
	groups := map[string]*group{}
	var series []map[string]any
	seenSeries := map[string]bool{}
	for _, row := range v.rows(ref) {
		at := row.values[v.time].(int64)
		if at < q.From.UnixMicro() || at >= q.To.UnixMicro() {
			continue
		}
		ok := true
		for _, f := range q.Filters {
			ok = ok && refMatch(f, row)
		}
		if !ok {
			continue
		}
		out := map[string]any{}
		for _, d := range q.Dimensions {
			out[d] = row.values[d]
			if tags, isTags := out[d].([]string); isTags {
				out[d] = append([]string{}, tags...)
			}
		}
		if sk := canonical(out); !seenSeries[sk] {
			seenSeries[sk] = true
			series = append(series, out)
		}
		if q.Granularity != "" {
			out = clone(out)
			out[chstore.TimeDimensionKey] = refBucket(q.Granularity, row.at).Format(time.RFC3339)
		}
		key := canonical(out)
		g := groups[key]
		if g == nil {
			g = &group{row: out, values: make([][]any, len(q.Metrics))}
			groups[key] = g
		}
		for i, m := range q.Metrics {
			g.values[i] = append(g.values[i], row.values[m.Measure])
		}
	}
	var answer []map[string]any
	finish := func(g *group) map[string]any {
		row := clone(g.row)
		for i, m := range q.Metrics {
			if m.Measure == "count" {
				row[m.Key()] = strconv.Itoa(len(g.values[i]))
				continue
			}
			row[m.Key()] = refAggregate(m.Aggregation, g.values[i], v.integer[m.Measure] && m.Aggregation != "avg", m.Measure == "uniqueUserIds")
		}
		return row
	}
	if q.Granularity == "" {
		if len(groups) == 0 && len(q.Dimensions) == 0 {
			// An aggregate over nothing is still one row.
			groups[""] = &group{row: map[string]any{}, values: make([][]any, len(q.Metrics))}
		}
		for _, g := range groups {
			answer = append(answer, finish(g))
		}
		return answer
	}
	if len(series) == 0 && len(q.Dimensions) == 0 {
		series = []map[string]any{{}}
	}
	for _, s := range series {
		for b := refBucket(q.Granularity, q.From); b.Before(q.To); b = b.Add(map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[q.Granularity]) {
			key := clone(s)
			key[chstore.TimeDimensionKey] = b.Format(time.RFC3339)
			g := groups[canonical(key)]
			if g == nil {
				g = &group{row: key, values: make([][]any, len(q.Metrics))}
			}
			answer = append(answer, finish(g))
		}
	}
	return answer
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// canonical is a row's dimensions and bucket as one comparable string.
func canonical(row map[string]any) string {
	buf, _ := json.Marshal(row)
	return string(buf)
}

// answerRow is a row as the comparison sees it: its exact values as text,
// its floats apart, compared within a relative 1e-9 (float sums differ in
// their last digits with the order of addition).
type answerRow struct {
	exact  string
	floats []float64
}

func sortAnswer(rows []map[string]any, keys []string) []answerRow {
	out := make([]answerRow, 0, len(rows))
	for _, row := range rows {
		var a answerRow
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			v := row[k]
			if f, ok := v.(float64); ok {
				a.floats = append(a.floats, f)
				v = "float"
			}
			if tags, ok := v.([]string); ok {
				v = strings.Join(tags, ",")
			}
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
		a.exact = strings.Join(parts, " ")
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].exact < out[j].exact })
	return out
}

func requireSameAnswer(t *testing.T, want, got []answerRow, context string) {
	t.Helper()
	exact := func(rows []answerRow) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r.exact
		}
		return out
	}
	require.Equal(t, exact(want), exact(got), context)
	for i := range want {
		for j, w := range want[i].floats {
			g := got[i].floats[j]
			if w != g && math.Abs(w-g) > 1e-9*math.Max(math.Abs(w), math.Abs(g)) {
				require.Failf(t, "values differ", "row %s value %d: want %v, got %v; %s", want[i].exact, j, w, g, context)
			}
		}
	}
}

// randomMetricsQuery draws a query of any view.
func randomMetricsQuery(r *rand.Rand, start time.Time) chstore.MetricsQuery {
	return randomQuery(r, pick(r, propViews()), start)
}

// randomQuery draws up to two dimensions, one to three metrics, up to two
// filters, a window within the data and a granularity.
func randomQuery(r *rand.Rand, v propView, start time.Time) chstore.MetricsQuery {
	q := chstore.MetricsQuery{View: v.name}
	for _, d := range v.dimensions {
		if r.IntN(4) == 0 && len(q.Dimensions) < 2 {
			q.Dimensions = append(q.Dimensions, d)
		}
	}
	measures := make([]string, 0, len(v.measures))
	for m := range v.measures {
		measures = append(measures, m)
	}
	sort.Strings(measures)
	for range 1 + r.IntN(3) {
		m := pick(r, measures)
		metric := chstore.Metric{Measure: m, Aggregation: pick(r, v.measures[m])}
		if !slices.Contains(q.Metrics, metric) {
			q.Metrics = append(q.Metrics, metric)
		}
	}
	for range r.IntN(3) {
		q.Filters = append(q.Filters, v.filters(r))
	}
	q.From = start.Add(time.Duration(r.Int64N(int64(60 * time.Hour)))).Truncate(time.Second)
	q.To = q.From.Add(time.Duration(1 + r.Int64N(int64(30*time.Hour)))).Truncate(time.Second).Add(time.Second)
	q.Granularity = pick(r, []string{"", "", "hour", "day"})
	return q
}

func TestMetricsMatchAPlainComputation(t *testing.T) {
	s := chtest.Store(t)
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	ref := propData(t, s, r, start)
	ctx := context.Background()
	for i := range 150 {
		v := pick(r, propViews())
		q := randomQuery(r, v, start)

		got, err := s.Metrics(ctx, "p1", q)
		require.NoError(t, err, "seed %d query %d: %+v", seed, i, q)
		keys := slices.Clone(q.Dimensions)
		if q.Granularity != "" {
			keys = append(keys, chstore.TimeDimensionKey)
		}
		for _, m := range q.Metrics {
			keys = append(keys, m.Key())
		}
		want := refAnswer(v, q, ref)
		requireSameAnswer(t, sortAnswer(want, keys), sortAnswer(got, keys), fmt.Sprintf("seed %d query %d: %+v", seed, i, q))
	}
}
