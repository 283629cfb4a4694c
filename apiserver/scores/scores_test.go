package scores

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func setup(t *testing.T) (http.Handler, apitest.Tenant, apitest.Tenant) {
	h, a, b, _ := setupWithStore(t)
	return h, a, b
}

func setupWithStore(t *testing.T) (http.Handler, apitest.Tenant, apitest.Tenant, *controlplane.Store) {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	a, b := apitest.Seed(t, cp, "a"), apitest.Seed(t, cp, "b")
	h, err := httpx.NewRouter(Routes(ch, cp), httpx.Options{Verifier: cp, Logger: zaptest.NewLogger(t)})
	require.NoError(t, err)
	return h, a, b, cp
}

func status(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func create(t *testing.T, h http.Handler, auth string, body map[string]any) string {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/scores", auth, body)
	status(t, rec, http.StatusOK)
	return apitest.Decode[Created](t, rec).ID
}

func list(t *testing.T, h http.Handler, auth, query string) httpx.List[Score] {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores"+query, auth, nil)
	status(t, rec, http.StatusOK)
	return apitest.Decode[httpx.List[Score]](t, rec)
}

func ids(l httpx.List[Score]) []string {
	out := []string{}
	for _, s := range l.Data {
		out = append(out, s.ID)
	}
	return out
}

func TestScoresOfEachType(t *testing.T) {
	h, a, _ := setup(t)
	numeric := create(t, h, a.ProjectAuth, map[string]any{"id": "num-1", "traceId": "trace-1", "observationId": "obs-1",
		"name": "accuracy", "value": 0.75, "comment": "close", "metadata": map[string]any{"judge": "exact"}})
	assert.Equal(t, "num-1", numeric, "client ids are kept")
	create(t, h, a.ProjectAuth, map[string]any{"id": "cat-1", "sessionId": "session-1", "name": "tone", "value": "polite"})
	create(t, h, a.ProjectAuth, map[string]any{"id": "bool-1", "datasetRunId": "run-1", "name": "passed", "value": 1, "dataType": "BOOLEAN"})

	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/num-1", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	got := apitest.Decode[map[string]any](t, rec)
	assert.Equal(t, "trace-1", got["traceId"])
	assert.Equal(t, "obs-1", got["observationId"])
	assert.Equal(t, 0.75, got["value"])
	assert.Equal(t, "NUMERIC", got["dataType"])
	assert.Equal(t, "close", got["comment"])
	assert.Equal(t, map[string]any{"judge": "exact"}, got["metadata"])
	assert.Equal(t, "API", got["source"])
	assert.NotContains(t, got, "stringValue", "numeric scores have no string value")
	for _, k := range []string{"sessionId", "datasetRunId", "configId", "queueId", "authorUserId"} {
		assert.Nil(t, got[k], k)
	}

	all := list(t, h, a.ProjectAuth, "")
	assert.Equal(t, int64(3), all.Meta.TotalItems)
	byID := map[string]Score{}
	for _, s := range all.Data {
		byID[s.ID] = s
	}
	require.NotNil(t, byID["cat-1"].StringValue)
	assert.Equal(t, "polite", *byID["cat-1"].StringValue)
	assert.Equal(t, "CATEGORICAL", byID["cat-1"].DataType)
	require.NotNil(t, byID["bool-1"].StringValue)
	assert.Equal(t, "True", *byID["bool-1"].StringValue)
	assert.Equal(t, 1.0, byID["bool-1"].Value)

	assert.Equal(t, []string{"bool-1"}, ids(list(t, h, a.ProjectAuth, "?datasetRunId=run-1")))
	assert.Equal(t, []string{"cat-1"}, ids(list(t, h, a.ProjectAuth, "?sessionId=session-1")))
	assert.Equal(t, []string{"num-1"}, ids(list(t, h, a.ProjectAuth, "?traceId=trace-1&observationId=obs-1")))
	assert.Equal(t, []string{"cat-1"}, ids(list(t, h, a.ProjectAuth, "?dataType=CATEGORICAL")))
	assert.Equal(t, []string{"num-1"}, ids(list(t, h, a.ProjectAuth, "?operator=%3E&value=0.5&name=accuracy")))
	assert.ElementsMatch(t, []string{"num-1", "bool-1"}, ids(list(t, h, a.ProjectAuth, "?scoreIds=num-1,bool-1")))
	page := list(t, h, a.ProjectAuth, "?limit=2&page=2")
	assert.Len(t, page.Data, 1)
	assert.Equal(t, int64(2), page.Meta.TotalPages)

	// Re-sending a score id replaces the score.
	create(t, h, a.ProjectAuth, map[string]any{"id": "num-1", "traceId": "trace-1", "name": "accuracy", "value": 0.25})
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/num-1", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, 0.25, apitest.Decode[Score](t, rec).Value)
	assert.Equal(t, int64(3), list(t, h, a.ProjectAuth, "").Meta.TotalItems)
}

// The structured filter selects scores by their fields and metadata,
// together with the simple parameters.
func TestScoreFilter(t *testing.T) {
	h, a, b := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"id": "num-1", "traceId": "trace-1", "name": "accuracy", "value": 0.75,
		"metadata": map[string]any{"judge": map[string]any{"model": "exact"}}})
	create(t, h, a.ProjectAuth, map[string]any{"id": "num-2", "traceId": "trace-2", "name": "accuracy", "value": 0.25})
	create(t, h, a.ProjectAuth, map[string]any{"id": "cat-1", "traceId": "trace-2", "name": "tone", "value": "polite"})
	create(t, h, b.ProjectAuth, map[string]any{"id": "theirs", "traceId": "trace-1", "name": "accuracy", "value": 0.9})
	for filter, want := range map[string][]string{
		`[{"column":"value","type":"number","operator":">","value":0.5}]`:                                                                                {"num-1"},
		`[{"column":"name","type":"stringOptions","operator":"any of","value":["accuracy"]}]`:                                                            {"num-2", "num-1"},
		`[{"column":"metadata","type":"stringObject","key":"judge.model","operator":"=","value":"exact"}]`:                                               {"num-1"},
		`[{"column":"stringValue","type":"string","operator":"starts with","value":"POL"}]`:                                                              {"cat-1"},
		`[{"column":"traceId","type":"string","operator":"=","value":"trace-2"},{"column":"dataType","type":"string","operator":"=","value":"NUMERIC"}]`: {"num-2"},
	} {
		got := ids(list(t, h, a.ProjectAuth, "?filter="+url.QueryEscape(filter)))
		assert.ElementsMatch(t, want, got, filter)
	}
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores?filter="+url.QueryEscape(`[{"column":"score","type":"number","operator":">","value":1}]`), a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), `\"score\"`)
}

func TestScoreValidationAndQueries(t *testing.T) {
	h, a, _ := setup(t)
	for field, body := range map[string]map[string]any{
		"traceId": {"name": "n", "value": 1},
		"name":    {"traceId": "t", "value": 1},
		"value":   {"traceId": "t", "name": "n"},
		"source":  {"traceId": "t", "name": "n", "value": 1, "source": "EVAL"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), field)
	}
	for param, query := range map[string]string{
		"operator":      "?operator=~&value=1",
		"value":         "?operator=%3E&value=high",
		"dataType":      "?dataType=SENTIMENT",
		"fromTimestamp": "?fromTimestamp=soon",
		"fields":        "?fields=score",
		"limit":         "?limit=0",
	} {
		rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores"+query, a.ProjectAuth, nil)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), param)
	}
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores?value=1", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/missing", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/scores/missing", a.ProjectAuth, nil), http.StatusNotFound)
}

func TestScoreConfigs(t *testing.T) {
	h, a, b := setup(t)
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/score-configs", a.ProjectAuth, map[string]any{
		"name": "quality", "dataType": "CATEGORICAL", "description": "graded",
		"categories": []map[string]any{{"value": 0, "label": "bad"}, {"value": 1, "label": "good"}}})
	status(t, rec, http.StatusOK)
	cat := apitest.Decode[Config](t, rec)
	assert.Equal(t, "project-a", cat.ProjectID)
	assert.Len(t, cat.Categories, 2)

	rec = apitest.Do(t, h, http.MethodPost, "/api/public/score-configs", a.ProjectAuth,
		map[string]any{"name": "correct", "dataType": "BOOLEAN"})
	status(t, rec, http.StatusOK)
	boolean := apitest.Decode[map[string]any](t, rec)
	assert.Equal(t, []any{map[string]any{"value": 1.0, "label": "True"}, map[string]any{"value": 0.0, "label": "False"}}, boolean["categories"])
	assert.NotContains(t, boolean, "minValue")

	rec = apitest.Do(t, h, http.MethodPost, "/api/public/score-configs", a.ProjectAuth,
		map[string]any{"name": "acc", "dataType": "NUMERIC", "minValue": 0, "maxValue": 10})
	status(t, rec, http.StatusOK)
	num := apitest.Decode[Config](t, rec)

	// A score naming a config is checked against it and takes its name.
	create(t, h, a.ProjectAuth, map[string]any{"id": "s-cat", "traceId": "t", "name": "whatever", "value": "good", "configId": cat.ID})
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/s-cat", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	sc := apitest.Decode[Score](t, rec)
	assert.Equal(t, "quality", sc.Name)
	assert.Equal(t, 1.0, sc.Value)
	assert.Equal(t, cat.ID, *sc.ConfigID)
	assert.Equal(t, []string{"s-cat"}, ids(list(t, h, a.ProjectAuth, "?configId="+cat.ID)))
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectAuth,
		map[string]any{"traceId": "t", "name": "acc", "value": 11, "configId": num.ID})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "values from 0 to 10")
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/scores", b.ProjectAuth,
		map[string]any{"traceId": "t", "name": "acc", "value": 1, "configId": num.ID})
	status(t, rec, http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/score-configs/"+num.ID, a.ProjectAuth, map[string]any{"isArchived": true})
	status(t, rec, http.StatusOK)
	assert.True(t, apitest.Decode[Config](t, rec).IsArchived)
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectAuth,
		map[string]any{"traceId": "t", "name": "acc", "value": 1, "configId": num.ID})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "archived")
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/score-configs/"+num.ID, a.ProjectAuth, map[string]any{"maxValue": 100})
	status(t, rec, http.StatusOK)
	widened := apitest.Decode[Config](t, rec)
	assert.Equal(t, 100.0, *widened.MaxValue)
	assert.Nil(t, widened.MinValue, "sending a bound replaces the range")
	status(t, apitest.Do(t, h, http.MethodPatch, "/api/public/score-configs/"+num.ID, a.ProjectAuth, map[string]any{}), http.StatusBadRequest)

	configs := apitest.Do(t, h, http.MethodGet, "/api/public/score-configs?limit=2", a.ProjectAuth, nil)
	status(t, configs, http.StatusOK)
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 2, TotalItems: 3, TotalPages: 2}, apitest.Decode[httpx.List[Config]](t, configs).Meta)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/score-configs/"+cat.ID, a.ProjectAuth, nil), http.StatusOK)

	for field, body := range map[string]map[string]any{
		"dataType":   {"name": "x", "dataType": "TEXT"},
		"categories": {"name": "x", "dataType": "CATEGORICAL"},
		"minValue":   {"name": "x", "dataType": "NUMERIC", "minValue": 2, "maxValue": 1},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/score-configs", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), field)
	}

	// Project b neither reads nor changes a's configs.
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/score-configs/"+cat.ID, b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPatch, "/api/public/score-configs/"+cat.ID, b.ProjectAuth,
		map[string]any{"isArchived": true}), http.StatusNotFound)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/score-configs", b.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Empty(t, apitest.Decode[httpx.List[Config]](t, rec).Data)
}

func TestScoreIsolationAndDelete(t *testing.T) {
	h, a, b := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"id": "mine", "traceId": "t", "name": "n", "value": 1})
	create(t, h, b.ProjectAuth, map[string]any{"id": "theirs", "traceId": "t", "name": "n", "value": 2})

	assert.Equal(t, []string{"mine"}, ids(list(t, h, a.ProjectAuth, "")))
	assert.Equal(t, []string{"theirs"}, ids(list(t, h, b.ProjectAuth, "")))
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/mine", b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/scores/mine", b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores", a.OrgAuth, nil), http.StatusForbidden)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/scores", "", map[string]any{}), http.StatusUnauthorized)

	rec := apitest.Do(t, h, http.MethodDelete, "/api/public/scores/mine", a.ProjectAuth, nil)
	status(t, rec, http.StatusAccepted)
	assert.JSONEq(t, `{"message":"Score deletion queued successfully"}`, rec.Body.String())
	require.Eventually(t, func() bool {
		return apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/mine", a.ProjectAuth, nil).Code == http.StatusNotFound
	}, 30*time.Second, 100*time.Millisecond)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/theirs", b.ProjectAuth, nil), http.StatusOK)
}

// A public key alone (Bearer) may create scores in its project, as browser
// feedback widgets do, and nothing more.
func TestPublicKeyAloneCreatesScores(t *testing.T) {
	h, a, b, cp := setupWithStore(t)
	id := create(t, h, a.ProjectBearer, map[string]any{"id": "feedback-1", "traceId": "trace-1", "name": "thumbs", "value": 1})
	assert.Equal(t, []string{id}, ids(list(t, h, a.ProjectAuth, "?name=thumbs")), "stored in the key's project")
	assert.Empty(t, list(t, h, b.ProjectAuth, "?name=thumbs").Data)

	for _, req := range []struct{ method, target string }{
		{http.MethodGet, "/api/public/v2/scores"},
		{http.MethodGet, "/api/public/v2/scores/feedback-1"},
		{http.MethodDelete, "/api/public/scores/feedback-1"},
		{http.MethodGet, "/api/public/score-configs"},
	} {
		rec := apitest.Do(t, h, req.method, req.target, a.ProjectBearer, nil)
		status(t, rec, http.StatusForbidden)
		assert.Contains(t, rec.Body.String(), "insufficient permissions", req.target)
	}

	// It cannot overwrite a score whose id it knows, nor pose as an
	// evaluator or an annotator: the review's forgery, refused.
	create(t, h, a.ProjectAuth, map[string]any{"id": "s-important", "traceId": "trace-1", "name": "quality", "value": 0.1})
	for _, forged := range []map[string]any{
		{"id": "s-important", "traceId": "trace-1", "name": "quality", "value": 0.99, "comment": "forged"},
		{"id": "feedback-1", "traceId": "trace-1", "name": "thumbs", "value": 0},
		{"traceId": "trace-1", "name": "quality", "value": 1, "source": "ANNOTATION"},
		{"traceId": "trace-1", "name": "quality", "value": 1, "source": "EVAL"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectBearer, forged)
		status(t, rec, http.StatusForbidden)
		assert.Contains(t, rec.Body.String(), "Access Scope Denied")
	}
	kept := apitest.Decode[Score](t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/s-important", a.ProjectAuth, nil))
	assert.Equal(t, 0.1, kept.Value)
	assert.Equal(t, "API", kept.Source)

	require.NoError(t, cp.RevokeAPIKey(context.Background(), a.OrgID, a.ProjectID, a.ProjectKeyID))
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectBearer,
		map[string]any{"traceId": "trace-1", "name": "thumbs", "value": 0})
	status(t, rec, http.StatusUnauthorized)
}

// The v1 read paths answer as the v2 ones, within the key's project.
func TestV1ReadPaths(t *testing.T) {
	h, a, b := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"id": "v1-a", "traceId": "trace-1", "name": "accuracy", "value": 0.5})
	create(t, h, b.ProjectAuth, map[string]any{"id": "v1-b", "traceId": "trace-1", "name": "accuracy", "value": 0.25})

	for _, pair := range [][2]string{
		{"/api/public/scores?name=accuracy", "/api/public/v2/scores?name=accuracy"},
		{"/api/public/scores/v1-a", "/api/public/v2/scores/v1-a"},
	} {
		v1 := apitest.Do(t, h, http.MethodGet, pair[0], a.ProjectAuth, nil)
		status(t, v1, http.StatusOK)
		v2 := apitest.Do(t, h, http.MethodGet, pair[1], a.ProjectAuth, nil)
		status(t, v2, http.StatusOK)
		assert.JSONEq(t, v2.Body.String(), v1.Body.String(), pair[0])
		assert.Contains(t, v1.Body.String(), `"id":"v1-a"`)
		assert.NotContains(t, v1.Body.String(), "v1-b", "another project's score")
	}
	l := apitest.Decode[httpx.List[Score]](t, apitest.Do(t, h, http.MethodGet, "/api/public/scores", a.ProjectAuth, nil))
	assert.Equal(t, []string{"v1-a"}, ids(l))
	assert.Equal(t, int64(1), l.Meta.TotalItems)

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/scores/v1-b", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/scores?limit=0", a.ProjectAuth, nil), http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/scores", a.ProjectBearer, nil), http.StatusForbidden)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/scores/v1-a", a.OrgAuth, nil), http.StatusForbidden)
}
