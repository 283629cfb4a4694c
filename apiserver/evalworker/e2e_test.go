package evalworker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/glassbox-dev/glassbox/exporter/clickhouseexporter"
	"github.com/glassbox-dev/glassbox/extension/apikeyauthextension"
	"github.com/glassbox-dev/glassbox/extension/apiserverextension"
	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/extension/workersextension"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
	"github.com/glassbox-dev/glassbox/processor/evaltapprocessor"
	"github.com/glassbox-dev/glassbox/receiver/ingestreceiver"
)

const (
	publicKey = "pk-lf-evaluation"
	secretKey = "sk-lf-evaluation-0123456789-0123456789ab"
)

type host struct {
	component.Host
	ext map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.ext }

// collector runs the all-in-one pipeline in process: glassbox_ingest →
// glassbox_evaltap → glassbox_clickhouse, with glassbox_api, glassbox_auth
// and, withWorkers, glassbox_workers; it returns the base URL.
func collector(t *testing.T, withWorkers bool) string {
	t.Helper()
	ctx := context.Background()
	ch := chtest.Config(t)
	t.Setenv(secretbox.EncryptionKeyEnv, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	t.Setenv(controlplane.EnvInitOrgID, "org")
	t.Setenv(controlplane.EnvInitProjectID, "proj")
	t.Setenv(controlplane.EnvInitPublicKey, publicKey)
	t.Setenv(controlplane.EnvInitSecretKey, secretKey)

	storageFactory := storageextension.NewFactory()
	storageCfg := storageFactory.CreateDefaultConfig().(*storageextension.Config)
	storageCfg.DSN, storageCfg.Database = configopaque.String(ch.DSN), ch.Database
	storage, err := storageFactory.Create(ctx, extensiontest.NewNopSettings(storageFactory.Type()), storageCfg)
	require.NoError(t, err)
	storageID := component.NewID(storageFactory.Type())

	cpFactory := controlplaneextension.NewFactory()
	cpCfg := cpFactory.CreateDefaultConfig().(*controlplaneextension.Config)
	cpCfg.DSN = configopaque.String("sqlite://" + filepath.Join(t.TempDir(), "cp.db"))
	controlPlane, err := cpFactory.Create(ctx, extensiontest.NewNopSettings(cpFactory.Type()), cpCfg)
	require.NoError(t, err)
	cpID := component.NewID(cpFactory.Type())

	apiFactory := apiserverextension.NewFactory()
	apiCfg := apiFactory.CreateDefaultConfig().(*apiserverextension.Config)
	apiCfg.Storage, apiCfg.ControlPlane = storageID, cpID
	apiCfg.InitFromEnv = true
	apiCfg.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} // the judge below, for the connection's URL
	api, err := apiFactory.Create(ctx, extensiontest.NewNopSettings(apiFactory.Type()), apiCfg)
	require.NoError(t, err)

	workersFactory := workersextension.NewFactory()
	workersCfg := workersFactory.CreateDefaultConfig().(*workersextension.Config)
	workersCfg.Storage, workersCfg.ControlPlane = storageID, cpID
	workersCfg.Evaluation.PollInterval = 50 * time.Millisecond
	workersCfg.Evaluation.RetryBackoff = 200 * time.Millisecond
	workersCfg.Evaluation.MaxAttempts = 20
	workersCfg.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} // the judge below, for the calls
	jobs, err := workersFactory.Create(ctx, extensiontest.NewNopSettings(workersFactory.Type()), workersCfg)
	require.NoError(t, err)

	authFactory := apikeyauthextension.NewFactory()
	authCfg := authFactory.CreateDefaultConfig().(*apikeyauthextension.Config)
	apiID := component.NewID(apiFactory.Type())
	authCfg.Verifier = &cpID
	auth, err := authFactory.Create(ctx, extensiontest.NewNopSettings(authFactory.Type()), authCfg)
	require.NoError(t, err)

	expFactory := clickhouseexporter.NewFactory()
	expCfg := expFactory.CreateDefaultConfig().(*clickhouseexporter.Config)
	expCfg.Storage = storageID
	exp, err := expFactory.CreateTraces(ctx, exportertest.NewNopSettings(expFactory.Type()), expCfg)
	require.NoError(t, err)

	tapFactory := evaltapprocessor.NewFactory()
	tapCfg := tapFactory.CreateDefaultConfig().(*evaltapprocessor.Config)
	tapCfg.Source = cpID
	tapCfg.RefreshInterval, tapCfg.FlushInterval = 50*time.Millisecond, 20*time.Millisecond
	tap, err := tapFactory.CreateTraces(ctx, processortest.NewNopSettings(tapFactory.Type()), tapCfg, exp)
	require.NoError(t, err)

	addr := freeport.Addr(t)
	recvFactory := ingestreceiver.NewFactory()
	recvCfg := recvFactory.CreateDefaultConfig().(*ingestreceiver.Config)
	recvCfg.HTTP.NetAddr.Endpoint = addr
	recvCfg.GRPC = configoptional.None[configgrpc.ServerConfig]()
	recvCfg.Authenticator = component.NewID(authFactory.Type())
	recvCfg.Fallback = &apiID
	recv, err := recvFactory.CreateTraces(ctx, receivertest.NewNopSettings(recvFactory.Type()), recvCfg, tap)
	require.NoError(t, err)

	h := host{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{
		apiID: api, component.NewID(authFactory.Type()): auth, storageID: storage, cpID: controlPlane,
	}}
	started := []component.Component{storage, controlPlane, api, auth, exp, tap, recv}
	if withWorkers {
		h.ext[component.NewID(workersFactory.Type())] = jobs
		started = append(started, jobs)
	}
	for i, c := range started {
		require.NoError(t, c.Start(ctx, h))
		t.Cleanup(func() { require.NoError(t, started[i].Shutdown(context.Background())) })
	}
	return "http://" + addr
}

func request(t *testing.T, method, url string, body any, contentType string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey)))
	if rd != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

func mustCall(t *testing.T, method, url string, body any, want int) map[string]any {
	t.Helper()
	status, data := request(t, method, url, body, "application/json")
	require.Equal(t, want, status, string(data))
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

// spans is one trace: a root span with the trace's input and output.
func spans(traceID pcommon.TraceID, tag string) ptrace.Traces {
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(traceID)
	s.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	s.SetName("chat")
	now := time.Now()
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	s.Attributes().PutStr("langfuse.trace.input", `{"question":"What is 2+2?"}`)
	s.Attributes().PutStr("langfuse.trace.output", `"4"`)
	s.Attributes().PutEmptySlice("langfuse.trace.tags").AppendEmpty().SetStr(tag)
	return td
}

// judgeRule sets up an LLM-judge rule over prod traces and sends a prod
// and a dev trace over OTLP; it returns the rule and the two traces.
func judgeRule(t *testing.T, base, judgeURL string) (rule map[string]any, prod, dev pcommon.TraceID) {
	t.Helper()
	conn := mustCall(t, http.MethodPut, base+"/api/public/llm-connections", map[string]any{
		"provider": "judge", "secretKey": "sk-judge-0123456789", "baseURL": judgeURL, "defaultModel": "gpt-4o-mini",
	}, http.StatusOK)
	evaluator := mustCall(t, http.MethodPost, base+"/api/public/evals/evaluators", map[string]any{
		"name": "correctness", "kind": "llm", "scoreName": "correct",
		"output": map[string]any{"dataType": "NUMERIC", "min": 0, "max": 1},
		"prompt": "Question: {{input}}\nAnswer: {{output}}",
	}, http.StatusCreated)
	rule = mustCall(t, http.MethodPost, base+"/api/public/evals/rules", map[string]any{
		"name": "prod traces", "evaluatorId": evaluator["id"], "connectionId": conn["id"], "target": "trace", "delayMs": 300,
		"filter": []map[string]any{{"field": "tags", "operator": "any of", "values": []string{"prod"}}},
	}, http.StatusCreated)
	time.Sleep(200 * time.Millisecond) // the tap's next rule refresh

	prod, dev = pcommon.TraceID{0xaa, 1}, pcommon.TraceID{0xbb, 2}
	for id, tag := range map[pcommon.TraceID]string{prod: "prod", dev: "dev"} {
		body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(spans(id, tag))
		require.NoError(t, err)
		status, data := request(t, http.MethodPost, base+"/api/public/otel/v1/traces", body, "application/json")
		require.Equal(t, http.StatusOK, status, string(data))
	}

	return rule, prod, dev
}

// Spans sent over OTLP reach a rule through the evaluator tap; a worker
// asks the (fake) judge and the score is readable through the API.
func TestOTLPSpansAreScoredByAnLLMJudge(t *testing.T) {
	judge := llmtest.New(t, func(llmtest.Request) string { return `{"reasoning":"four is right","score":1}` })
	base := collector(t, true)
	rule, prod, dev := judgeRule(t, base, judge.URL())

	var score map[string]any
	require.Eventually(t, func() bool {
		list := mustCall(t, http.MethodGet, base+"/api/public/v2/scores?traceId="+prod.String(), nil, http.StatusOK)
		data, _ := list["data"].([]any)
		if len(data) == 0 {
			return false
		}
		score = data[0].(map[string]any)
		return true
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, "correct", score["name"])
	assert.Equal(t, "EVAL", score["source"])
	assert.Equal(t, 1.0, score["value"])
	assert.Equal(t, "four is right", score["comment"])

	// The worker writes the score before it records the job's outcome.
	var job map[string]any
	require.Eventually(t, func() bool {
		jobs := mustCall(t, http.MethodGet, base+"/api/public/evals/jobs?ruleId="+rule["id"].(string), nil, http.StatusOK)
		data := jobs["data"].([]any)
		require.Len(t, data, 1, "the dev trace does not match the filter")
		job = data[0].(map[string]any)
		return job["status"] != "RUNNING" && job["status"] != "PENDING"
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, prod.String(), job["traceId"])
	assert.Equal(t, "SUCCEEDED", job["status"])
	none := mustCall(t, http.MethodGet, base+"/api/public/v2/scores?traceId="+dev.String(), nil, http.StatusOK)
	assert.Empty(t, none["data"])
	require.Len(t, judge.Requests(), 1)
	assert.Contains(t, judge.Requests()[0].Prompt, "What is 2+2?")

	// The judge call is a trace of the project, readable like any other.
	trace := mustCall(t, http.MethodGet, base+"/api/public/traces/"+job["executionTraceId"].(string), nil, http.StatusOK)
	assert.Equal(t, "llm-as-a-judge", trace["environment"])
}

// glassbox_api runs no workers: without glassbox_workers the tap queues
// the job and it stays queued.
func TestWithoutGlassboxWorkersJobsStayQueued(t *testing.T) {
	judge := llmtest.New(t, func(llmtest.Request) string { return `{"reasoning":"four is right","score":1}` })
	base := collector(t, false)
	rule, prod, _ := judgeRule(t, base, judge.URL())

	var job map[string]any
	require.Eventually(t, func() bool {
		jobs := mustCall(t, http.MethodGet, base+"/api/public/evals/jobs?ruleId="+rule["id"].(string), nil, http.StatusOK)
		data := jobs["data"].([]any)
		if len(data) == 0 {
			return false
		}
		job = data[0].(map[string]any)
		return true
	}, 10*time.Second, 50*time.Millisecond, "the tap queues the job")
	assert.Equal(t, prod.String(), job["traceId"])
	// Workers polling every 50ms would have claimed it long before.
	time.Sleep(2 * time.Second)
	jobs := mustCall(t, http.MethodGet, base+"/api/public/evals/jobs?ruleId="+rule["id"].(string), nil, http.StatusOK)
	require.Len(t, jobs["data"], 1)
	assert.Equal(t, "PENDING", jobs["data"].([]any)[0].(map[string]any)["status"])
	assert.Empty(t, judge.Requests())
	none := mustCall(t, http.MethodGet, base+"/api/public/v2/scores?traceId="+prod.String(), nil, http.StatusOK)
	assert.Empty(t, none["data"])
}
