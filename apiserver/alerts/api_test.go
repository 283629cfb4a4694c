package alerts

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

func (e env) handler(t *testing.T) http.Handler {
	h, err := httpx.NewRouter(Routes(e.svc), httpx.Options{Verifier: e.cp})
	require.NoError(t, err)
	return h
}

func validBody(url string) map[string]any {
	return map[string]any{
		"name": "slow llm",
		"query": map[string]any{"view": "observations", "metric": map[string]any{"measure": "latency", "aggregation": "p95"},
			"filters": []any{map[string]any{"column": "name", "operator": "=", "type": "string", "value": "llm"}}},
		"operator": ">", "threshold": 1000, "window": "15m", "interval": "2m", "for": 3,
		"target": map[string]any{"url": url, "format": "slack"},
	}
}

func with(body map[string]any, key string, value any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	if value == nil {
		delete(out, key)
	} else {
		out[key] = value
	}
	return out
}

func TestAlertsAPI(t *testing.T) {
	e := setup(t)
	h := e.handler(t)
	auth := e.a.ProjectAuth
	const hook = "http://127.0.0.1:9/hook"

	rec := apitest.Do(t, h, http.MethodPost, "/api/public/alerts", auth, validBody(hook))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	a := apitest.Decode[Alert](t, rec)
	assert.Equal(t, "slow llm", a.Name)
	assert.Equal(t, "15m", a.Window)
	assert.Equal(t, "2m", a.Interval)
	assert.Equal(t, 3, a.For)
	assert.Equal(t, Target{URL: hook, Format: "slack"}, a.Target)
	assert.Equal(t, "no_data", a.State)
	assert.Nil(t, a.Denominator)
	assert.Nil(t, a.LastValue)
	assert.Nil(t, a.LastEvaluatedAt)
	require.NotNil(t, a.NextEvaluationAt, "due at once")
	assert.Equal(t, "llm", a.Query.Filters[0].Value)

	for name, tc := range map[string]struct {
		body map[string]any
		want string
	}{
		"unknown view": {with(validBody(hook), "query", map[string]any{"view": "spans",
			"metric": map[string]any{"measure": "count", "aggregation": "count"}}), `query: unknown view \"spans\"`},
		"unknown measure": {with(validBody(hook), "query", map[string]any{"view": "observations",
			"metric": map[string]any{"measure": "speed", "aggregation": "avg"}}), "query: "},
		"histogram": {with(validBody(hook), "query", map[string]any{"view": "observations",
			"metric": map[string]any{"measure": "latency", "aggregation": "histogram"}}), "an alert compares one"},
		"bad filter": {with(validBody(hook), "query", map[string]any{"view": "observations",
			"metric":  map[string]any{"measure": "count", "aggregation": "count"},
			"filters": []any{map[string]any{"column": "name", "operator": "~", "type": "string", "value": "x"}}}), "query: "},
		"bad denominator": {with(validBody(hook), "denominator", map[string]any{"view": "observations",
			"metric": map[string]any{"measure": "count", "aggregation": "nope"}}), "denominator: "},
		"missing":           {with(with(validBody(hook), "query", nil), "target", nil), "Missing required fields: query, target"},
		"operator":          {with(validBody(hook), "operator", "=="), "operator must be one of"},
		"window":            {with(validBody(hook), "window", "2d"), "window \\\"2d\\\" is not a duration"},
		"window too long":   {with(validBody(hook), "window", "48h"), "window must be whole seconds from 1m0s to 24h0m0s"},
		"interval too fast": {with(validBody(hook), "interval", 5), "interval must be whole seconds"},
		"for":               {with(validBody(hook), "for", 0), "for must be 1 to 100"},
		"format":            {with(validBody(hook), "target", map[string]any{"url": hook, "format": "teams"}), "format must be one of json, slack"},
		"egress":            {with(validBody(hook), "target", map[string]any{"url": "http://169.254.169.254/latest"}), "Invalid target url"},
		"unknown field":     {with(validBody(hook), "severity", "high"), "severity"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/alerts", auth, tc.body)
		assert.Equal(t, http.StatusBadRequest, rec.Code, name)
		assert.Contains(t, rec.Body.String(), tc.want, name)
	}

	// Another project sees none of it.
	other := e.b.ProjectAuth
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api/public/alerts/" + a.ID}, {http.MethodPatch, "/api/public/alerts/" + a.ID},
		{http.MethodDelete, "/api/public/alerts/" + a.ID}, {http.MethodGet, "/api/public/alerts/" + a.ID + "/history"},
	} {
		var body any
		if req.method == http.MethodPatch {
			body = map[string]any{"paused": true}
		}
		rec := apitest.Do(t, h, req.method, req.path, other, body)
		assert.Equal(t, http.StatusNotFound, rec.Code, req.method+" "+req.path)
	}
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/alerts", other, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Empty(t, apitest.Decode[httpx.List[Alert]](t, rec).Data)

	// Evaluate once so there is state and history to read.
	apitest.Insert(t, e.ch, generation(e.a.ProjectID, "s1", "llm", t0.Add(-time.Minute), 3*time.Second))
	e.evaluator(t, "").RunDue(context.Background())
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/alerts/"+a.ID, auth, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	a = apitest.Decode[Alert](t, rec)
	assert.Equal(t, "pending", a.State)
	assert.Equal(t, 1, a.Breaches)
	assert.Equal(t, 3000.0, *a.LastValue)
	assert.Equal(t, httpx.Timestamp(t0), *a.LastEvaluatedAt)
	assert.Equal(t, httpx.Timestamp(t0.Add(2*time.Minute)), *a.NextEvaluationAt)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/alerts/"+a.ID+"/history", auth, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	history := apitest.Decode[httpx.List[Transition]](t, rec)
	require.Len(t, history.Data, 1)
	assert.Equal(t, Transition{ID: history.Data[0].ID, Time: httpx.Timestamp(t0), From: "no_data", To: "pending", Value: num(3000)},
		history.Data[0])

	// PATCH: a ratio, then pause; the rest stays.
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/alerts/"+a.ID, auth, map[string]any{
		"denominator": map[string]any{"view": "observations", "metric": map[string]any{"measure": "count", "aggregation": "count"}},
		"threshold":   0.5, "paused": true})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	a = apitest.Decode[Alert](t, rec)
	require.NotNil(t, a.Denominator)
	assert.Equal(t, "count", a.Denominator.Metric.Measure)
	assert.Equal(t, 0.5, a.Threshold)
	assert.True(t, a.Paused)
	assert.Nil(t, a.NextEvaluationAt, "paused")
	assert.Equal(t, 0, a.Breaches, "a changed rule counts afresh")
	assert.Equal(t, "15m", a.Window)
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/alerts/"+a.ID, auth, map[string]any{"denominator": nil, "window": "1x"})
	assert.Equal(t, http.StatusBadRequest, rec.Code, "nothing is saved when a field is wrong")
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/alerts/"+a.ID, auth, map[string]any{"denominator": nil})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Nil(t, apitest.Decode[Alert](t, rec).Denominator)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/alerts", auth, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	list := apitest.Decode[httpx.List[Alert]](t, rec)
	require.Len(t, list.Data, 1)
	assert.EqualValues(t, 1, list.Meta.TotalItems)

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/alerts/"+a.ID, auth, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/alerts/"+a.ID+"/history", auth, nil)
	assert.Equal(t, http.StatusNotFound, rec.Code)
}
