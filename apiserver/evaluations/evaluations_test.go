package evaluations

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

type fixture struct {
	h     http.Handler
	store *controlplane.Store
	a, b  apitest.Tenant
}

func setup(t *testing.T, withKey bool) fixture {
	t.Helper()
	return setupWith(t, apitest.ControlPlane(t), withKey)
}

// setupWith serves the routes over store, with tenants a and b.
func setupWith(t *testing.T, store *controlplane.Store, withKey bool) fixture {
	t.Helper()
	var box *secretbox.Box
	if withKey {
		var err error
		box, err = secretbox.FromEnv(func(string) string { return testKey })
		require.NoError(t, err)
	}
	webhooks, err := egress.Webhooks([]string{"example.com"})
	require.NoError(t, err)
	llmHosts, err := egress.LLM([]string{"127.0.0.1"})
	require.NoError(t, err)
	h, err := httpx.NewRouter(Routes(store, box, webhooks, llmHosts), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return fixture{h: h, store: store, a: apitest.Seed(t, store, "a"), b: apitest.Seed(t, store, "b")}
}

func call(t *testing.T, f fixture, method, path, auth string, body any, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := apitest.Do(t, f.h, method, path, auth, body)
	require.Equal(t, want, rec.Code, rec.Body.String())
	return rec
}

func TestLLMConnectionRoutes(t *testing.T) {
	f := setup(t, true)
	rec := call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth, map[string]any{
		"provider": "judge", "adapter": "openai", "secretKey": "sk-very-secret-9876", "baseURL": "http://127.0.0.1:1/v1",
		"extraHeaders": map[string]string{"X-Team": "hidden-value"}, "defaultModel": "gpt-4o-mini",
		"defaultParams": map[string]any{"temperature": 0}, "maxConcurrency": 2, "timeoutMs": 5000,
	}, http.StatusOK)
	assert.NotContains(t, rec.Body.String(), "sk-very-secret-9876")
	assert.NotContains(t, rec.Body.String(), "hidden-value")
	cn := apitest.Decode[LLMConnection](t, rec)
	assert.Equal(t, "...9876", cn.DisplaySecretKey)
	assert.Equal(t, []string{"X-Team"}, cn.ExtraHeaderKeys)
	assert.Equal(t, 2, cn.MaxConcurrency)
	assert.Equal(t, int64(5000), cn.TimeoutMS)
	assert.JSONEq(t, `{"temperature":0}`, string(cn.DefaultParams))

	// An update without the key keeps it.
	updated := apitest.Decode[LLMConnection](t, call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
		map[string]any{"provider": "judge", "defaultModel": "gpt-4o"}, http.StatusOK))
	assert.Equal(t, cn.ID, updated.ID)
	assert.Equal(t, "gpt-4o", updated.DefaultModel)
	creds, err := f.store.LLMCredentials(context.Background(), mustBox(t), f.a.ProjectID, cn.ID)
	require.NoError(t, err)
	assert.Equal(t, "sk-very-secret-9876", creds.SecretKey)

	// The stored key cannot be pointed at another host: the review's
	// sequence (a new baseURL, no key) and its variants are refused, and
	// the connection still sends to where its key was saved for.
	for _, redirect := range []map[string]any{
		{"provider": "judge", "baseURL": "http://127.0.0.1:2/v1"},
		{"provider": "judge", "adapter": "anthropic"},
		{"provider": "judge", "extraHeaders": map[string]string{"Host": "attacker.example"}},
		{"provider": "judge", "baseURL": "http://127.0.0.1:2/v1", "secretKey": "sk-another-key-1234"}, // headers not given again
	} {
		rec := call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth, redirect, http.StatusBadRequest)
		assert.Regexp(t, `(secretKey|extraHeaders) (is|are) required`, rec.Body.String())
	}
	creds, err = f.store.LLMCredentials(context.Background(), mustBox(t), f.a.ProjectID, cn.ID)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1/v1", creds.BaseURL)
	assert.Equal(t, "sk-very-secret-9876", creds.SecretKey)
	moved := apitest.Decode[LLMConnection](t, call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
		map[string]any{"provider": "judge", "baseURL": "http://127.0.0.1:2/v1", "secretKey": "sk-another-key-1234",
			"extraHeaders": map[string]string{}}, http.StatusOK))
	assert.Equal(t, "http://127.0.0.1:2/v1", *moved.BaseURL)
	assert.Empty(t, moved.ExtraHeaderKeys)

	list := apitest.Decode[httpx.List[LLMConnection]](t, call(t, f, http.MethodGet, "/api/public/llm-connections", f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, list.Data, 1)
	assert.EqualValues(t, 1, list.Meta.TotalItems)
	empty := apitest.Decode[httpx.List[LLMConnection]](t, call(t, f, http.MethodGet, "/api/public/llm-connections", f.b.ProjectAuth, nil, http.StatusOK))
	assert.Empty(t, empty.Data)

	call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth, map[string]any{"provider": "new"}, http.StatusBadRequest)
	call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
		map[string]any{"provider": "x", "secretKey": "k", "adapter": "bedrock"}, http.StatusBadRequest)
	call(t, f, http.MethodGet, "/api/public/llm-connections/"+cn.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	call(t, f, http.MethodDelete, "/api/public/llm-connections/"+cn.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	call(t, f, http.MethodGet, "/api/public/llm-connections/"+cn.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodDelete, "/api/public/llm-connections/"+cn.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodGet, "/api/public/llm-connections/"+cn.ID, f.a.ProjectAuth, nil, http.StatusNotFound)

	noKey := setup(t, false)
	rec = call(t, noKey, http.MethodPut, "/api/public/llm-connections", noKey.a.ProjectAuth,
		map[string]any{"provider": "judge", "secretKey": "sk-1234567890"}, http.StatusServiceUnavailable)
	assert.Contains(t, rec.Body.String(), secretbox.EncryptionKeyEnv)
}

func mustBox(t *testing.T) *secretbox.Box {
	box, err := secretbox.FromEnv(func(string) string { return testKey })
	require.NoError(t, err)
	return box
}

// seedConnection adds a connection to tenant a's project.
func seedConnection(t *testing.T, f fixture) LLMConnection {
	t.Helper()
	return apitest.Decode[LLMConnection](t, call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
		map[string]any{"provider": "judge", "secretKey": "sk-test-123456789", "baseURL": "http://127.0.0.1:1/v1"}, http.StatusOK))
}

func createEvaluator(t *testing.T, f fixture, body map[string]any) Evaluator {
	t.Helper()
	return apitest.Decode[Evaluator](t, call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, body, http.StatusCreated))
}

var celBody = map[string]any{"name": "short", "kind": "cel", "scoreName": "short",
	"output": map[string]any{"dataType": "BOOLEAN"}, "expression": "size(output) < 100"}

func TestEvaluatorRoutes(t *testing.T) {
	f := setup(t, true)
	judge := createEvaluator(t, f, map[string]any{"name": "judge", "kind": "llm", "scoreName": "helpful",
		"output":    map[string]any{"dataType": "NUMERIC", "min": 0, "max": 1, "description": "helpfulness"},
		"prompt":    "Rate {{output}} given {{question}}",
		"variables": []map[string]any{{"name": "question", "source": "trace", "field": "input", "key": "question"}},
		"model":     "gpt-4o-mini", "modelParams": map[string]any{"temperature": 0}})
	assert.Equal(t, "llm", judge.Kind)
	assert.Equal(t, []Variable{{Name: "question", Source: "trace", Field: "input", Key: "question"}}, judge.Variables)
	code := createEvaluator(t, f, celBody)
	assert.Equal(t, int64(1000), code.TimeoutMS)
	hook := createEvaluator(t, f, map[string]any{"name": "hook", "kind": "webhook", "scoreName": "tone", "url": "https://example.com/x",
		"output": map[string]any{"dataType": "CATEGORICAL", "categories": []string{"good", "bad"}}, "timeoutMs": 2000})
	assert.Equal(t, int64(2000), hook.TimeoutMS)

	rec := call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, map[string]any{"name": "bad", "kind": "cel",
		"scoreName": "x", "output": map[string]any{"dataType": "BOOLEAN"}, "expression": "output +"}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "Invalid expression")
	call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, map[string]any{"name": "bad", "kind": "cel",
		"scoreName": "x", "output": map[string]any{"dataType": "BOOLEAN"}, "expression": "unknown_var"}, http.StatusBadRequest)
	call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, map[string]any{"name": "bad", "kind": "llm",
		"scoreName": "x", "output": map[string]any{"dataType": "BOOLEAN"}, "prompt": "{{unmapped}}"}, http.StatusBadRequest)
	call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, celBody, http.StatusConflict)

	patched := apitest.Decode[Evaluator](t, call(t, f, http.MethodPatch, "/api/public/evals/evaluators/"+code.ID, f.a.ProjectAuth,
		map[string]any{"expression": "size(output) < 10", "timeoutMs": 500}, http.StatusOK))
	assert.Equal(t, "size(output) < 10", patched.Expression)
	assert.Equal(t, int64(500), patched.TimeoutMS)
	call(t, f, http.MethodPatch, "/api/public/evals/evaluators/"+code.ID, f.a.ProjectAuth, map[string]any{"expression": "("}, http.StatusBadRequest)
	call(t, f, http.MethodPatch, "/api/public/evals/evaluators/"+code.ID, f.b.ProjectAuth, map[string]any{"name": "x"}, http.StatusNotFound)
	call(t, f, http.MethodGet, "/api/public/evals/evaluators/"+judge.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	got := apitest.Decode[Evaluator](t, call(t, f, http.MethodGet, "/api/public/evals/evaluators/"+judge.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, judge, got)

	list := apitest.Decode[httpx.List[Evaluator]](t, call(t, f, http.MethodGet, "/api/public/evals/evaluators?limit=2", f.a.ProjectAuth, nil, http.StatusOK))
	assert.EqualValues(t, 3, list.Meta.TotalItems)
	assert.Len(t, list.Data, 2)

	call(t, f, http.MethodDelete, "/api/public/evals/evaluators/"+hook.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	call(t, f, http.MethodDelete, "/api/public/evals/evaluators/"+hook.ID, f.a.ProjectAuth, nil, http.StatusOK)
}

// Webhook URLs are held against evaluation.webhook_allowed_hosts when an
// evaluator is saved; the field at fault is named.
func TestWebhookURLsFollowTheEgressPolicy(t *testing.T) {
	f := setup(t, false)
	hook := func(name, url string) map[string]any {
		return map[string]any{"name": name, "kind": "webhook", "scoreName": "tone", "url": url,
			"output": map[string]any{"dataType": "BOOLEAN"}}
	}
	allowed := createEvaluator(t, f, hook("allowed", "https://example.com/score"))
	for url, reason := range map[string]string{
		"https://evil.example.net/score":          `host \"evil.example.net\" is not listed in ` + egress.WebhookKey,
		"http://127.0.0.1:8123/?query=DROP+TABLE": "address 127.0.0.1 is not listed in " + egress.WebhookKey,
		"http://169.254.169.254/latest/meta-data": "address 169.254.169.254 is not listed",
		"file:///etc/passwd":                      "not an absolute http(s) URL",
	} {
		rec := call(t, f, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, hook("refused", url), http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), "Invalid url: ", url)
		assert.Contains(t, rec.Body.String(), reason, url)
	}
	rec := call(t, f, http.MethodPatch, "/api/public/evals/evaluators/"+allowed.ID, f.a.ProjectAuth,
		map[string]any{"url": "http://localhost:3000/api/public/projects"}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), egress.WebhookKey)

	// An evaluator saved under a wider policy can still be edited; only its
	// calls are refused.
	old, err := f.store.CreateEvaluator(context.Background(), f.a.ProjectID, controlplane.NewEvaluator{Name: "old",
		Kind: controlplane.EvaluatorWebhook, ScoreName: "tone", URL: "https://old.example.org/score",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}})
	require.NoError(t, err)
	call(t, f, http.MethodPatch, "/api/public/evals/evaluators/"+old.ID, f.a.ProjectAuth, map[string]any{"name": "renamed"}, http.StatusOK)

	// Without a policy, webhooks are off.
	h, err := httpx.NewRouter(Routes(f.store, nil, egress.Policy{}, egress.Policy{}), httpx.Options{Verifier: f.store})
	require.NoError(t, err)
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/evals/evaluators", f.a.ProjectAuth, hook("off", "https://example.com/score"))
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "webhooks are off until "+egress.WebhookKey+" lists the hosts")
}

// LLM base URLs are held against evaluation.llm_allowed_hosts when a
// connection is saved: by default only public addresses, with a list only
// what it names.
func TestLLMBaseURLsFollowTheEgressPolicy(t *testing.T) {
	f := setup(t, true)
	box, err := secretbox.FromEnv(func(string) string { return testKey })
	require.NoError(t, err)
	router := func(entries ...string) http.Handler {
		llmHosts, err := egress.LLM(entries)
		require.NoError(t, err)
		h, err := httpx.NewRouter(Routes(f.store, box, egress.Policy{}, llmHosts), httpx.Options{Verifier: f.store})
		require.NoError(t, err)
		return h
	}
	put := func(h http.Handler, baseURL string) *httptest.ResponseRecorder {
		return apitest.Do(t, h, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
			map[string]any{"provider": "judge", "secretKey": "sk-test-123456789", "baseURL": baseURL})
	}

	byDefault := router()
	for _, url := range []string{"http://127.0.0.1:8123/v1", "http://169.254.169.254/latest", "http://10.0.0.7/v1",
		"http://[fd00::1]/v1", "http://0.0.0.0:8080/v1", "http://localhost:11434/v1"} {
		rec := put(byDefault, url)
		require.Equal(t, http.StatusBadRequest, rec.Code, url)
		assert.Contains(t, rec.Body.String(), "the openai connection would call "+strings.TrimSuffix(url, "/"), url)
		assert.Contains(t, rec.Body.String(), egress.LLMKey, url)
	}
	for _, url := range []string{"https://llm.example.com/v1", "https://8.8.8.8/v1"} {
		rec := put(byDefault, url)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Equal(t, url, *apitest.Decode[LLMConnection](t, rec).BaseURL)
	}
	rec := apitest.Do(t, byDefault, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth,
		map[string]any{"provider": "judge", "maxConcurrency": 3})
	require.Equal(t, http.StatusOK, rec.Code, "an update that leaves the base URL alone: %s", rec.Body.String())

	listed := router("127.0.0.1", "*.internal.example")
	for url, want := range map[string]int{
		"http://127.0.0.1:8123/v1":      http.StatusOK,
		"http://vllm.internal.example/": http.StatusOK,
		"https://llm.example.com/v1":    http.StatusBadRequest, // a list allows only what it names
		"http://169.254.169.254/":       http.StatusBadRequest,
	} {
		rec := put(listed, url)
		assert.Equal(t, want, rec.Code, "%s: %s", url, rec.Body.String())
	}
}

func TestRuleAndJobRoutes(t *testing.T) {
	f := setup(t, true)
	conn := seedConnection(t, f)
	judge := createEvaluator(t, f, map[string]any{"name": "judge", "kind": "llm", "scoreName": "helpful",
		"output": map[string]any{"dataType": "BOOLEAN"}, "prompt": "Is {{output}} helpful?"})
	code := createEvaluator(t, f, celBody)

	rule := apitest.Decode[Rule](t, call(t, f, http.MethodPost, "/api/public/evals/rules", f.a.ProjectAuth, map[string]any{
		"name": "prod judge", "evaluatorId": judge.ID, "connectionId": conn.ID, "target": "trace", "samplingRate": 0.5, "delayMs": 1000,
		"filter": []map[string]any{{"field": "tags", "operator": "any of", "values": []string{"prod"}}},
	}, http.StatusCreated))
	assert.True(t, rule.Active)
	assert.Equal(t, 0.5, rule.SamplingRate)
	assert.Equal(t, int64(1000), rule.DelayMS)
	require.Len(t, rule.Filter, 1)

	for name, body := range map[string]map[string]any{
		"bad filter":       {"name": "x", "evaluatorId": code.ID, "target": "trace", "filter": []map[string]any{{"field": "cost", "operator": "="}}},
		"bad target":       {"name": "x", "evaluatorId": code.ID, "target": "session"},
		"llm needs a conn": {"name": "x", "evaluatorId": judge.ID, "target": "trace"},
		"sampling":         {"name": "x", "evaluatorId": code.ID, "target": "trace", "samplingRate": 2},
	} {
		rec := call(t, f, http.MethodPost, "/api/public/evals/rules", f.a.ProjectAuth, body, http.StatusBadRequest)
		assert.NotEmpty(t, rec.Body.String(), name)
	}
	call(t, f, http.MethodPost, "/api/public/evals/rules", f.b.ProjectAuth,
		map[string]any{"name": "x", "evaluatorId": code.ID, "target": "trace"}, http.StatusNotFound)

	patched := apitest.Decode[Rule](t, call(t, f, http.MethodPatch, "/api/public/evals/rules/"+rule.ID, f.a.ProjectAuth,
		map[string]any{"active": false, "filter": []map[string]any{}}, http.StatusOK))
	assert.False(t, patched.Active)
	assert.Empty(t, patched.Filter)
	call(t, f, http.MethodPatch, "/api/public/evals/rules/"+rule.ID, f.b.ProjectAuth, map[string]any{"active": true}, http.StatusNotFound)

	job := apitest.Decode[Job](t, call(t, f, http.MethodPost, "/api/public/evals/rules/"+rule.ID+"/backfill", f.a.ProjectAuth,
		map[string]any{"from": "2024-05-01T00:00:00Z", "to": "2024-05-02T00:00:00Z"}, http.StatusAccepted))
	assert.Equal(t, "BACKFILL", job.Kind)
	assert.Equal(t, "PENDING", job.Status)
	var state evalqueue.BackfillState
	require.NoError(t, json.Unmarshal(job.State, &state))
	assert.Equal(t, 1, state.Page)
	call(t, f, http.MethodPost, "/api/public/evals/rules/"+rule.ID+"/backfill", f.a.ProjectAuth,
		map[string]any{"from": "2024-05-02T00:00:00Z", "to": "2024-05-01T00:00:00Z"}, http.StatusBadRequest)
	call(t, f, http.MethodPost, "/api/public/evals/rules/"+rule.ID+"/backfill", f.a.ProjectAuth, map[string]any{}, http.StatusBadRequest)
	call(t, f, http.MethodPost, "/api/public/evals/rules/"+rule.ID+"/backfill", f.b.ProjectAuth,
		map[string]any{"from": "2024-05-01T00:00:00Z", "to": "2024-05-02T00:00:00Z"}, http.StatusNotFound)

	withCounts := apitest.Decode[Rule](t, call(t, f, http.MethodGet, "/api/public/evals/rules/"+rule.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, map[string]int{"PENDING": 1}, withCounts.Jobs)
	call(t, f, http.MethodGet, "/api/public/evals/rules/"+rule.ID, f.b.ProjectAuth, nil, http.StatusNotFound)

	jobs := apitest.Decode[httpx.List[Job]](t, call(t, f, http.MethodGet, "/api/public/evals/jobs?ruleId="+rule.ID+"&status=PENDING",
		f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, jobs.Data, 1)
	assert.Equal(t, job.ID, jobs.Data[0].ID)
	none := apitest.Decode[httpx.List[Job]](t, call(t, f, http.MethodGet, "/api/public/evals/jobs", f.b.ProjectAuth, nil, http.StatusOK))
	assert.Empty(t, none.Data)
	call(t, f, http.MethodGet, "/api/public/evals/jobs?status=DONE", f.a.ProjectAuth, nil, http.StatusBadRequest)
	call(t, f, http.MethodGet, "/api/public/evals/jobs?kind=OTHER", f.a.ProjectAuth, nil, http.StatusBadRequest)
	call(t, f, http.MethodGet, "/api/public/evals/jobs/"+job.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodGet, "/api/public/evals/jobs/"+job.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	call(t, f, http.MethodPost, "/api/public/evals/jobs/"+job.ID+"/retry", f.a.ProjectAuth, nil, http.StatusConflict)
	call(t, f, http.MethodPost, "/api/public/evals/jobs/"+job.ID+"/retry", f.b.ProjectAuth, nil, http.StatusNotFound)

	call(t, f, http.MethodDelete, "/api/public/llm-connections/"+conn.ID, f.a.ProjectAuth, nil, http.StatusConflict)
	list := apitest.Decode[httpx.List[Rule]](t, call(t, f, http.MethodGet, "/api/public/evals/rules", f.a.ProjectAuth, nil, http.StatusOK))
	assert.Len(t, list.Data, 1)
	call(t, f, http.MethodDelete, "/api/public/evals/rules/"+rule.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	call(t, f, http.MethodDelete, "/api/public/evals/rules/"+rule.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodGet, "/api/public/evals/jobs/"+job.ID, f.a.ProjectAuth, nil, http.StatusNotFound)
}

func TestExperimentRoutes(t *testing.T) {
	f := setup(t, true)
	ctx := context.Background()
	conn := seedConnection(t, f)
	code := createEvaluator(t, f, celBody)
	_, err := f.store.UpsertDataset(ctx, f.a.ProjectID, controlplane.DatasetUpsert{Name: "qa"})
	require.NoError(t, err)
	for _, id := range []string{"i1", "i2", "i3"} {
		_, err := f.store.UpsertDatasetItem(ctx, f.a.ProjectID, controlplane.DatasetItemUpsert{DatasetName: "qa", ID: id,
			Input: json.RawMessage(`{"q":"x"}`)})
		require.NoError(t, err)
	}
	_, err = f.store.CreatePrompt(ctx, f.a.ProjectID, controlplane.NewPrompt{Name: "p", Prompt: json.RawMessage(`"Q: {{q}}"`),
		Labels: []string{"staging"}})
	require.NoError(t, err)

	body := map[string]any{"datasetName": "qa", "runName": "run", "promptName": "p", "promptLabel": "staging",
		"connectionId": conn.ID, "evaluatorIds": []string{code.ID}, "modelParams": map[string]any{"temperature": 1}}
	x := apitest.Decode[Experiment](t, call(t, f, http.MethodPost, "/api/public/evals/experiments", f.a.ProjectAuth, body, http.StatusCreated))
	assert.Equal(t, ExperimentRunning, x.Status)
	assert.Equal(t, map[string]int{"PENDING": 3}, x.Jobs)
	assert.Equal(t, 1, x.PromptVersion)
	assert.Equal(t, []string{code.ID}, x.EvaluatorIDs)

	call(t, f, http.MethodPost, "/api/public/evals/experiments", f.a.ProjectAuth, body, http.StatusConflict)
	call(t, f, http.MethodPost, "/api/public/evals/experiments", f.b.ProjectAuth, body, http.StatusNotFound)
	call(t, f, http.MethodPost, "/api/public/evals/experiments", f.a.ProjectAuth,
		map[string]any{"datasetName": "qa", "runName": "r2", "promptName": "p", "connectionId": conn.ID}, http.StatusNotFound)
	call(t, f, http.MethodGet, "/api/public/evals/experiments/"+x.ID, f.b.ProjectAuth, nil, http.StatusNotFound)
	got := apitest.Decode[Experiment](t, call(t, f, http.MethodGet, "/api/public/evals/experiments/"+x.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, x.ID, got.ID)
	list := apitest.Decode[httpx.List[Experiment]](t, call(t, f, http.MethodGet, "/api/public/evals/experiments", f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, list.Data, 1)
	assert.Equal(t, 3, list.Data[0].Jobs["PENDING"])
	items := apitest.Decode[httpx.List[Job]](t, call(t, f, http.MethodGet, "/api/public/evals/jobs?experimentId="+x.ID+"&kind=EXPERIMENT_ITEM",
		f.a.ProjectAuth, nil, http.StatusOK))
	assert.Len(t, items.Data, 3)
}

// The adapters beyond openai and anthropic, their config and default
// models, through PUT and GET; every host a connection's key goes to is
// held against the policy, which here lists only 127.0.0.1.
func TestLLMConnectionAdaptersAndConfig(t *testing.T) {
	f := setup(t, true)
	put := func(body map[string]any, want int) *httptest.ResponseRecorder {
		return call(t, f, http.MethodPut, "/api/public/llm-connections", f.a.ProjectAuth, body, want)
	}
	awsKeys := `{"accessKeyId":"AKIAEXAMPLE1234","secretAccessKey":"aws-very-secret"}`
	bedrock := map[string]any{"provider": "aws", "adapter": "bedrock", "secretKey": awsKeys,
		"config": map[string]any{"region": "eu-west-1"}, "withDefaultModels": false}

	rec := put(bedrock, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "would call https://bedrock-runtime.eu-west-1.amazonaws.com", "the region's host is not listed")
	rec = put(map[string]any{"provider": "aws", "adapter": "bedrock", "secretKey": awsKeys, "baseURL": "http://127.0.0.1:1",
		"config": map[string]any{"region": "eu-west-1", "profile": "default"}}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), `unknown key \"profile\" for the bedrock adapter`)
	rec = put(map[string]any{"provider": "aws", "adapter": "bedrock", "secretKey": "not-json", "baseURL": "http://127.0.0.1:1",
		"config": map[string]any{"region": "eu-west-1"}}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "accessKeyId")

	bedrock["baseURL"] = "http://127.0.0.1:1"
	rec = put(bedrock, http.StatusOK)
	assert.NotContains(t, rec.Body.String(), "aws-very-secret")
	cn := apitest.Decode[LLMConnection](t, rec)
	assert.Equal(t, "bedrock", cn.Adapter)
	assert.JSONEq(t, `{"region":"eu-west-1"}`, string(cn.Config))
	assert.False(t, cn.WithDefaultModels)
	assert.Equal(t, "...1234", cn.DisplaySecretKey)

	got := apitest.Decode[LLMConnection](t, call(t, f, http.MethodGet, "/api/public/llm-connections/"+cn.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, cn, got)
	rec = put(map[string]any{"provider": "aws", "config": map[string]any{"region": "us-east-1"}}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "secretKey is required", "the region is where the key goes")

	// openai takes useResponsesApi; null clears it; anthropic takes nothing.
	oa := apitest.Decode[LLMConnection](t, put(map[string]any{"provider": "oa", "adapter": "openai", "secretKey": "sk-1234567890",
		"baseURL": "http://127.0.0.1:1/v1", "config": map[string]any{"useResponsesApi": true}}, http.StatusOK))
	assert.JSONEq(t, `{"useResponsesApi":true}`, string(oa.Config))
	assert.True(t, oa.WithDefaultModels, "true unless asked otherwise")
	rec = put(map[string]any{"provider": "oa", "config": nil}, http.StatusOK)
	assert.Contains(t, rec.Body.String(), `"config":null`)
	rec = put(map[string]any{"provider": "an", "adapter": "anthropic", "secretKey": "sk-ant-1234567", "baseURL": "http://127.0.0.1:1/v1",
		"config": map[string]any{"useResponsesApi": true}}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "the anthropic adapter takes no settings")
	rec = put(map[string]any{"provider": "az", "adapter": "azure", "secretKey": "azure-key-1234"}, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "requires a baseURL")
	az := apitest.Decode[LLMConnection](t, put(map[string]any{"provider": "az", "adapter": "azure", "secretKey": "azure-key-1234",
		"baseURL": "http://127.0.0.1:1", "config": map[string]any{"apiVersion": "2024-10-21"}}, http.StatusOK))
	assert.Equal(t, "http://127.0.0.1:1", *az.BaseURL)

	// Vertex AI: the service account's token endpoint is a host too.
	key := llmtest.New(t, nil).ServiceAccount(t, "proj-1")
	vertex := map[string]any{"provider": "gcp", "adapter": "google-vertex-ai", "secretKey": key, "config": map[string]any{"location": "europe-west4"}}
	rec = put(vertex, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "would call https://europe-west4-aiplatform.googleapis.com")
	vertex["baseURL"] = "http://127.0.0.1:1"
	gcp := apitest.Decode[LLMConnection](t, put(vertex, http.StatusOK))
	assert.JSONEq(t, `{"location":"europe-west4"}`, string(gcp.Config))
	var sa map[string]any
	require.NoError(t, json.Unmarshal([]byte(key), &sa))
	sa["token_uri"] = "https://oauth.attacker.example/token"
	moved, _ := json.Marshal(sa)
	vertex["secretKey"] = string(moved)
	rec = put(vertex, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "would call https://oauth.attacker.example/token")

	studio := apitest.Decode[LLMConnection](t, put(map[string]any{"provider": "studio", "adapter": "google-ai-studio", "secretKey": "AIza-1234567",
		"baseURL": "http://127.0.0.1:1"}, http.StatusOK))
	assert.Equal(t, "null", string(studio.Config))

	list := apitest.Decode[httpx.List[LLMConnection]](t, call(t, f, http.MethodGet, "/api/public/llm-connections", f.a.ProjectAuth, nil, http.StatusOK))
	adapters := map[string]string{}
	for _, c := range list.Data {
		adapters[c.Provider] = c.Adapter
	}
	assert.Equal(t, map[string]string{"aws": "bedrock", "oa": "openai", "az": "azure", "gcp": "google-vertex-ai", "studio": "google-ai-studio"}, adapters)
}
