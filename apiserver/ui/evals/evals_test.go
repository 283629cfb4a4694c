package evals_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

const key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func setup(t *testing.T) (*uitest.Env, *uitest.Client, *llmtest.Server, controlplane.LLMConnection) {
	t.Helper()
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", key)
	fake := llmtest.New(t, func(r llmtest.Request) string { return `{"reasoning":"the answer matches","score":0.75}` })
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) { c.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} }})
	box, err := secretbox.FromEnv(func(string) string { return key })
	require.NoError(t, err)
	conn, err := env.Store.UpsertLLMConnection(context.Background(), box, env.ProjectID, controlplane.LLMConnectionUpsert{Provider: "local",
		SecretKey: "sk-local-0123456789", BaseURL: fake.URL(), DefaultModel: ptr("judge-model"), Timeout: 5 * time.Second})
	require.NoError(t, err)
	env.ChatTrace(t, "t-1", "support chat", "alice", time.Now().Add(-time.Hour))
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	return env, c, fake, conn
}

func ptr[T any](v T) *T { return &v }

func TestEvaluatorFromTemplateWithPreview(t *testing.T) {
	env, c, fake, conn := setup(t)
	evals := "/project/" + env.ProjectID + "/evals"

	res := c.Get(evals)
	require.Equal(t, http.StatusOK, res.Status)
	for _, tpl := range []string{"correctness", "hallucination", "relevance", "helpfulness", "toxicity", "conciseness", "cel", "webhook"} {
		assert.Contains(t, res.Body, `data-template="`+tpl+`"`)
	}
	res = c.Get(evals + "/new?template=hallucination")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "{{context}}")
	assert.Contains(t, res.Body, `name="var_name" value="context"`, "the template maps its context variable")

	form := url.Values{"kind": {"llm"}, "name": {"Helpfulness"}, "score_name": {"helpful"}, "data_type": {"NUMERIC"}, "min": {"0"}, "max": {"1"},
		"prompt": {"Question: {{input}}\nReply: {{output}}\nTeam: {{team}}"}, "var_name": {"team", ""}, "var_source": {"trace", ""},
		"var_field": {"metadata", "input"}, "var_key": {"team", ""}, "var_observation": {"", ""},
		"preview_trace": {"t-1"}, "preview_connection": {conn.ID}, "op": {"preview"}}
	c.Get(evals + "/new?template=helpfulness")
	res = c.Post(evals+"/evaluators", form)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	prompt := res.Body[strings.Index(res.Body, `data-testid="preview-prompt"`):]
	prompt = prompt[:strings.Index(prompt, "</pre>")]
	assert.Contains(t, prompt, "Where is my **order** 42?", "the trace's input")
	assert.Contains(t, prompt, "It ships *tomorrow*.", "its output")
	assert.Contains(t, prompt, "Team: support", "the mapped metadata key")
	assert.Contains(t, res.Body, `<span data-testid="preview-score">0.75</span>`)
	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "judge-model", reqs[0].Model)
	assert.True(t, reqs[0].Schema, "the judge is asked for structured output")
	list, _, err := env.Store.ListEvaluators(context.Background(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, list, "a preview stores nothing")

	form.Set("op", "save")
	require.Equal(t, http.StatusSeeOther, c.Post(evals+"/evaluators", form).Status)
	list, _, err = env.Store.ListEvaluators(context.Background(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "helpful", list[0].ScoreName)
	assert.Equal(t, []controlplane.VariableMapping{{Name: "team", Source: "trace", Field: "metadata", Key: "team"}}, list[0].Variables)

	bad := url.Values{"kind": {"llm"}, "name": {"Empty"}, "score_name": {"x"}, "data_type": {"NUMERIC"}, "prompt": {"  "}, "op": {"save"}}
	res = c.Post(evals+"/evaluators", bad)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "prompt is required")
}

func TestCodeEvaluatorPreview(t *testing.T) {
	env, c, _, _ := setup(t)
	evals := "/project/" + env.ProjectID + "/evals"
	res := c.Get(evals + "/new?kind=cel")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "output == expected_output")
	form := url.Values{"kind": {"cel"}, "name": {"Mentions shipping"}, "score_name": {"ships"}, "data_type": {"BOOLEAN"},
		"expression": {`output.contains("tomorrow")`}, "preview_trace": {"t-1"}, "op": {"preview"}}
	res = c.Post(evals+"/evaluators", form)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, `<span data-testid="preview-score">True</span>`)
	form.Set("expression", `output.contains(`)
	res = c.Post(evals+"/evaluators", form)
	assert.Contains(t, res.Body, "The preview failed", "a broken expression is reported")
}

func TestRulesAndJobs(t *testing.T) {
	env, c, _, conn := setup(t)
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	ctx := context.Background()
	e, err := env.Store.CreateEvaluator(ctx, env.ProjectID, controlplane.NewEvaluator{Name: "judge", Kind: controlplane.EvaluatorLLM, ScoreName: "q",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, Prompt: "Is {{output}} fine?"})
	require.NoError(t, err)
	evals := "/project/" + env.ProjectID + "/evals"
	c.Get(evals + "?tab=rules")

	rule := url.Values{"name": {"prod chats"}, "evaluator": {e.ID}, "connection": {conn.ID}, "target": {"trace"}, "sampling": {"50"}, "delay": {"30"},
		"cond_field": {"tags", "metadata", ""}, "cond_key": {"", "team", ""}, "cond_op": {"any of", "=", "="}, "cond_value": {"prod, vip", "support", ""}}
	require.Equal(t, http.StatusSeeOther, c.Post(evals+"/rules", rule).Status)
	rules, _, err := env.Store.ListEvalRules(ctx, env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, rules, 1)
	r := rules[0]
	assert.Equal(t, 0.5, r.SamplingRate)
	assert.Equal(t, 30*time.Second, r.Delay)
	assert.Equal(t, evaljobs.Filter{{Field: "tags", Operator: "any of", Values: []string{"prod", "vip"}}, {Field: "metadata", Key: "team", Operator: "=", Value: "support"}}, r.Filter)

	bad := url.Values{"name": {"bad"}, "evaluator": {e.ID}, "connection": {conn.ID}, "target": {"trace"}, "sampling": {"100"}, "delay": {"0"},
		"cond_field": {"model"}, "cond_key": {""}, "cond_op": {"="}, "cond_value": {"gpt-4o"}}
	res := c.Post(evals+"/rules", bad)
	assert.Equal(t, http.StatusBadRequest, res.Status, "a trace rule cannot filter by model")
	assert.Contains(t, res.Body, "model")
	assert.Contains(t, res.Body, `value="gpt-4o"`, "the form keeps what was typed")

	res = c.Get(evals + "?tab=rules")
	assert.Contains(t, res.Body, `data-rule="prod chats"`)
	assert.Contains(t, res.Body, "tags any of prod, vip")
	require.Equal(t, http.StatusSeeOther, c.Post(evals+"/rules/"+r.ID+"/active", url.Values{"active": {"false"}}).Status)
	got, err := env.Store.GetEvalRule(ctx, env.ProjectID, r.ID)
	require.NoError(t, err)
	assert.False(t, got.Active)

	require.Equal(t, http.StatusSeeOther, c.Post(evals+"/rules/"+r.ID+"/backfill", url.Values{"days": {"7"}}).Status)
	res = c.Get(evals + "?tab=jobs")
	assert.Contains(t, res.Body, `data-status="PENDING"`, "the backfill is queued")
	assert.Contains(t, res.Body, "backfill")
	assert.Equal(t, http.StatusBadRequest, c.Post(evals+"/rules/"+r.ID+"/backfill", url.Values{"days": {"400"}}).Status)

	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	res = viewer.Get(evals + "?tab=rules")
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, `data-testid="new-rule"`)
	assert.Equal(t, http.StatusForbidden, viewer.Post(evals+"/rules", rule).Status)
	assert.Equal(t, http.StatusForbidden, viewer.Post(evals+"/rules/"+r.ID+"/delete", url.Values{}).Status)

	require.Equal(t, http.StatusSeeOther, c.Post(evals+"/rules/"+r.ID+"/delete", url.Values{}).Status)
	_, err = env.Store.GetEvalRule(ctx, env.ProjectID, r.ID)
	assert.ErrorIs(t, err, controlplane.ErrNotFound)
}
