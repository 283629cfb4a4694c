package traces

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
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

const (
	traceChat   = "0af7651916cd43dd8448eb211c80319c"
	traceSearch = "1bf7651916cd43dd8448eb211c80319d"
	traceOther  = "2cf7651916cd43dd8448eb211c80319e" // project b's
)

type fixture struct {
	h    http.Handler
	ch   *chstore.Store
	a, b apitest.Tenant
}

// setup stores two traces in project a and one in project b:
//   - chat (Base): root span + generation, user u1, session s1, tags x y,
//     environment prod, release r1, version v1, metadata, input and output;
//   - search (Base+1h): one span, user u2, tag x, environment default.
func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	f := fixture{ch: chtest.Store(t), a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}

	root := apitest.Obs(f.a.ProjectID, traceChat, "a000000000000001", 0)
	root.EndTime = apitest.Base.Add(3 * time.Second).UnixMicro()
	root.TraceName, root.UserID, root.SessionID = "chat", "u1", "s1"
	root.Tags, root.Environment, root.Release, root.Version = []string{"y", "x"}, "prod", "r1", "v1"
	root.TraceInput, root.TraceOutput = `{"question":"hi"}`, `"hello"`
	root.TraceMetadata, root.IsRoot = `{"team":"search"}`, true
	gen := apitest.Obs(f.a.ProjectID, traceChat, "a000000000000002", time.Second)
	gen.ParentID, gen.Type, gen.Name, gen.Environment = root.ID, model.TypeGeneration, "llm", "prod"
	gen.Model, gen.ModelParameters = "gpt-4o", `{"temperature":0.2}`
	gen.UsageDetails = map[string]int64{"input": 10, "input_cached_tokens": 2, "output": 5, "total": 17}
	gen.CostDetails = map[string]float64{"input": 0.01, "output": 0.02, "total": 0.03}
	gen.CompletionStartTime = apitest.Base.Add(1500 * time.Millisecond).UnixMicro()
	gen.Input, gen.Output = `[{"role":"user","content":"hi"}]`, "plain answer"

	search := apitest.Obs(f.a.ProjectID, traceSearch, "b000000000000001", time.Hour)
	search.TraceName, search.UserID, search.Tags, search.IsRoot = "search", "u2", []string{"x"}, true

	other := apitest.Obs(f.b.ProjectID, traceOther, "c000000000000001", 0)
	other.TraceName, other.UserID = "other", "u1"
	apitest.Insert(t, f.ch, root, gen, search, other)
	apitest.InsertScores(t, f.ch,
		chstore.Score{ProjectID: f.a.ProjectID, ID: "score-1", TraceID: traceChat, Name: "quality", Value: 0.9,
			DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Environment: "prod", Timestamp: apitest.Base.UnixMicro(), Metadata: "{}"},
		chstore.Score{ProjectID: f.a.ProjectID, ID: "score-2", TraceID: traceChat, ObservationID: gen.ID, Name: "tone",
			StringValue: "polite", DataType: chstore.ScoreCategorical, Source: chstore.SourceEval, Environment: "prod",
			Timestamp: apitest.Base.Add(time.Minute).UnixMicro(), Metadata: "{}"},
	)

	var err error
	f.h, err = httpx.NewRouter(Routes(f.ch, cp, "/gb"), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

func (f fixture) list(t *testing.T, query string) httpx.List[ListItem] {
	t.Helper()
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces?"+query, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return apitest.Decode[httpx.List[ListItem]](t, rec)
}

func ids(items []ListItem) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

func TestList(t *testing.T) {
	f := setup(t)

	all := f.list(t, "")
	assert.Equal(t, []string{traceSearch, traceChat}, ids(all.Data), "newest first")
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 50, TotalItems: 2, TotalPages: 1}, all.Meta)

	chat := all.Data[1]
	assert.Equal(t, "chat", *chat.Name)
	assert.Equal(t, "/gb/project/project-a/traces/"+traceChat, chat.HTMLPath)
	assert.InDelta(t, 3.0, chat.Latency, 1e-9)
	assert.InDelta(t, 0.03, chat.TotalCost, 1e-9)
	assert.Equal(t, []string{"a000000000000001", "a000000000000002"}, chat.Observations)
	assert.Equal(t, []string{"score-1", "score-2"}, chat.Scores, "the trace's and its observations' scores, oldest first")
	assert.Equal(t, []string{}, all.Data[0].Scores, "a trace without scores")
	assert.Equal(t, []string{"x", "y"}, chat.Tags)
	assert.Equal(t, "prod", chat.Environment)
	assert.Equal(t, "u1", *chat.UserID)
	assert.Equal(t, "s1", *chat.SessionID)
	assert.JSONEq(t, `{"question":"hi"}`, string(chat.Input))
	assert.JSONEq(t, `"hello"`, string(chat.Output))
	assert.JSONEq(t, `{"team":"search"}`, string(chat.Metadata))
	assert.Equal(t, "project-a", chat.ProjectID)
	assert.Equal(t, apitest.Base.UnixMicro(), time.Time(chat.Timestamp).UnixMicro())

	for query, want := range map[string][]string{
		"userId=u1":                            {traceChat},
		"name=search":                          {traceSearch},
		"sessionId=s1":                         {traceChat},
		"tags=x":                               {traceSearch, traceChat},
		"tags=x&tags=y":                        {traceChat},
		"tags=z":                               {},
		"environment=prod":                     {traceChat},
		"environment=prod&environment=default": {traceSearch, traceChat},
		"release=r1":                           {traceChat},
		"version=v1":                           {traceChat},
		"fromTimestamp=2024-05-01T12:30:00Z":   {traceSearch},
		"toTimestamp=2024-05-01T12:30:00Z":     {traceChat},
		"fromTimestamp=2024-05-01T13:30:00%2B01:00": {traceSearch},
		"orderBy=timestamp.asc":                     {traceChat, traceSearch},
		"orderBy=name.asc":                          {traceChat, traceSearch},
		"orderBy=userId.desc":                       {traceSearch, traceChat},
		"limit=1&page=2":                            {traceChat},
	} {
		t.Run(query, func(t *testing.T) {
			assert.Equal(t, want, ids(f.list(t, query).Data))
		})
	}

	paged := f.list(t, "limit=1")
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 1, TotalItems: 2, TotalPages: 2}, paged.Meta)

	core := f.list(t, "fields=core&userId=u1").Data[0]
	assert.Nil(t, core.Input)
	assert.Nil(t, core.Metadata)
	assert.Equal(t, []string{}, core.Observations)
	assert.Equal(t, []string{}, core.Scores)
	assert.Equal(t, -1.0, core.Latency)
	assert.Equal(t, -1.0, core.TotalCost)

	scored := f.list(t, "fields=core,scores&limit=1&page=2").Data[0]
	assert.Equal(t, traceChat, scored.ID)
	assert.Equal(t, []string{"score-1", "score-2"}, scored.Scores)
	assert.Equal(t, []string{}, scored.Observations)
}

func TestListBadParameters(t *testing.T) {
	f := setup(t)
	for query, param := range map[string]string{
		"page=0":                          "page",
		"limit=101":                       "limit",
		"limit=ten":                       "limit",
		"fromTimestamp=yesterday":         "fromTimestamp",
		"toTimestamp=1714564800":          "toTimestamp",
		"orderBy=cost.desc":               "orderBy",
		"orderBy=timestamp":               "orderBy",
		"orderBy=bookmarked.asc":          "orderBy",
		"fields=core,everything":          "fields",
		"filter=" + url.QueryEscape(`{}`): "filter",
		"filter=" + url.QueryEscape(`[{"column":"cost","type":"number","operator":">","value":1}]`):             `"cost"`,
		"filter=" + url.QueryEscape(`[{"column":"name","type":"string","operator":"=","value":1}]`):             "value must be a string",
		"filter=" + url.QueryEscape(`[{"column":"name","type":"string","operator":"like","value":"a"}]`):        `operator "like"`,
		"filter=" + url.QueryEscape(`[{"column":"metadata","type":"stringObject","operator":"=","value":"a"}]`): "key",
		"filter=" + url.QueryEscape(`[{"column":"name","type":"string","operator":"=","value":"a","x":1}]`):     "unknown field",
	} {
		t.Run(query, func(t *testing.T) {
			rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces?"+query, f.a.ProjectAuth, nil)
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			body := apitest.Decode[map[string]string](t, rec)
			assert.Contains(t, body["message"], param)
			assert.Equal(t, "InvalidRequestError", body["error"])
		})
	}
}

// The structured filter selects traces by trace-level fields, metadata
// (nested keys too), tags, numbers and scores, together with the simple
// parameters.
func TestListFilter(t *testing.T) {
	f := setup(t)
	for name, c := range map[string]struct {
		filter string
		extra  string
		want   []string
	}{
		"name":             {`[{"column":"name","type":"string","operator":"=","value":"chat"}]`, "", []string{traceChat}},
		"name contains":    {`[{"column":"name","type":"string","operator":"contains","value":"EAR"}]`, "", []string{traceSearch}},
		"metadata":         {`[{"column":"metadata","type":"stringObject","key":"team","operator":"=","value":"search"}]`, "", []string{traceChat}},
		"metadata missing": {`[{"column":"metadata","type":"null","key":"team","operator":"is null"}]`, "", []string{traceSearch}},
		"tags all of":      {`[{"column":"tags","type":"arrayOptions","operator":"all of","value":["x","y"]}]`, "", []string{traceChat}},
		"tags none of":     {`[{"column":"tags","type":"arrayOptions","operator":"none of","value":["y"]}]`, "", []string{traceSearch}},
		"cost":             {`[{"column":"totalCost","type":"number","operator":">","value":0.01}]`, "", []string{traceChat}},
		"user options":     {`[{"column":"userId","type":"stringOptions","operator":"any of","value":["u1","u2"]}]`, "", []string{traceSearch, traceChat}},
		"with a parameter": {`[{"column":"userId","type":"stringOptions","operator":"any of","value":["u1","u2"]}]`, "&userId=u2", []string{traceSearch}},
		"timestamp":        {`[{"column":"timestamp","type":"datetime","operator":">=","value":"2024-05-01T12:30:00Z"}]`, "", []string{traceSearch}},
		"other project":    {`[{"column":"name","type":"string","operator":"=","value":"other"}]`, "", []string{}},
		"no filter":        {`[]`, "", []string{traceSearch, traceChat}},
		"score average":    {`[{"column":"scores_avg","type":"numberObject","key":"quality","operator":">=","value":0.5}]`, "", []string{traceChat}},
		"score low":        {`[{"column":"scores_avg","type":"numberObject","key":"quality","operator":"<","value":0.5}]`, "", []string{}},
		"category":         {`[{"column":"score_categories","type":"categoryOptions","key":"tone","operator":"any of","value":["polite"]}]`, "", []string{traceChat}},
		"not category":     {`[{"column":"score_categories","type":"categoryOptions","key":"tone","operator":"none of","value":["polite"]}]`, "", []string{traceSearch}},
	} {
		t.Run(name, func(t *testing.T) {
			rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces?filter="+url.QueryEscape(c.filter)+c.extra, f.a.ProjectAuth, nil)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			list := apitest.Decode[httpx.List[ListItem]](t, rec)
			ids := []string{}
			for _, tr := range list.Data {
				ids = append(ids, tr.ID)
			}
			assert.Equal(t, c.want, ids)
		})
	}
}

func TestGet(t *testing.T) {
	f := setup(t)
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+traceChat, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	d := apitest.Decode[Detail](t, rec)
	assert.Equal(t, traceChat, d.ID)
	assert.Equal(t, "/gb/project/project-a/traces/"+traceChat, d.HTMLPath)
	assert.InDelta(t, 3.0, d.Latency, 1e-9)
	assert.InDelta(t, 0.03, d.TotalCost, 1e-9)

	require.Len(t, d.Observations, 2)
	root, gen := d.Observations[0], d.Observations[1]
	assert.Equal(t, "a000000000000001", root.ID)
	assert.Nil(t, root.ParentObservationID)
	assert.Equal(t, "GENERATION", gen.Type)
	assert.Equal(t, root.ID, *gen.ParentObservationID)
	assert.Equal(t, "gpt-4o", *gen.Model)
	assert.JSONEq(t, `{"temperature":0.2}`, string(gen.ModelParameters))
	assert.JSONEq(t, `[{"role":"user","content":"hi"}]`, string(gen.Input))
	assert.JSONEq(t, `"plain answer"`, string(gen.Output))
	assert.Equal(t, int64(12), gen.Usage.Input, "input sums every input key")
	assert.Equal(t, int64(5), gen.Usage.Output)
	assert.Equal(t, int64(17), gen.Usage.Total)
	assert.Equal(t, map[string]int64{"input": 10, "input_cached_tokens": 2, "output": 5, "total": 17}, gen.UsageDetails)
	assert.InDelta(t, 0.03, *gen.CalculatedTotalCost, 1e-9)
	assert.InDelta(t, 1.0, *gen.Latency, 1e-9)
	assert.InDelta(t, 0.5, *gen.TimeToFirstToken, 1e-9)

	require.Len(t, d.Scores, 2)
	assert.Equal(t, "score-1", d.Scores[0].ID)
	assert.Nil(t, d.Scores[0].StringValue, "numeric scores have no string value")
	assert.Equal(t, "polite", *d.Scores[1].StringValue)
	assert.Equal(t, "a000000000000002", *d.Scores[1].ObservationID)

	// The raw body uses the exact field names and formats the SDKs read.
	raw := rec.Body.String()
	for _, field := range []string{`"htmlPath"`, `"totalCost"`, `"usageDetails"`, `"costDetails"`, `"calculatedTotalCost"`,
		`"timestamp":"2024-05-01T12:00:00.000Z"`, `"startTime":"2024-05-01T12:00:01.000Z"`} {
		assert.Contains(t, raw, field)
	}

	for _, id := range []string{"ffffffffffffffffffffffffffffffff", traceOther} {
		rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+id, f.a.ProjectAuth, nil)
		require.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
		assert.Equal(t, fmt.Sprintf("Trace %s not found within authorized project", id), apitest.Decode[map[string]string](t, rec)["message"])
	}
}

// The trace view carries every score of the trace, on whatever day it was
// given, oldest first, and none of another trace.
func TestGetHasEveryScore(t *testing.T) {
	f := setup(t)
	var scores []chstore.Score
	for i := range 1001 {
		scores = append(scores, chstore.Score{ProjectID: f.a.ProjectID, ID: fmt.Sprintf("search-%04d", i), TraceID: traceSearch,
			Name: "relevance", Value: float64(i), DataType: chstore.ScoreNumeric, Source: chstore.SourceEval, Environment: "default",
			Timestamp: apitest.Base.Add(time.Duration(i) * time.Hour).UnixMicro(), Metadata: "{}"})
	}
	apitest.InsertScores(t, f.ch, scores...)

	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+traceSearch, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	d := apitest.Decode[Detail](t, rec)
	require.Len(t, d.Scores, 1001)
	for i, sc := range d.Scores {
		assert.Equal(t, fmt.Sprintf("search-%04d", i), sc.ID)
		require.NotNil(t, sc.TraceID)
		assert.Equal(t, traceSearch, *sc.TraceID)
	}
}

func TestDelete(t *testing.T) {
	f := setup(t)
	rec := apitest.Do(t, f.h, http.MethodDelete, "/api/public/traces/"+traceChat, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"message":"Trace deleted successfully"}`, rec.Body.String())
	assert.Equal(t, http.StatusNotFound, apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+traceChat, f.a.ProjectAuth, nil).Code)
	assert.Equal(t, []string{traceSearch}, ids(f.list(t, "").Data))
	assert.Equal(t, http.StatusNotFound, apitest.Do(t, f.h, http.MethodDelete, "/api/public/traces/"+traceChat, f.a.ProjectAuth, nil).Code)

	// Project b's trace cannot be deleted through project a's key.
	assert.Equal(t, http.StatusNotFound, apitest.Do(t, f.h, http.MethodDelete, "/api/public/traces/"+traceOther, f.a.ProjectAuth, nil).Code)
	assert.Equal(t, http.StatusOK, apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+traceOther, f.b.ProjectAuth, nil).Code)
}

func TestDeleteMany(t *testing.T) {
	f := setup(t)
	for name, body := range map[string]any{
		"missing ids": map[string]any{},
		"empty ids":   DeleteRequest{TraceIDs: []string{}},
		"empty id":    DeleteRequest{TraceIDs: []string{""}},
		"too many":    DeleteRequest{TraceIDs: strings.Split(strings.Repeat("x,", 1000)+"x", ",")},
		"wrong type":  map[string]any{"traceIds": "abc"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := apitest.Do(t, f.h, http.MethodDelete, "/api/public/traces", f.a.ProjectAuth, body)
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
		})
	}
	// Project b's id in project a's batch deletes nothing of project b.
	rec := apitest.Do(t, f.h, http.MethodDelete, "/api/public/traces", f.a.ProjectAuth,
		DeleteRequest{TraceIDs: []string{traceChat, traceSearch, traceOther}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"message":"Traces deleted successfully"}`, rec.Body.String())
	assert.Empty(t, f.list(t, "").Data)
	assert.Equal(t, http.StatusOK, apitest.Do(t, f.h, http.MethodGet, "/api/public/traces/"+traceOther, f.b.ProjectAuth, nil).Code)
}
