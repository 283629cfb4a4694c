package apiserver

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// evalObjects are tenant b's evaluation and annotation objects.
type evalObjects struct {
	connection, evaluator, rule, job, experiment, scoreConfig, queue, item, user string
}

// evalSeed holds the objects of the latest newServer's tenant b.
var evalSeed evalObjects

// seedEvaluation gives project every kind of evaluation and annotation object.
func seedEvaluation(t *testing.T, cp *controlplane.Store, project string) evalObjects {
	t.Helper()
	ctx := context.Background()
	box, err := secretbox.New(make([]byte, 32))
	require.NoError(t, err)
	var o evalObjects
	cn, err := cp.UpsertLLMConnection(ctx, box, project, controlplane.LLMConnectionUpsert{Provider: "judge-of-b", SecretKey: "sk-secret-of-b-123"})
	require.NoError(t, err)
	e, err := cp.CreateEvaluator(ctx, project, controlplane.NewEvaluator{Name: "evaluator-of-b", Kind: controlplane.EvaluatorLLM,
		ScoreName: "score-of-b", Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, Prompt: "{{output}}"})
	require.NoError(t, err)
	r, err := cp.CreateEvalRule(ctx, project, controlplane.NewEvalRule{Name: "rule-of-b", EvaluatorID: e.ID, ConnectionID: cn.ID,
		Target: evaljobs.TargetTrace})
	require.NoError(t, err)
	job, err := cp.EnqueueBackfill(ctx, project, r.ID, apitest.Base, apitest.Base.Add(time.Hour))
	require.NoError(t, err)
	_, err = cp.UpsertDataset(ctx, project, controlplane.DatasetUpsert{Name: "dataset-of-b"})
	require.NoError(t, err)
	_, err = cp.UpsertDatasetItem(ctx, project, controlplane.DatasetItemUpsert{DatasetName: "dataset-of-b", ID: "item-of-b",
		Input: json.RawMessage(`"x"`)})
	require.NoError(t, err)
	_, err = cp.CreatePrompt(ctx, project, controlplane.NewPrompt{Name: "experiment-prompt-of-b", Prompt: json.RawMessage(`"p"`),
		Labels: []string{"production"}})
	require.NoError(t, err)
	x, err := cp.CreateExperiment(ctx, project, controlplane.NewExperiment{DatasetName: "dataset-of-b", RunName: "run-of-b",
		PromptName: "experiment-prompt-of-b", ConnectionID: cn.ID, EvaluatorIDs: []string{e.ID}})
	require.NoError(t, err)
	cfg, err := cp.CreateScoreConfig(ctx, project, controlplane.NewScoreConfig{Name: "config-of-b", DataType: controlplane.ScoreBoolean})
	require.NoError(t, err)
	q, err := cp.CreateAnnotationQueue(ctx, project, controlplane.NewAnnotationQueue{Name: "queue-of-b", ScoreConfigIDs: []string{cfg.ID}})
	require.NoError(t, err)
	it, _, err := cp.AddAnnotationQueueItem(ctx, project, q.ID, "object-of-b", controlplane.ObjectTrace, "")
	require.NoError(t, err)
	u, err := cp.CreateUser(ctx, controlplane.NewUser{Email: "reviewer@b.example.com", Name: "Reviewer of b"})
	require.NoError(t, err)
	require.NoError(t, cp.SetMembership(ctx, "org-b", u.ID, controlplane.RoleMember))
	require.NoError(t, cp.AssignAnnotationQueue(ctx, project, q.ID, u.ID))
	o.connection, o.evaluator, o.rule, o.job, o.experiment = cn.ID, e.ID, r.ID, job.ID, x.ID
	o.scoreConfig, o.queue, o.item, o.user = cfg.ID, q.ID, it.ID, u.ID
	return o
}

// noEvalObjectOfB asserts a 2xx that names none of tenant b's objects.
func noEvalObjectOfB(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	require.Less(t, rec.Code, 300, rec.Body.String())
	o := evalSeed
	for _, v := range []string{s.b.ProjectID, o.connection, o.evaluator, o.rule, o.job, o.experiment, o.scoreConfig, o.queue,
		o.item, o.user, "sk-secret-of-b", "evaluator-of-b", "rule-of-b", "run-of-b", "queue-of-b", "object-of-b"} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

// keyOrOwn accepts an upsert that made tenant a's own connection, or one
// refused because the server has no encryption key.
func keyOrOwn(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	if rec.Code == http.StatusServiceUnavailable {
		assert.Contains(t, rec.Body.String(), secretbox.EncryptionKeyEnv)
		return
	}
	noEvalObjectOfB(t, s, rec)
}

// connectionOfBRefused asserts that naming tenant b's LLM connection is a
// 400: a provider is looked up in the key's project only.
func connectionOfBRefused(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "is not an LLM connection of this project")
	assert.NotContains(t, rec.Body.String(), evalSeed.connection)
}

func bPath(format func(o evalObjects) string) func(server) string {
	return func(server) string { return format(evalSeed) }
}

var evaluationAttacks = map[string]attack{
	"GET /api/public/llm-connections": {auth: projectKey, target: fixed("/api/public/llm-connections"), check: noEvalObjectOfB},
	"PUT /api/public/llm-connections": {auth: projectKey, target: fixed("/api/public/llm-connections"),
		body:  func(server) any { return map[string]any{"provider": "judge-of-b", "secretKey": "sk-of-a-0123456789"} },
		check: keyOrOwn},
	"GET /api/public/llm-connections/{id}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/llm-connections/" + o.connection }), check: notFound},
	"DELETE /api/public/llm-connections/{id}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/llm-connections/" + o.connection }), check: notFound},

	"GET /api/public/evals/evaluators": {auth: projectKey, target: fixed("/api/public/evals/evaluators"), check: noEvalObjectOfB},
	"POST /api/public/evals/evaluators": {auth: projectKey, target: fixed("/api/public/evals/evaluators"),
		body: func(server) any {
			return map[string]any{"name": "evaluator-of-a", "kind": "cel", "scoreName": "s",
				"output": map[string]any{"dataType": "BOOLEAN"}, "expression": "true"}
		}, check: noEvalObjectOfB},
	"GET /api/public/evals/evaluators/{evaluatorId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/evaluators/" + o.evaluator }), check: notFound},
	"PATCH /api/public/evals/evaluators/{evaluatorId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/evaluators/" + o.evaluator }),
		body:   func(server) any { return map[string]any{"prompt": "hijacked {{output}}"} }, check: notFound},
	"DELETE /api/public/evals/evaluators/{evaluatorId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/evaluators/" + o.evaluator }), check: notFound},

	"GET /api/public/evals/rules": {auth: projectKey, target: fixed("/api/public/evals/rules"), check: noEvalObjectOfB},
	"POST /api/public/evals/rules": {auth: projectKey, target: fixed("/api/public/evals/rules"),
		body: func(server) any {
			return map[string]any{"name": "r", "evaluatorId": evalSeed.evaluator, "connectionId": evalSeed.connection, "target": "trace"}
		}, check: notFound},
	"GET /api/public/evals/rules/{ruleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/rules/" + o.rule }), check: notFound},
	"PATCH /api/public/evals/rules/{ruleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/rules/" + o.rule }),
		body:   func(server) any { return map[string]any{"active": false} }, check: notFound},
	"DELETE /api/public/evals/rules/{ruleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/rules/" + o.rule }), check: notFound},
	"POST /api/public/evals/rules/{ruleId}/backfill": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/rules/" + o.rule + "/backfill" }),
		body:   func(server) any { return map[string]any{"from": "2024-01-01T00:00:00Z", "to": "2024-02-01T00:00:00Z"} },
		check:  notFound},

	"GET /api/public/unstable/evaluators": {auth: projectKey, target: fixed("/api/public/unstable/evaluators?limit=100"),
		check: noEvalObjectOfB},
	"POST /api/public/unstable/evaluators": {auth: projectKey, target: fixed("/api/public/unstable/evaluators"),
		body: func(server) any {
			return map[string]any{"name": "evaluator-of-a", "type": "llm_as_judge", "prompt": "{{output}}",
				"modelConfig":      map[string]any{"provider": "judge-of-b", "model": "m"},
				"outputDefinition": map[string]any{"dataType": "BOOLEAN"}}
		}, check: connectionOfBRefused},
	"GET /api/public/unstable/evaluators/{evaluatorId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/unstable/evaluators/" + o.evaluator }), check: notFound},
	"DELETE /api/public/unstable/evaluators/{evaluatorId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/unstable/evaluators/" + o.evaluator }), check: notFound},

	"GET /api/public/unstable/evaluation-rules": {auth: projectKey, target: fixed("/api/public/unstable/evaluation-rules?limit=100"),
		check: noEvalObjectOfB},
	"POST /api/public/unstable/evaluation-rules": {auth: projectKey, target: fixed("/api/public/unstable/evaluation-rules"),
		body: func(server) any {
			return map[string]any{"name": "r", "enabled": true,
				"evaluatorAssignments": []map[string]any{{"evaluatorId": evalSeed.evaluator}}}
		}, check: notFound},
	"GET /api/public/unstable/evaluation-rules/{evaluationRuleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/unstable/evaluation-rules/" + o.rule }), check: notFound},
	"PATCH /api/public/unstable/evaluation-rules/{evaluationRuleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/unstable/evaluation-rules/" + o.rule }),
		body:   func(server) any { return map[string]any{"enabled": false} }, check: notFound},
	"DELETE /api/public/unstable/evaluation-rules/{evaluationRuleId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/unstable/evaluation-rules/" + o.rule }), check: notFound},

	"GET /api/public/evals/jobs": {auth: projectKey, target: fixed("/api/public/evals/jobs?limit=100"), check: noEvalObjectOfB},
	"GET /api/public/evals/jobs/{jobId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/jobs/" + o.job }), check: notFound},
	"POST /api/public/evals/jobs/{jobId}/retry": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/jobs/" + o.job + "/retry" }), check: notFound},

	"GET /api/public/evals/experiments": {auth: projectKey, target: fixed("/api/public/evals/experiments"), check: noEvalObjectOfB},
	"POST /api/public/evals/experiments": {auth: projectKey, target: fixed("/api/public/evals/experiments"),
		body: func(server) any {
			return map[string]any{"datasetName": "dataset-of-b", "runName": "r", "promptName": "experiment-prompt-of-b",
				"connectionId": evalSeed.connection}
		}, check: notFound},
	"GET /api/public/evals/experiments/{experimentId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/evals/experiments/" + o.experiment }), check: notFound},

	"GET /api/public/annotation-queues": {auth: projectKey, target: fixed("/api/public/annotation-queues"), check: noEvalObjectOfB},
	"POST /api/public/annotation-queues": {auth: projectKey, target: fixed("/api/public/annotation-queues"),
		body:  func(server) any { return map[string]any{"name": "q", "scoreConfigIds": []string{evalSeed.scoreConfig}} },
		check: notFound},
	"GET /api/public/annotation-queues/{queueId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue }), check: notFound},
	"GET /api/public/annotation-queues/{queueId}/items": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/items" }), check: notFound},
	"POST /api/public/annotation-queues/{queueId}/items": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/items" }),
		body:   func(server) any { return map[string]any{"objectId": "planted", "objectType": "TRACE"} }, check: notFound},
	"GET /api/public/annotation-queues/{queueId}/items/{itemId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/items/" + o.item }),
		check:  notFound},
	"PATCH /api/public/annotation-queues/{queueId}/items/{itemId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/items/" + o.item }),
		body: func(server) any {
			return map[string]any{"scores": []map[string]any{{"configId": evalSeed.scoreConfig, "value": 1}}}
		}, check: notFound},
	"DELETE /api/public/annotation-queues/{queueId}/items/{itemId}": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/items/" + o.item }),
		check:  notFound},
	"GET /api/public/annotation-queues/{queueId}/assignments": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/assignments" }),
		check:  notFound},
	"POST /api/public/annotation-queues/{queueId}/assignments": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/assignments" }),
		body:   func(server) any { return map[string]any{"userId": evalSeed.user} }, check: notFound},
	"DELETE /api/public/annotation-queues/{queueId}/assignments": {auth: projectKey,
		target: bPath(func(o evalObjects) string { return "/api/public/annotation-queues/" + o.queue + "/assignments" }),
		body:   func(server) any { return map[string]any{"userId": evalSeed.user} }, check: notFound},
}

func init() {
	// The SDKs call the unstable evaluator API under /v2: the same attacks there.
	for name, a := range evaluationAttacks {
		if strings.Contains(name, "/api/public/unstable/") {
			target := a.target
			a.target = func(s server) string { return strings.Replace(target(s), "/unstable/", "/v2/", 1) }
			evaluationAttacks[strings.Replace(name, "/unstable/", "/v2/", 1)] = a
		}
	}
	maps.Copy(attacks, evaluationAttacks)
}

// After every evaluation attack, tenant b's objects are whole.
func TestEvaluationAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, evaluationAttacks)
	o := evalSeed
	for _, path := range []string{
		"/api/public/llm-connections/" + o.connection,
		"/api/public/evals/evaluators/" + o.evaluator,
		"/api/public/evals/rules/" + o.rule,
		"/api/public/unstable/evaluation-rules/" + o.rule,
		"/api/public/unstable/evaluators/" + o.evaluator,
		"/api/public/evals/jobs/" + o.job,
		"/api/public/evals/experiments/" + o.experiment,
		"/api/public/annotation-queues/" + o.queue,
		"/api/public/annotation-queues/" + o.queue + "/items/" + o.item,
	} {
		rec := apitest.Do(t, s.h, http.MethodGet, path, s.b.ProjectAuth, nil)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		assert.NotContains(t, rec.Body.String(), "hijacked")
		assert.NotContains(t, rec.Body.String(), `"active":false`)
		assert.NotContains(t, rec.Body.String(), `"enabled":false`)
	}
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/annotation-queues/"+o.queue+"/items", s.b.ProjectAuth, nil)
	assert.NotContains(t, rec.Body.String(), "planted")
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/annotation-queues/"+o.queue+"/assignments", s.b.ProjectAuth, nil)
	assert.Contains(t, rec.Body.String(), o.user)
}
