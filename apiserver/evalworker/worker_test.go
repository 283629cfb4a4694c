package evalworker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func ptr[T any](v T) *T { return &v }

// env is a project on real stores, a fake provider, and a running worker.
type env struct {
	t       *testing.T
	cp      *controlplane.Store
	ch      *chstore.Store
	box     *secretbox.Box
	project string
	llm     *llmtest.Server
	conn    controlplane.LLMConnection
	worker  *Worker
}

func testConfig() Config {
	cfg := NewDefaultConfig()
	cfg.PollInterval = 20 * time.Millisecond
	cfg.RetryBackoff = 10 * time.Millisecond
	cfg.MaxRetryBackoff = 50 * time.Millisecond
	cfg.MaxAttempts = 3
	cfg.LLMAllowedHosts = []string{"127.0.0.1"} // where llmtest serves
	return cfg
}

func newEnv(t *testing.T, cp *controlplane.Store, answer llmtest.Answer) *env {
	t.Helper()
	ctx := context.Background()
	box, err := secretbox.FromEnv(func(string) string { return testKey })
	require.NoError(t, err)
	e := &env{t: t, cp: cp, ch: chtest.Store(t), box: box, project: apitest.Seed(t, cp, "a").ProjectID, llm: llmtest.New(t, answer)}
	e.conn, err = cp.UpsertLLMConnection(ctx, box, e.project, controlplane.LLMConnectionUpsert{
		Provider: "judge", SecretKey: "sk-test-0123456789", BaseURL: e.llm.URL(), DefaultModel: ptr("gpt-4o-mini"),
		DefaultParams: json.RawMessage(`{"temperature":0}`), Timeout: time.Second,
	})
	require.NoError(t, err)
	return e
}

// start runs a worker with cfg until the test ends.
func (e *env) start(cfg Config) {
	w, err := New(cfg, e.cp, e.ch, e.box, zap.NewNop())
	require.NoError(e.t, err)
	e.worker = w
	w.Start()
	e.t.Cleanup(w.Stop)
}

// waitJobs waits until every job of the project is final and returns them.
func (e *env) waitJobs(f evalqueue.Filter) []evalqueue.Job {
	e.t.Helper()
	f.Limit = 1000
	var jobs []evalqueue.Job
	require.Eventually(e.t, func() bool {
		var err error
		jobs, _, err = e.cp.ListEvalJobs(context.Background(), e.project, f)
		require.NoError(e.t, err)
		for _, j := range jobs {
			if j.Status == evalqueue.Pending || j.Status == evalqueue.Running {
				return false
			}
		}
		return len(jobs) > 0
	}, 20*time.Second, 20*time.Millisecond)
	return jobs
}

func (e *env) scores(f chstore.ScoreFilter) []chstore.Score {
	e.t.Helper()
	f.ProjectID, f.Limit = e.project, 100
	scores, _, err := e.ch.ListScores(context.Background(), f)
	require.NoError(e.t, err)
	return scores
}

func traceID(n int) string { return fmt.Sprintf("%032x", n+0xabc000) }
func spanID(n int) string  { return fmt.Sprintf("%016x", n+0xdef000) }

// insertTrace stores a trace: a root span with the trace's input and
// output and a generation child.
func (e *env) insertTrace(n int, at time.Time, mutate func(root, gen *model.Observation)) {
	e.t.Helper()
	root := model.Observation{ProjectID: e.project, TraceID: traceID(n), ID: spanID(2 * n), Type: model.TypeSpan, Name: "chat",
		StartTime: at.UnixMicro(), EndTime: at.Add(time.Second).UnixMicro(), Level: model.LevelDefault, Metadata: "{}",
		Environment: "production", TraceName: "chat", Tags: []string{"prod"}, TraceMetadata: `{"customer":"acme"}`, IsRoot: true,
		TraceInput: `{"question":"What is 2+2?"}`, TraceOutput: `"four"`, Input: `{"question":"What is 2+2?"}`, Output: `"four"`,
		SampleRate: 1}
	gen := root
	gen.ID, gen.ParentID, gen.Type, gen.Name, gen.IsRoot = spanID(2*n+1), root.ID, model.TypeGeneration, "llm", false
	gen.Model, gen.Input, gen.Output = "gpt-4o", `[{"role":"user","content":"What is 2+2?"}]`, "four"
	gen.StartTime += 1000
	if mutate != nil {
		mutate(&root, &gen)
	}
	require.NoError(e.t, e.ch.InsertObservations(context.Background(), []model.Observation{root, gen}))
}

func (e *env) evaluator(n controlplane.NewEvaluator) controlplane.Evaluator {
	e.t.Helper()
	ev, err := e.cp.CreateEvaluator(context.Background(), e.project, n)
	require.NoError(e.t, err)
	return ev
}

func (e *env) rule(n controlplane.NewEvalRule) controlplane.EvalRule {
	e.t.Helper()
	if n.Delay == nil {
		n.Delay = ptr(time.Duration(0))
	}
	r, err := e.cp.CreateEvalRule(context.Background(), e.project, n)
	require.NoError(e.t, err)
	return r
}

func (e *env) enqueue(jobs ...evaljobs.Job) {
	e.t.Helper()
	for i := range jobs {
		jobs[i].ProjectID, jobs[i].Due = e.project, time.Now()
	}
	require.NoError(e.t, e.cp.EnqueueEvalJobs(context.Background(), jobs))
}

var judgeOutput = controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric, Min: ptr(0.0), Max: ptr(1.0), Description: "correctness"}

func (e *env) judgeRule(filter evaljobs.Filter) controlplane.EvalRule {
	judge := e.evaluator(controlplane.NewEvaluator{Name: "correctness", Kind: controlplane.EvaluatorLLM, ScoreName: "correct",
		Output: judgeOutput, Prompt: "Question: {{input}}\nAnswer: {{output}}\nCustomer: {{customer}}",
		Variables: []controlplane.VariableMapping{{Name: "customer", Source: controlplane.SourceTrace, Field: controlplane.FieldMetadata, Key: "customer"}}})
	return e.rule(controlplane.NewEvalRule{Name: "judge", EvaluatorID: judge.ID, ConnectionID: e.conn.ID,
		Target: evaljobs.TargetTrace, Filter: filter})
}

func TestRuleJobScoresATraceWithAnLLMJudge(t *testing.T) {
	apitest.ForEachBackend(t, func(t *testing.T, cp *controlplane.Store) {
		e := newEnv(t, cp, func(r llmtest.Request) string { return `{"reasoning":"2+2 is four","score":0.9}` })
		rule := e.judgeRule(evaljobs.Filter{{Field: evaljobs.FieldTags, Operator: evaljobs.OpAnyOf, Values: []string{"prod"}}})
		e.insertTrace(1, time.Now(), nil)
		e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(1)})
		e.start(testConfig())

		jobs := e.waitJobs(evalqueue.Filter{RuleID: rule.ID})
		require.Len(t, jobs, 1)
		job := jobs[0]
		require.Equal(t, evalqueue.Succeeded, job.Status, job.LastError)
		assert.Equal(t, 1, job.Attempts)
		require.NotEmpty(t, job.ScoreID)
		require.NotEmpty(t, job.ExecutionTraceID)

		scores := e.scores(chstore.ScoreFilter{TraceID: traceID(1)})
		require.Len(t, scores, 1)
		sc := scores[0]
		assert.Equal(t, job.ScoreID, sc.ID)
		assert.Equal(t, "correct", sc.Name)
		assert.Equal(t, 0.9, sc.Value)
		assert.Equal(t, chstore.SourceEval, sc.Source)
		assert.Equal(t, chstore.ScoreNumeric, sc.DataType)
		assert.Equal(t, "2+2 is four", sc.Comment)
		assert.Equal(t, "production", sc.Environment)
		var meta map[string]string
		require.NoError(t, json.Unmarshal([]byte(sc.Metadata), &meta))
		assert.Equal(t, rule.ID, meta["ruleId"])
		assert.Equal(t, job.ID, meta["jobId"])
		assert.Equal(t, job.ExecutionTraceID, meta["executionTraceId"])

		reqs := e.llm.Requests()
		require.Len(t, reqs, 1)
		assert.Equal(t, "Question: {\"question\":\"What is 2+2?\"}\nAnswer: four\nCustomer: acme", reqs[0].Prompt)
		assert.True(t, reqs[0].Schema, "structured output is asked for")
		assert.Equal(t, "Bearer sk-test-0123456789", reqs[0].Header.Get("Authorization"))
		assert.Equal(t, 0.0, reqs[0].Body["temperature"])

		// The judge call is a generation of its own trace, with usage and cost.
		exec, err := e.ch.GetTrace(context.Background(), e.project, job.ExecutionTraceID)
		require.NoError(t, err)
		assert.Equal(t, JudgeEnvironment, exec.Environment)
		require.Len(t, exec.Observations, 1)
		gen := exec.Observations[0]
		assert.Equal(t, model.TypeGeneration, gen.Type)
		assert.Equal(t, "gpt-4o-mini", gen.Model)
		assert.Positive(t, gen.UsageDetails["input"])
		assert.Positive(t, gen.CostDetails["total"])
		assert.Contains(t, gen.Output, "2+2 is four")
	})
}

func TestRetriesRecoverFrom429And5xxAndTimeouts(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), nil)
	rule := e.judgeRule(nil)
	e.insertTrace(1, time.Now(), nil)
	e.llm.Fail(llmtest.Fault{Status: http.StatusTooManyRequests}, llmtest.Fault{Status: http.StatusBadGateway})
	e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(1)})
	cfg := testConfig()
	cfg.MaxAttempts = 4
	e.start(cfg)
	jobs := e.waitJobs(evalqueue.Filter{RuleID: rule.ID})
	require.Equal(t, evalqueue.Succeeded, jobs[0].Status, jobs[0].LastError)
	assert.Equal(t, 3, jobs[0].Attempts)
	assert.Len(t, e.scores(chstore.ScoreFilter{TraceID: traceID(1)}), 1)

	// A call slower than the connection's timeout is cut off and retried.
	e.insertTrace(2, time.Now(), nil)
	e.llm.Fail(llmtest.Fault{Delay: 3 * time.Second})
	e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(2)})
	jobs = e.waitJobs(evalqueue.Filter{RuleID: rule.ID, TraceID: traceID(2)})
	require.Equal(t, evalqueue.Succeeded, jobs[0].Status, jobs[0].LastError)
	assert.Equal(t, 2, jobs[0].Attempts)
}

func TestJobsFailWithTheErrorVisible(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), func(r llmtest.Request) string { return `{"reasoning":"x","score":7}` })
	rule := e.judgeRule(nil)
	e.insertTrace(1, time.Now(), nil)
	e.insertTrace(2, time.Now(), nil)
	e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(1)})
	e.start(testConfig())
	jobs := e.waitJobs(evalqueue.Filter{RuleID: rule.ID})
	require.Equal(t, evalqueue.Failed, jobs[0].Status)
	assert.Equal(t, 3, jobs[0].Attempts, "an out-of-range answer is retried up to max_attempts")
	assert.Contains(t, jobs[0].LastError, "gave up after 3 attempts")
	assert.Contains(t, jobs[0].LastError, "outside [0, 1]")
	assert.NotEmpty(t, jobs[0].ExecutionTraceID, "the judge calls were recorded")

	e.llm.Fail(llmtest.Fault{Status: http.StatusUnauthorized})
	e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(2)})
	jobs = e.waitJobs(evalqueue.Filter{RuleID: rule.ID, TraceID: traceID(2)})
	require.Equal(t, evalqueue.Failed, jobs[0].Status)
	assert.Equal(t, 1, jobs[0].Attempts, "401 is not retried")
	assert.Contains(t, jobs[0].LastError, "401")
	exec, err := e.ch.GetTrace(context.Background(), e.project, jobs[0].ExecutionTraceID)
	require.NoError(t, err)
	assert.Equal(t, model.LevelError, exec.Observations[0].Level)

	// A trace that never arrives fails after the attempts, saying why.
	e.enqueue(evaljobs.Job{RuleID: rule.ID, TraceID: traceID(99)})
	jobs = e.waitJobs(evalqueue.Filter{RuleID: rule.ID, TraceID: traceID(99)})
	require.Equal(t, evalqueue.Failed, jobs[0].Status)
	assert.Contains(t, jobs[0].LastError, "not stored yet")
}

func TestCELAndWebhookEvaluatorsScore(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), nil)
	var hookBody map[string]any
	var hookMu sync.Mutex
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		defer hookMu.Unlock()
		_ = json.NewDecoder(r.Body).Decode(&hookBody)
		_, _ = w.Write([]byte(`{"value":"polite","comment":"says please"}`))
	}))
	defer hook.Close()
	cel := e.evaluator(controlplane.NewEvaluator{Name: "short", Kind: controlplane.EvaluatorCEL, ScoreName: "short",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, Expression: `size(output) < 10`})
	web := e.evaluator(controlplane.NewEvaluator{Name: "tone", Kind: controlplane.EvaluatorWebhook, ScoreName: "tone",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreCategorical, Categories: []string{"polite", "rude"}}, URL: hook.URL})
	gens := evaljobs.Filter{{Field: evaljobs.FieldType, Operator: evaljobs.OpEquals, Value: model.TypeGeneration}}
	celRule := e.rule(controlplane.NewEvalRule{Name: "cel", EvaluatorID: cel.ID, Target: evaljobs.TargetObservation, Filter: gens})
	webRule := e.rule(controlplane.NewEvalRule{Name: "web", EvaluatorID: web.ID, Target: evaljobs.TargetTrace})
	e.insertTrace(1, time.Now(), nil)
	e.enqueue(evaljobs.Job{RuleID: celRule.ID, TraceID: traceID(1), ObservationID: spanID(3)},
		evaljobs.Job{RuleID: webRule.ID, TraceID: traceID(1)})
	cfg := testConfig()
	cfg.WebhookAllowedHosts = []string{"127.0.0.1"}
	e.start(cfg)
	for _, j := range e.waitJobs(evalqueue.Filter{}) {
		require.Equal(t, evalqueue.Succeeded, j.Status, j.LastError)
		assert.Empty(t, j.ExecutionTraceID, "code evaluators make no LLM call")
	}
	short := e.scores(chstore.ScoreFilter{Name: "short"})
	require.Len(t, short, 1)
	assert.Equal(t, spanID(3), short[0].ObservationID)
	assert.Equal(t, 1.0, short[0].Value)
	assert.Equal(t, "True", short[0].StringValue)
	tone := e.scores(chstore.ScoreFilter{Name: "tone"})
	require.Len(t, tone, 1)
	assert.Equal(t, "polite", tone[0].StringValue)
	assert.Equal(t, "says please", tone[0].Comment)
	assert.Empty(t, tone[0].ObservationID)
	hookMu.Lock()
	defer hookMu.Unlock()
	assert.Equal(t, "four", hookBody["variables"].(map[string]any)["output"])
	assert.Equal(t, traceID(1), hookBody["target"].(map[string]any)["traceId"])
	assert.Empty(t, e.llm.Requests())
}

// The egress policy is applied again when a webhook is called: an evaluator
// saved before the policy changed (or written straight to the store) fails
// at once, without a retry and without reaching the host.
func TestWebhookCallsFollowTheEgressPolicy(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), nil)
	var calls atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte(`{"value":true}`))
	}))
	defer hook.Close()
	port := hook.URL[strings.LastIndex(hook.URL, ":")+1:]
	rules := map[string]string{}
	for name, url := range map[string]string{
		"unlisted": "https://hooks.example.net/score",
		"loopback": hook.URL,
		"by name":  "http://localhost:" + port + "/",
	} {
		ev := e.evaluator(controlplane.NewEvaluator{Name: name, Kind: controlplane.EvaluatorWebhook, ScoreName: "ok",
			Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, URL: url})
		rules[e.rule(controlplane.NewEvalRule{Name: name, EvaluatorID: ev.ID, Target: evaljobs.TargetTrace}).ID] = name
	}
	e.insertTrace(1, time.Now(), nil)
	for id := range rules {
		e.enqueue(evaljobs.Job{RuleID: id, TraceID: traceID(1)})
	}
	cfg := testConfig()
	cfg.WebhookAllowedHosts = []string{"*.example.com"}
	e.start(cfg)
	for _, j := range e.waitJobs(evalqueue.Filter{}) {
		name := rules[j.RuleID]
		assert.Equal(t, evalqueue.Failed, j.Status, name)
		assert.Equal(t, 1, j.Attempts, "%s: a refusal is not retried", name)
		assert.Contains(t, j.LastError, "evaluation.webhook_allowed_hosts", name)
	}
	assert.Zero(t, calls.Load(), "no refused call reaches the host")
}

// LLM connections are held against the egress policy on every call: by
// default a loopback or metadata address is refused at once, without a
// retry and without reaching the host; listing it lets the call through.
func TestLLMCallsFollowTheEgressPolicy(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), func(llmtest.Request) string { return `{"reasoning":"fine","score":1}` })
	metadata, err := e.cp.UpsertLLMConnection(context.Background(), e.box, e.project, controlplane.LLMConnectionUpsert{
		Provider: "metadata", SecretKey: "sk-test-0123456789", BaseURL: "http://169.254.169.254/v1", DefaultModel: ptr("gpt-4o-mini"),
		Timeout: time.Second,
	})
	require.NoError(t, err)
	loopback := e.judgeRule(nil)
	judge, err := e.cp.GetEvaluator(context.Background(), e.project, loopback.EvaluatorID)
	require.NoError(t, err)
	viaMetadata := e.rule(controlplane.NewEvalRule{Name: "metadata", EvaluatorID: judge.ID, ConnectionID: metadata.ID,
		Target: evaljobs.TargetTrace})
	e.insertTrace(1, time.Now(), nil)
	e.enqueue(evaljobs.Job{RuleID: loopback.ID, TraceID: traceID(1)}, evaljobs.Job{RuleID: viaMetadata.ID, TraceID: traceID(1)})
	cfg := testConfig()
	cfg.LLMAllowedHosts = nil
	w, err := New(cfg, e.cp, e.ch, e.box, zap.NewNop())
	require.NoError(t, err)
	w.Start()
	jobs := e.waitJobs(evalqueue.Filter{})
	w.Stop()
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		assert.Equal(t, evalqueue.Failed, j.Status, j.RuleID)
		assert.Equal(t, 1, j.Attempts, "a refusal is not retried")
		assert.Contains(t, j.LastError, "evaluation.llm_allowed_hosts")
		assert.Contains(t, j.LastError, "non-public address")
	}
	assert.Empty(t, e.llm.Requests(), "no refused call reaches the host")

	e.insertTrace(2, time.Now(), nil)
	e.enqueue(evaljobs.Job{RuleID: loopback.ID, TraceID: traceID(2)})
	e.start(testConfig())
	jobs = e.waitJobs(evalqueue.Filter{TraceID: traceID(2)})
	require.Equal(t, evalqueue.Succeeded, jobs[0].Status, jobs[0].LastError)
	assert.Len(t, e.llm.Requests(), 1)
}

func TestJobsAreSkippedWhenTheirRuleNoLongerApplies(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), nil)
	cel := e.evaluator(controlplane.NewEvaluator{Name: "one", Kind: controlplane.EvaluatorCEL, ScoreName: "one",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric}, Expression: `1`})
	dev := e.rule(controlplane.NewEvalRule{Name: "dev only", EvaluatorID: cel.ID, Target: evaljobs.TargetTrace,
		Filter: evaljobs.Filter{{Field: evaljobs.FieldEnvironment, Operator: evaljobs.OpEquals, Value: "dev"}}})
	off := e.rule(controlplane.NewEvalRule{Name: "off", EvaluatorID: cel.ID, Target: evaljobs.TargetTrace})
	e.insertTrace(1, time.Now(), nil)
	// Both were enqueued while they applied.
	e.enqueue(evaljobs.Job{RuleID: dev.ID, TraceID: traceID(1)}, evaljobs.Job{RuleID: off.ID, TraceID: traceID(1)})
	_, err := e.cp.UpdateEvalRule(context.Background(), e.project, off.ID, controlplane.EvalRuleUpdate{Active: ptr(false)})
	require.NoError(t, err)
	e.start(testConfig())
	reasons := map[string]string{}
	for _, j := range e.waitJobs(evalqueue.Filter{}) {
		assert.Equal(t, evalqueue.Skipped, j.Status)
		reasons[j.RuleID] = j.LastError
	}
	assert.Contains(t, reasons[dev.ID], "no longer matches")
	assert.Contains(t, reasons[off.ID], "inactive")
	assert.Empty(t, e.scores(chstore.ScoreFilter{}))
}

func TestBackfillQueuesTheMatchingStoredTraces(t *testing.T) {
	e := newEnv(t, apitest.ControlPlane(t), nil)
	cel := e.evaluator(controlplane.NewEvaluator{Name: "one", Kind: controlplane.EvaluatorCEL, ScoreName: "one",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric}, Expression: `1`})
	rule := e.rule(controlplane.NewEvalRule{Name: "acme", EvaluatorID: cel.ID, Target: evaljobs.TargetTrace,
		Filter: evaljobs.Filter{{Field: evaljobs.FieldMetadata, Key: "customer", Operator: evaljobs.OpEquals, Value: "acme"}}})
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	want := map[string]bool{}
	for i := range 12 {
		e.insertTrace(i, base.Add(time.Duration(i)*time.Minute), func(root, gen *model.Observation) {
			if i%3 == 0 {
				root.TraceMetadata, gen.TraceMetadata = `{"customer":"globex"}`, `{"customer":"globex"}`
			}
			if i == 4 {
				root.Environment, gen.Environment = JudgeEnvironment, JudgeEnvironment
			}
		})
		if i%3 != 0 && i != 4 {
			want[traceID(i)] = true
		}
	}
	e.insertTrace(50, base.Add(-time.Hour), nil) // before the window
	job, err := e.cp.EnqueueBackfill(context.Background(), e.project, rule.ID, base, base.Add(time.Hour))
	require.NoError(t, err)
	cfg := testConfig()
	cfg.BackfillPageSize = 5
	e.start(cfg)
	e.waitJobs(evalqueue.Filter{})
	done, err := e.cp.GetEvalJob(context.Background(), e.project, job.ID)
	require.NoError(t, err)
	require.Equal(t, evalqueue.Succeeded, done.Status, done.LastError)
	var state evalqueue.BackfillState
	require.NoError(t, json.Unmarshal(done.State, &state))
	assert.Equal(t, 12, state.Scanned)
	assert.Equal(t, len(want), state.Enqueued)
	assert.Equal(t, 4, state.Page, "three pages of five, the last partial")
	assert.Equal(t, 1, done.Attempts, "pages are progress, not attempts")

	ruleJobs, total, err := e.cp.ListEvalJobs(context.Background(), e.project, evalqueue.Filter{Kind: evalqueue.KindRule, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, len(want), total)
	for _, j := range ruleJobs {
		assert.True(t, want[j.TraceID], j.TraceID)
		assert.Equal(t, evalqueue.Succeeded, j.Status, j.LastError)
	}
	assert.Len(t, e.scores(chstore.ScoreFilter{Name: "one"}), len(want))
}

func TestPromptExperimentRecordsARunWithScores(t *testing.T) {
	apitest.ForEachBackend(t, func(t *testing.T, cp *controlplane.Store) {
		e := newEnv(t, cp, func(r llmtest.Request) string {
			if r.Schema {
				return `{"reasoning":"matches the expected answer","score":1}`
			}
			return strings.TrimPrefix(r.Prompt, "Answer briefly: ")
		})
		ctx := context.Background()
		_, err := cp.UpsertDataset(ctx, e.project, controlplane.DatasetUpsert{Name: "arithmetic"})
		require.NoError(t, err)
		for i, q := range []string{"2+2", "3+3"} {
			_, err := cp.UpsertDatasetItem(ctx, e.project, controlplane.DatasetItemUpsert{DatasetName: "arithmetic", ID: fmt.Sprintf("item-%d", i),
				Input: json.RawMessage(fmt.Sprintf(`{"question":%q}`, q)), ExpectedOutput: json.RawMessage(fmt.Sprintf("%q", q))})
			require.NoError(t, err)
		}
		_, err = cp.CreatePrompt(ctx, e.project, controlplane.NewPrompt{Name: "answerer", Type: controlplane.PromptChat,
			Prompt: json.RawMessage(`[{"role":"system","content":"Be brief."},{"type":"placeholder","name":"history"},{"role":"user","content":"Answer briefly: {{question}}"}]`),
			Config: json.RawMessage(`{"model":"gpt-4o","max_tokens":50}`), Labels: []string{controlplane.LabelProduction}})
		require.NoError(t, err)
		judge := e.evaluator(controlplane.NewEvaluator{Name: "judge", Kind: controlplane.EvaluatorLLM, ScoreName: "correct",
			Output: judgeOutput, Prompt: "Expected {{expected_output}}, got {{output}}"})
		exact := e.evaluator(controlplane.NewEvaluator{Name: "exact", Kind: controlplane.EvaluatorCEL, ScoreName: "exact",
			Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, Expression: `output == expected_output`})
		x, err := cp.CreateExperiment(ctx, e.project, controlplane.NewExperiment{DatasetName: "arithmetic", RunName: "gpt-4o run",
			PromptName: "answerer", ConnectionID: e.conn.ID, EvaluatorIDs: []string{judge.ID, exact.ID}})
		require.NoError(t, err)
		e.start(testConfig())

		require.Eventually(t, func() bool {
			counts, err := cp.CountEvalJobs(ctx, e.project, "", x.ID)
			require.NoError(t, err)
			return counts[evalqueue.Succeeded] == 6
		}, 20*time.Second, 20*time.Millisecond)

		run, err := cp.GetDatasetRun(ctx, e.project, "arithmetic", "gpt-4o run")
		require.NoError(t, err)
		items, total, err := cp.ListDatasetRunItems(ctx, e.project, controlplane.DatasetRunItemFilter{RunID: run.ID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		for _, ri := range items {
			trace, err := e.ch.GetTrace(ctx, e.project, ri.TraceID)
			require.NoError(t, err)
			assert.Equal(t, ExperimentEnvironment, trace.Environment)
			require.Len(t, trace.Observations, 1)
			gen := trace.Observations[0]
			assert.Equal(t, ri.ObservationID, gen.ID)
			assert.Equal(t, "gpt-4o", gen.Model, "the prompt's config names the model")
			assert.Equal(t, "answerer", gen.PromptName)
			assert.Equal(t, int64(1), gen.PromptVersion)
			scores := e.scores(chstore.ScoreFilter{TraceID: ri.TraceID})
			byName := map[string]chstore.Score{}
			for _, sc := range scores {
				byName[sc.Name] = sc
			}
			require.Len(t, byName, 2)
			assert.Equal(t, 1.0, byName["correct"].Value)
			assert.Equal(t, "True", byName["exact"].StringValue, "the output equals the expected output")
		}
		var calls []llmtest.Request
		for _, r := range e.llm.Requests() {
			if !r.Schema {
				calls = append(calls, r)
			}
		}
		require.Len(t, calls, 2)
		msgs := calls[0].Body["messages"].([]any)
		require.Len(t, msgs, 2, "the placeholder is left out")
		assert.Equal(t, "Be brief.", msgs[0].(map[string]any)["content"])
		assert.EqualValues(t, 50, calls[0].Body["max_tokens"])
		assert.Equal(t, 0.0, calls[0].Body["temperature"], "the connection's defaults apply beneath the prompt's")
	})
}

func TestConnectionConcurrencyLimit(t *testing.T) {
	var (
		inFlight, peak atomic.Int32
	)
	e := newEnv(t, apitest.ControlPlane(t), func(r llmtest.Request) string {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		inFlight.Add(-1)
		return `{"reasoning":"ok","score":1}`
	})
	_, err := e.cp.UpsertLLMConnection(context.Background(), e.box, e.project, controlplane.LLMConnectionUpsert{Provider: "judge", MaxConcurrency: 1})
	require.NoError(t, err)
	rule := e.judgeRule(nil)
	var jobs []evaljobs.Job
	for i := range 4 {
		e.insertTrace(i, time.Now(), nil)
		jobs = append(jobs, evaljobs.Job{RuleID: rule.ID, TraceID: traceID(i)})
	}
	e.enqueue(jobs...)
	cfg := testConfig()
	cfg.Workers = 4
	e.start(cfg)
	for _, j := range e.waitJobs(evalqueue.Filter{}) {
		assert.Equal(t, evalqueue.Succeeded, j.Status, j.LastError)
		assert.Equal(t, 1, j.Attempts, "waiting for capacity uses no attempt")
	}
	assert.Equal(t, int32(1), peak.Load())
}

func TestStopIsSafe(t *testing.T) {
	w, err := New(testConfig(), apitest.ControlPlane(t), nil, nil, zap.NewNop())
	require.NoError(t, err)
	w.Stop()
	w.Start()
	w.Stop()
	w.Stop()
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, NewDefaultConfig().Validate())
	cfg := Config{}
	err := cfg.Validate()
	for _, want := range []string{"workers", "poll_interval", "lease", "max_attempts", "retry_backoff", "backfill_page_size", "job_retention"} {
		assert.ErrorContains(t, err, "evaluation."+want)
	}
	_, err = New(cfg, nil, nil, nil, zap.NewNop())
	assert.Error(t, err)

	cfg = NewDefaultConfig()
	cfg.WebhookAllowedHosts = []string{"hooks.example.com", "https://hooks.example.com/score"}
	err = cfg.Validate()
	assert.ErrorContains(t, err, `evaluation.webhook_allowed_hosts: "https://hooks.example.com/score" is not a host name`)

	cfg = NewDefaultConfig()
	cfg.LLMAllowedHosts = []string{"api.openai.com:443"}
	err = cfg.Validate()
	assert.ErrorContains(t, err, `evaluation.llm_allowed_hosts: "api.openai.com:443" is not a host name`)
}

func TestBackoffDoublesWithJitterUpToTheCap(t *testing.T) {
	w := &Worker{cfg: Config{RetryBackoff: time.Second, MaxRetryBackoff: 5 * time.Second}}
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 9: 5 * time.Second} {
		got := w.backoff(attempts)
		assert.InDelta(t, float64(want), float64(got), float64(want)/5+1, "attempts %d", attempts)
	}
}

func TestDerivedIDs(t *testing.T) {
	trace, span := derivedIDs("k")
	again, _ := derivedIDs("k")
	other, _ := derivedIDs("l")
	assert.Len(t, trace, 32)
	assert.Len(t, span, 16)
	_, err := hex.DecodeString(trace + span)
	require.NoError(t, err)
	assert.Equal(t, trace, again)
	assert.NotEqual(t, trace, other)
	assert.Equal(t, scoreID("a", "b"), scoreID("a", "b"))
	assert.NotEqual(t, scoreID("a", "b"), scoreID("ab"))
}
