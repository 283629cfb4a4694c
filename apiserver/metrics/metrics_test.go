package metrics

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

type fixture struct {
	h    http.Handler
	a, b apitest.Tenant
}

// setup stores in project a: trace chat (Base) with a 1 s root span and a
// 2 s gpt-4o generation (10 in, 5 out, $0.03), trace search (Base + 1 day)
// with a 4 s claude generation (100 in, 50 out, $0.3); scores quality 0.9 and
// 0.5, passed true, tone polite. Project b holds a chat trace with a 10 s
// gpt-4o generation of $100 and a quality score of 0: it must never show.
func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	f := fixture{a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}
	gen := func(project, trace, id string, offset, length time.Duration, modelName string, in, out int64, cost float64) model.Observation {
		o := apitest.Obs(project, trace, id, offset)
		o.Type, o.Name, o.Model = model.TypeGeneration, "llm", modelName
		o.EndTime = o.StartTime + length.Microseconds()
		o.UsageDetails = map[string]int64{"input": in, "output": out, "total": in + out}
		o.CostDetails = map[string]float64{"total": cost}
		return o
	}
	root := apitest.Obs(f.a.ProjectID, "trace-chat", "a1", 0)
	root.TraceName, root.UserID, root.IsRoot, root.Tags = "chat", "u1", true, []string{"x"}
	search := gen(f.a.ProjectID, "trace-search", "b1", 24*time.Hour, 4*time.Second, "claude", 100, 50, 0.3)
	search.TraceName, search.UserID, search.IsRoot = "search", "u2", true
	theirs := gen(f.b.ProjectID, "trace-theirs", "c1", 0, 10*time.Second, "gpt-4o", 1000, 1000, 100)
	theirs.TraceName = "chat"
	apitest.Insert(t, ch, root, gen(f.a.ProjectID, "trace-chat", "a2", time.Second, 2*time.Second, "gpt-4o", 10, 5, 0.03), search, theirs)
	score := func(project, id, trace, name, dataType string, value float64, label string) chstore.Score {
		return chstore.Score{ProjectID: project, ID: id, TraceID: trace, Name: name, Value: value, StringValue: label,
			DataType: dataType, Source: chstore.SourceAPI, Environment: "default", Timestamp: apitest.Base.Add(time.Minute).UnixMicro(), Metadata: "{}"}
	}
	apitest.InsertScores(t, ch,
		score(f.a.ProjectID, "s1", "trace-chat", "quality", chstore.ScoreNumeric, 0.9, ""),
		score(f.a.ProjectID, "s2", "trace-search", "quality", chstore.ScoreNumeric, 0.5, ""),
		score(f.a.ProjectID, "s3", "trace-chat", "passed", chstore.ScoreBoolean, 1, "True"),
		score(f.a.ProjectID, "s4", "trace-chat", "tone", chstore.ScoreCategorical, 0, "polite"),
		score(f.b.ProjectID, "s5", "trace-theirs", "quality", chstore.ScoreNumeric, 0, ""),
	)
	var err error
	f.h, err = httpx.NewRouter(Routes(ch), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

const (
	from = "2024-05-01T00:00:00Z"
	to   = "2024-05-03T00:00:00Z"
)

func (f fixture) query(t *testing.T, path string, q map[string]any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	rec := apitest.Do(t, f.h, http.MethodGet, path+"?query="+url.QueryEscape(string(raw)), f.a.ProjectAuth, nil)
	return rec.Result()
}

func (f fixture) data(t *testing.T, path string, q map[string]any) []map[string]any {
	t.Helper()
	resp := f.query(t, path, q)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", body)
	out := []map[string]any{}
	for _, row := range body["data"].([]any) {
		out = append(out, row.(map[string]any))
	}
	return out
}

func (f fixture) refused(t *testing.T, path string, q map[string]any, want string) {
	t.Helper()
	resp := f.query(t, path, q)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%v", body)
	assert.Contains(t, body["message"], want)
}

func TestViewsAndAggregations(t *testing.T) {
	f := setup(t)
	q := func(view string, dims []string, metrics ...map[string]any) map[string]any {
		d := []map[string]any{}
		for _, name := range dims {
			d = append(d, map[string]any{"field": name})
		}
		return map[string]any{"view": view, "dimensions": d, "metrics": metrics, "fromTimestamp": from, "toTimestamp": to}
	}
	m := func(measure, agg string) map[string]any {
		return map[string]any{"measure": measure, "aggregation": agg}
	}

	assert.Equal(t, []map[string]any{
		{"name": "chat", "count_count": "1", "sum_totalCost": 0.03, "max_latency": 3000.0, "sum_observationsCount": "2", "sum_scoresCount": "3"},
		{"name": "search", "count_count": "1", "sum_totalCost": 0.3, "max_latency": 4000.0, "sum_observationsCount": "1", "sum_scoresCount": "1"},
	}, f.data(t, "/api/public/metrics", q("traces", []string{"name"}, m("count", "count"), m("totalCost", "sum"),
		m("latency", "max"), m("observationsCount", "sum"), m("scoresCount", "sum"))))

	assert.Equal(t, []map[string]any{
		{"providedModelName": "", "count_count": "1", "sum_totalTokens": "0", "p95_latency": 1000.0, "count_uniqueUserIds": "1"},
		{"providedModelName": "claude", "count_count": "1", "sum_totalTokens": "150", "p95_latency": 4000.0, "count_uniqueUserIds": "1"},
		{"providedModelName": "gpt-4o", "count_count": "1", "sum_totalTokens": "15", "p95_latency": 2000.0, "count_uniqueUserIds": "1"},
	}, f.data(t, "/api/public/v2/metrics", q("observations", []string{"providedModelName"}, m("count", "count"),
		m("totalTokens", "sum"), m("latency", "p95"), m("uniqueUserIds", "count"))))

	assert.Equal(t, []map[string]any{{"traceName": "chat", "avg_value": 0.9, "count_count": "1"}, {"traceName": "search", "avg_value": 0.5, "count_count": "1"}},
		f.data(t, "/api/public/metrics", q("scores-numeric", []string{"traceName"}, m("value", "avg"), m("count", "count"))))
	assert.Equal(t, []map[string]any{{"booleanValue": true, "avg_value": 1.0}},
		f.data(t, "/api/public/metrics", q("scores-boolean", []string{"booleanValue"}, m("value", "avg"))))
	assert.Equal(t, []map[string]any{{"stringValue": "polite", "count_count": "1"}},
		f.data(t, "/api/public/metrics", q("scores-categorical", []string{"stringValue"}, m("count", "count"))))

	hist := f.data(t, "/api/public/metrics", map[string]any{"view": "observations", "metrics": []any{m("latency", "histogram")},
		"fromTimestamp": from, "toTimestamp": to, "config": map[string]any{"bins": 3}})
	assert.Equal(t, []any{[]any{1000.0, 2000.0, 1.0}, []any{2000.0, 3000.0, 1.0}, []any{3000.0, 4000.0, 1.0}}, hist[0]["histogram_latency"])

	filtered := f.data(t, "/api/public/metrics", map[string]any{"view": "observations", "metrics": []any{m("count", "count")},
		"fromTimestamp": from, "toTimestamp": to, "filters": []any{
			map[string]any{"column": "traceName", "type": "string", "operator": "=", "value": "chat"},
			map[string]any{"column": "type", "type": "stringOptions", "operator": "any of", "value": []string{"GENERATION"}},
		}})
	assert.Equal(t, []map[string]any{{"count_count": "1"}}, filtered)
}

// Time buckets cover the window, empty ones filled; an explicit order
// leaves them out.
func TestTimeBuckets(t *testing.T) {
	f := setup(t)
	base := map[string]any{"view": "traces", "metrics": []any{map[string]any{"measure": "count", "aggregation": "count"},
		map[string]any{"measure": "totalCost", "aggregation": "avg"}}, "fromTimestamp": from, "toTimestamp": "2024-05-04T00:00:00Z"}
	base["timeDimension"] = map[string]any{"granularity": "day"}
	assert.Equal(t, []map[string]any{
		{"time_dimension": "2024-05-01T00:00:00Z", "count_count": "1", "avg_totalCost": 0.03},
		{"time_dimension": "2024-05-02T00:00:00Z", "count_count": "1", "avg_totalCost": 0.3},
		{"time_dimension": "2024-05-03T00:00:00Z", "count_count": "0", "avg_totalCost": nil},
	}, f.data(t, "/api/public/metrics", base))

	base["timeDimension"] = map[string]any{"granularity": "auto"} // 3 days: by the day
	assert.Len(t, f.data(t, "/api/public/metrics", base), 3)
	base["timeDimension"] = map[string]any{"granularity": "hour"}
	assert.Len(t, f.data(t, "/api/public/metrics", base), 72)
	base["orderBy"] = []any{map[string]any{"field": "count_count", "direction": "desc"}}
	assert.Len(t, f.data(t, "/api/public/metrics", base), 2, "an ordered answer is not filled")
	base["timeDimension"] = map[string]any{"granularity": "week"}
	assert.Equal(t, "2024-04-29T00:00:00Z", f.data(t, "/api/public/metrics", base)[0]["time_dimension"], "weeks start on Monday")
	base["timeDimension"] = map[string]any{"granularity": "minute"}
	base["toTimestamp"] = "2024-06-01T00:00:00Z"
	f.refused(t, "/api/public/metrics", base, "coarser granularity")
}

func TestValidation(t *testing.T) {
	f := setup(t)
	count := []any{map[string]any{"measure": "count", "aggregation": "count"}}
	q := func(extra map[string]any) map[string]any {
		out := map[string]any{"view": "observations", "metrics": count, "fromTimestamp": from, "toTimestamp": to}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	byTrace := []any{map[string]any{"field": "traceId"}}
	f.refused(t, "/api/public/v2/metrics", q(map[string]any{"dimensions": byTrace, "timeDimension": map[string]any{"granularity": "day"}}), "time_dimension")
	f.refused(t, "/api/public/v2/metrics", q(map[string]any{"dimensions": byTrace}), "missing_top_n")
	f.refused(t, "/api/public/v2/metrics", q(map[string]any{"dimensions": byTrace, "config": map[string]any{"row_limit": 5},
		"orderBy": []any{map[string]any{"field": "count_count", "direction": "asc"}}}), "invalid_order_by")
	top := f.data(t, "/api/public/v2/metrics", q(map[string]any{"dimensions": byTrace, "config": map[string]any{"row_limit": 1},
		"orderBy": []any{map[string]any{"field": "count_count", "direction": "desc"}}}))
	assert.Equal(t, []map[string]any{{"traceId": "trace-chat", "count_count": "2"}}, top, "a top-N query runs")
	assert.Len(t, f.data(t, "/api/public/metrics", q(map[string]any{"dimensions": byTrace})), 2, "v1 has no top-N rule")

	f.refused(t, "/api/public/v2/metrics", map[string]any{"view": "traces", "metrics": count, "fromTimestamp": from, "toTimestamp": to}, "not part of v2")
	f.refused(t, "/api/public/metrics", q(map[string]any{"view": "spans"}), `"spans"`)
	f.refused(t, "/api/public/metrics", q(map[string]any{"dimensions": []any{map[string]any{"field": "cost"}}}), `"cost"`)
	f.refused(t, "/api/public/metrics", q(map[string]any{"metrics": []any{map[string]any{"measure": "latency", "aggregation": "median"}}}), `"median"`)
	f.refused(t, "/api/public/metrics", q(map[string]any{"metrics": []any{map[string]any{"measure": "uniqueUserIds", "aggregation": "sum"}}}), "count or uniq")
	f.refused(t, "/api/public/metrics", q(map[string]any{"metrics": []any{map[string]any{"measure": "toolCalls", "aggregation": "sum"}}}), "not available")
	f.refused(t, "/api/public/metrics", q(map[string]any{"toTimestamp": from}), "before toTimestamp")
	f.refused(t, "/api/public/metrics", q(map[string]any{"fromTimestamp": "yesterday"}), "fromTimestamp")
	f.refused(t, "/api/public/metrics", q(map[string]any{"orderBy": []any{map[string]any{"field": "name", "direction": "up"}}}), "direction")
	f.refused(t, "/api/public/metrics", q(map[string]any{"config": map[string]any{"bins": 500}}), "config.bins")
	f.refused(t, "/api/public/v2/metrics", q(map[string]any{"config": map[string]any{"row_limit": 5000}}), "config.row_limit")
	f.refused(t, "/api/public/metrics", q(map[string]any{"surprise": true}), "surprise")
	f.refused(t, "/api/public/metrics", q(map[string]any{"filters": []any{map[string]any{"column": "name", "type": "number", "operator": "=", "value": 1}}}), `"name"`)

	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/metrics?query=%7Bnot-json", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "Invalid JSON in query parameter")
	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/metrics", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/metrics?query=%7B%7D", f.a.OrgAuth, nil)
	require.Equal(t, http.StatusForbidden, rec.Code, "organization keys have no project")
}

func TestDaily(t *testing.T) {
	f := setup(t)
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/metrics/daily?fromTimestamp="+from+"&toTimestamp="+to, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	days := apitest.Decode[httpx.List[Day]](t, rec)
	assert.Equal(t, []Day{
		{Date: "2024-05-02", CountTraces: 1, CountObservations: 1, TotalCost: 0.3, Usage: []ModelUsage{
			{Model: "claude", InputUsage: 100, OutputUsage: 50, TotalUsage: 150, CountObservations: 1, CountTraces: 1, TotalCost: 0.3}}},
		{Date: "2024-05-01", CountTraces: 1, CountObservations: 2, TotalCost: 0.03, Usage: []ModelUsage{
			{Model: "gpt-4o", InputUsage: 10, OutputUsage: 5, TotalUsage: 15, CountObservations: 1, CountTraces: 1, TotalCost: 0.03}}},
	}, days.Data)
	assert.EqualValues(t, 2, days.Meta.TotalItems)

	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/metrics/daily?traceName=search&limit=1&fromTimestamp="+from+"&toTimestamp="+to, f.a.ProjectAuth, nil)
	days = apitest.Decode[httpx.List[Day]](t, rec)
	require.Len(t, days.Data, 1)
	assert.Equal(t, "2024-05-02", days.Data[0].Date)
}
