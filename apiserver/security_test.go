package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// sharedTrace exists in both projects, with different content.
const sharedTrace = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"

// tenantData is what one tenant's project holds in ClickHouse.
type tenantData struct {
	apitest.Tenant
	trace, observation, session string
}

type server struct {
	h      http.Handler
	routes []httpx.Route
	a, b   tenantData
}

// newServer serves the full route table over fresh stores holding two
// tenants, each with a trace of its own (root span and generation, a
// session, a score) and a trace with the shared id.
func newServer(t *testing.T) server {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	s := server{
		a: tenantData{Tenant: apitest.Seed(t, cp, "a")},
		b: tenantData{Tenant: apitest.Seed(t, cp, "b")},
	}
	for i, td := range []*tenantData{&s.a, &s.b} {
		prefix := string(rune('a' + i))
		td.trace = strings.Repeat(prefix, 32)
		td.observation = strings.Repeat(prefix, 15) + "2"
		td.session = "session-" + prefix
		root := apitest.Obs(td.ProjectID, td.trace, strings.Repeat(prefix, 15)+"1", time.Duration(i)*time.Minute)
		root.IsRoot, root.SessionID, root.UserID, root.TraceName = true, td.session, "user", "trace "+prefix
		root.Experiment = model.Experiment{ID: "experiment-" + prefix, Name: "experiment", ItemID: "item", ItemRootID: root.ID}
		gen := apitest.Obs(td.ProjectID, td.trace, td.observation, time.Duration(i)*time.Minute+time.Second)
		gen.ParentID, gen.Type, gen.SessionID = root.ID, model.TypeGeneration, td.session
		shared := apitest.Obs(td.ProjectID, sharedTrace, strings.Repeat(prefix, 15)+"3", time.Hour)
		shared.IsRoot, shared.TraceName = true, "shared in "+td.ProjectID
		apitest.Insert(t, ch, root, gen, shared)
		apitest.InsertScores(t, ch, chstore.Score{
			ProjectID: td.ProjectID, ID: "score-" + prefix, TraceID: td.trace, Name: "q", Value: 1,
			DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Timestamp: apitest.Base.UnixMicro(), Metadata: "{}",
		})
	}
	_, err := cp.CreatePrompt(context.Background(), s.b.ProjectID, controlplane.NewPrompt{
		Name: "prompt-b", Prompt: json.RawMessage(`"secret-of-b"`), Labels: []string{"production"},
	})
	require.NoError(t, err)
	_, err = cp.CreateModel(context.Background(), s.b.ProjectID, pricing.Model{
		ID: "model-b", Name: "secret-of-b", MatchPattern: "^secret-of-b$",
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1}}},
	})
	require.NoError(t, err)
	evalSeed = seedEvaluation(t, cp, s.b.ProjectID)
	cfg := NewDefaultConfig()
	cfg.Media.Dir = t.TempDir()
	dataSeed = seedData(t, cp, s.b, cfg.Media.Dir, evalSeed.scoreConfig)
	seedDashboards(t, cp, s.b.ProjectID)
	seedAutomations(t, cp, s.b.ProjectID)
	seedAlerts(t, cp, s.b.ProjectID)
	s.routes = Routes(cfg.Options, cp, ch, zap.NewNop())
	s.h, err = httpx.NewRouter(s.routes, httpx.Options{Verifier: cp, AdminKey: testAdminKey})
	require.NoError(t, err)
	return s
}

// attack is what one route does when tenant a aims it at tenant b's data:
// the request, and a check that nothing of b's came back.
type attack struct {
	auth   func(s server) string
	target func(s server) string
	body   func(s server) any
	check  func(t *testing.T, s server, rec *httptest.ResponseRecorder)
}

func notFound(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
	assert.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
}

// onlyOwn asserts success and that no id of tenant b appears.
func onlyOwn(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	for _, id := range []string{s.b.ProjectID, s.b.OrgID, s.b.trace, s.b.observation, s.b.session, s.b.ProjectKeyID, s.b.OrgKeyID,
		"shared in " + s.b.ProjectID, strings.Repeat("b", 15) + "3", "prompt-b", "secret-of-b"} {
		assert.NotContains(t, rec.Body.String(), id)
	}
}

func projectKey(s server) string { return s.a.ProjectAuth }
func orgKey(s server) string     { return s.a.OrgAuth }
func fixed(path string) func(server) string {
	return func(server) string { return path }
}

// attacks has one entry per route; TestSecurityMatrix fails when a route
// has none, so a new route cannot skip the matrix.
var attacks = map[string]attack{
	"GET /api/public/metrics": {auth: projectKey, target: fixed("/api/public/metrics?query=" + url.QueryEscape(
		`{"view":"observations","dimensions":[{"field":"traceId"},{"field":"traceName"},{"field":"id"}],"metrics":[{"measure":"count","aggregation":"count"}],`+
			`"fromTimestamp":"2000-01-01T00:00:00Z","toTimestamp":"2100-01-01T00:00:00Z"}`)), check: onlyOwn},
	"GET /api/public/v2/metrics": {auth: projectKey, target: fixed("/api/public/v2/metrics?query=" + url.QueryEscape(
		`{"view":"scores-numeric","dimensions":[{"field":"traceId"},{"field":"traceName"}],"metrics":[{"measure":"count","aggregation":"count"}],`+
			`"fromTimestamp":"2000-01-01T00:00:00Z","toTimestamp":"2100-01-01T00:00:00Z","config":{"row_limit":100},"orderBy":[{"field":"count_count","direction":"desc"}]}`)), check: onlyOwn},
	"GET /api/public/metrics/daily": {auth: projectKey, target: fixed("/api/public/metrics/daily?fromTimestamp=2024-01-01T00:00:00Z&toTimestamp=2025-01-01T00:00:00Z"), check: onlyOwn},
	"GET /api/public/models":        {auth: projectKey, target: fixed("/api/public/models?limit=100"), check: onlyOwn},
	"POST /api/public/models": {auth: projectKey, target: fixed("/api/public/models"),
		body: func(server) any {
			return map[string]any{"modelName": "secret-of-b", "matchPattern": "^secret-of-b$", "inputPrice": 0}
		},
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.NotContains(t, rec.Body.String(), "model-b", "created in the key's own project")
		}},
	"GET /api/public/models/{id}":    {auth: projectKey, target: fixed("/api/public/models/model-b"), check: notFound},
	"DELETE /api/public/models/{id}": {auth: projectKey, target: fixed("/api/public/models/model-b"), check: notFound},
	"PUT /api/public/models/{id}": {auth: projectKey, target: fixed("/api/public/models/model-b"),
		body: func(server) any {
			return map[string]any{"modelName": "hijacked", "matchPattern": "^hijacked$", "inputPrice": 0}
		},
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusConflict, rec.Code, "b's model id is not a's to overwrite: %s", rec.Body.String())
		}},
	"GET /api/public/projects/{projectId}/settings": {auth: projectKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/settings" }, check: notFound},
	"PUT /api/public/projects/{projectId}/settings": {auth: projectKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/settings" },
		body:   func(server) any { return map[string]any{"sampling": map[string]any{"rate": 0}} }, check: notFound},
	"GET /api/public/health":       {auth: projectKey, target: fixed("/api/public/health"), check: onlyOwn},
	"GET /api/public/ready":        {auth: projectKey, target: fixed("/api/public/ready"), check: onlyOwn},
	"GET /api/public/openapi.json": {auth: projectKey, target: fixed("/api/public/openapi.json"), check: onlyOwn},
	"GET /api/public/projects":     {auth: projectKey, target: fixed("/api/public/projects"), check: onlyOwn},
	"POST /api/public/projects": {auth: orgKey, target: fixed("/api/public/projects"),
		body: func(server) any { return map[string]any{"name": "Project b"} },
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), `"organization":{"id":"`+s.a.OrgID+`"`)
		}},
	"PUT /api/public/projects/{projectId}": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID },
		body:   func(server) any { return map[string]any{"name": "taken over"} }, check: notFound},
	"DELETE /api/public/projects/{projectId}": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID }, check: notFound},
	"GET /api/public/projects/{projectId}/apiKeys": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/apiKeys" }, check: notFound},
	"POST /api/public/projects/{projectId}/apiKeys": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/apiKeys" },
		body:   func(server) any { return map[string]any{} }, check: notFound},
	"DELETE /api/public/projects/{projectId}/apiKeys/{apiKeyId}": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/apiKeys/" + s.b.ProjectKeyID },
		check:  notFound},
	"GET /api/public/organizations/projects":    {auth: orgKey, target: fixed("/api/public/organizations/projects"), check: onlyOwn},
	"GET /api/public/organizations/apiKeys":     {auth: orgKey, target: fixed("/api/public/organizations/apiKeys"), check: onlyOwn},
	"GET /api/public/organizations/memberships": {auth: orgKey, target: fixed("/api/public/organizations/memberships"), check: onlyOwn},
	"PUT /api/public/organizations/memberships": {auth: orgKey, target: fixed("/api/public/organizations/memberships"),
		body: func(server) any { return map[string]any{"userId": "no-such-user", "role": "VIEWER"} }, check: notFound},
	"DELETE /api/public/organizations/memberships": {auth: orgKey, target: fixed("/api/public/organizations/memberships"),
		body: func(server) any { return map[string]any{"userId": "no-such-user"} },
		check: func(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		}},
	"GET /api/public/projects/{projectId}/memberships": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/memberships" }, check: notFound},
	"PUT /api/public/projects/{projectId}/memberships": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/memberships" },
		body:   func(server) any { return map[string]any{"userId": "no-such-user", "role": "VIEWER"} }, check: notFound},
	"DELETE /api/public/projects/{projectId}/memberships": {auth: orgKey,
		target: func(s server) string { return "/api/public/projects/" + s.b.ProjectID + "/memberships" },
		body:   func(server) any { return map[string]any{"userId": "no-such-user"} }, check: notFound},
	"GET /api/public/traces": {auth: projectKey, target: fixed("/api/public/traces?limit=100"), check: onlyOwn},
	"GET /api/public/traces/{traceId}": {auth: projectKey,
		target: func(s server) string { return "/api/public/traces/" + s.b.trace }, check: notFound},
	"DELETE /api/public/traces/{traceId}": {auth: projectKey,
		target: func(s server) string { return "/api/public/traces/" + s.b.trace }, check: notFound},
	"DELETE /api/public/traces": {auth: projectKey, target: fixed("/api/public/traces"),
		body: func(s server) any { return map[string]any{"traceIds": []string{s.b.trace}} },
		check: func(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		}},
	"GET /api/public/observations/{observationId}": {auth: projectKey,
		target: func(s server) string { return "/api/public/observations/" + s.b.observation }, check: notFound},
	"GET /api/public/observations": {auth: projectKey, target: fixed("/api/public/observations?limit=100"), check: onlyOwn},
	"GET /api/public/v2/observations": {auth: projectKey,
		target: fixed("/api/public/v2/observations?limit=1000&fields=core,basic,io,trace_context"), check: onlyOwn},
	"GET /api/public/sessions": {auth: projectKey, target: fixed("/api/public/sessions?limit=100"), check: onlyOwn},
	"GET /api/public/sessions/{sessionId}": {auth: projectKey,
		target: func(s server) string { return "/api/public/sessions/" + s.b.session }, check: notFound},
	"POST /api/public/v2/prompts": {auth: projectKey, target: fixed("/api/public/v2/prompts"),
		body: func(server) any { return map[string]any{"name": "prompt-a", "type": "text", "prompt": "mine"} },
		check: func(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
			assert.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		}},
	"GET /api/public/v2/prompts": {auth: projectKey, target: fixed("/api/public/v2/prompts?limit=100"), check: onlyOwn},
	"GET /api/public/v2/prompts/{promptName}": {auth: projectKey,
		target: fixed("/api/public/v2/prompts/prompt-b"), check: notFound},
	"POST /api/public/prompts": {auth: projectKey, target: fixed("/api/public/prompts"),
		body: func(server) any {
			// A name of its own: the v2 DELETE and PATCH attacks on prompt-b
			// expect a 404 in a's project.
			return map[string]any{"name": "prompt-a-v1", "type": "text", "prompt": "mine", "isActive": true}
		},
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), `"projectId":"`+s.a.ProjectID+`"`, "created in the key's own project")
			assert.NotContains(t, rec.Body.String(), "secret-of-b")
		}},
	"GET /api/public/prompts": {auth: projectKey, target: fixed("/api/public/prompts?name=prompt-b"), check: notFound},
	"DELETE /api/public/v2/prompts/{promptName}": {auth: projectKey,
		target: fixed("/api/public/v2/prompts/prompt-b"), check: notFound},
	"PATCH /api/public/v2/prompts/{promptName}/versions/{version}": {auth: projectKey,
		target: fixed("/api/public/v2/prompts/prompt-b/versions/1"),
		body:   func(server) any { return map[string]any{"newLabels": []string{"hijacked"}} }, check: notFound},
}

func TestSecurityMatrix(t *testing.T) {
	s := newServer(t)
	for _, rt := range s.routes {
		name := rt.Method + " " + rt.Path
		a, ok := attacks[name]
		if !assert.True(t, ok, "route %s has no case in the security matrix", name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var body any
			if a.body != nil {
				body = a.body(s)
			}
			rec := apitest.Do(t, s.h, rt.Method, a.target(s), a.auth(s), body)
			a.check(t, s, rec)
		})
	}
	assert.Len(t, attacks, len(s.routes), "every case names a route")

	// After every attack, tenant b's data and keys are whole.
	for _, target := range []string{
		"/api/public/traces/" + s.b.trace,
		"/api/public/traces/" + sharedTrace,
		"/api/public/observations/" + s.b.observation,
		"/api/public/sessions/" + s.b.session,
		"/api/public/projects",
		"/api/public/v2/prompts/prompt-b",
		"/api/public/models/model-b",
	} {
		rec := apitest.Do(t, s.h, http.MethodGet, target, s.b.ProjectAuth, nil)
		assert.Equal(t, http.StatusOK, rec.Code, "%s: %s", target, rec.Body.String())
	}
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/traces/"+sharedTrace, s.b.ProjectAuth, nil)
	assert.Contains(t, rec.Body.String(), "shared in "+s.b.ProjectID)
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/v2/prompts/prompt-b", s.b.ProjectAuth, nil)
	assert.NotContains(t, rec.Body.String(), "hijacked")
	assert.Contains(t, rec.Body.String(), "secret-of-b")
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/projects/"+s.b.ProjectID+"/apiKeys", s.b.OrgAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), s.b.ProjectKeyID)
	assertDataOfBWhole(t, s)
}

// A trace id used by two projects is two traces: each key sees, and
// deletes, only its own.
func TestSharedTraceID(t *testing.T) {
	s := newServer(t)
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/traces/"+sharedTrace, s.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "shared in "+s.a.ProjectID)
	onlyOwn(t, s, rec)

	rec = apitest.Do(t, s.h, http.MethodDelete, "/api/public/traces/"+sharedTrace, s.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, http.StatusNotFound, apitest.Do(t, s.h, http.MethodGet, "/api/public/traces/"+sharedTrace, s.a.ProjectAuth, nil).Code)
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/traces/"+sharedTrace, s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "shared in "+s.b.ProjectID)
}

// runAttacks runs every attack of the map as tenant a, each checked by its
// own check.
func runAttacks(t *testing.T, s server, attacks map[string]attack) {
	t.Helper()
	for name, a := range attacks {
		var body any
		if a.body != nil {
			body = a.body(s)
		}
		method, _, _ := strings.Cut(name, " ")
		t.Run(name, func(t *testing.T) {
			a.check(t, s, apitest.Do(t, s.h, method, a.target(s), a.auth(s), body))
		})
	}
}
