package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// TestOTelGoSDKExporter configures the stock OTel Go exporter only through
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS, as the README
// tells users to, and reads the protobuf-encoded spans back from ClickHouse.
func TestOTelGoSDKExporter(t *testing.T) {
	store, dsn := newStore(t)
	c := startCollector(t, dsn, store.Database(), t.TempDir())

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.BaseURL+"/api/public/otel")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization="+url.PathEscape(projectA.basicAuth()))
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx)
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "e2e-go"))))
	tracer := tp.Tracer("e2e")

	rootCtx, root := tracer.Start(ctx, "handle-request")
	root.SetAttributes(
		attribute.String("user.id", "user-go"),
		attribute.String("session.id", "session-go"),
		attribute.StringSlice("langfuse.trace.tags", []string{"go", "e2e"}),
		attribute.String("langfuse.observation.input", `{"q":"hello"}`),
	)
	_, gen := tracer.Start(rootCtx, "chat gpt-4o")
	gen.SetAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 100),
		attribute.Int("gen_ai.usage.output_tokens", 20),
	)
	gen.End()
	_, tool := tracer.Start(rootCtx, "execute_tool lookup")
	tool.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "lookup"))
	tool.End()
	root.End()
	require.NoError(t, tp.ForceFlush(ctx))
	require.NoError(t, tp.Shutdown(ctx))

	traceID := root.SpanContext().TraceID().String()
	tr := waitTrace(t, store, projectA.ID, traceID, 3)
	byName := observationsByName(tr)
	require.Contains(t, byName, "handle-request")
	require.Contains(t, byName, "chat gpt-4o")
	require.Contains(t, byName, "lookup", "gen_ai.tool.name names the tool observation")

	rootObs, genObs, toolObs := byName["handle-request"], byName["chat gpt-4o"], byName["lookup"]
	assert.Equal(t, model.TypeSpan, rootObs.Type)
	assert.Empty(t, rootObs.ParentID)
	assert.Equal(t, model.TypeGeneration, genObs.Type)
	assert.Equal(t, "gpt-4o", genObs.Model)
	assert.Equal(t, int64(100), genObs.UsageDetails["input"])
	assert.Equal(t, int64(20), genObs.UsageDetails["output"])
	assert.Equal(t, rootObs.ID, genObs.ParentID)
	assert.Equal(t, model.TypeTool, toolObs.Type)
	assert.Equal(t, rootObs.ID, toolObs.ParentID)
	assert.Equal(t, "e2e-go", genObs.ServiceName)

	assert.Equal(t, "user-go", tr.UserID)
	assert.Equal(t, "session-go", tr.SessionID)
	assert.Equal(t, []string{"e2e", "go"}, tr.Tags)
	assert.Equal(t, "handle-request", tr.Name, "a trace without langfuse.trace.name is named after its root span")
}

// sdkRun is what test/sdk/emit-traces.mjs prints.
type sdkRun struct {
	RunTag string `json:"runTag"`
	Traces []struct {
		TraceID   string `json:"traceId"`
		UserID    string `json:"userId"`
		SessionID string `json:"sessionId"`
	} `json:"traces"`
}

// TestLangfuseJSSDK sends nested spans and generations with the official
// Langfuse JS SDK (@langfuse/tracing + @langfuse/otel, OTLP/JSON) and checks
// the stored tree.
func TestLangfuseJSSDK(t *testing.T) {
	sdkDir := requireEnv(t, "GLASSBOX_SDK_DIR")
	store, dsn := newStore(t)
	c := startCollector(t, dsn, store.Database(), t.TempDir())

	run := runSDKEmitter(t, sdkDir, c.BaseURL, projectA, 3)
	require.Len(t, run.Traces, 3)
	for i, sent := range run.Traces {
		tr := waitTrace(t, store, projectA.ID, sent.TraceID, 4)
		require.Len(t, tr.Observations, 4)
		byName := observationsByName(tr)
		root, gen, tool, inner := byName["agent-run"], byName["llm-call"], byName["search-tool"], byName["parse-results"]
		require.NotNil(t, root)
		require.NotNil(t, gen)
		require.NotNil(t, tool)
		require.NotNil(t, inner)

		assert.Equal(t, model.TypeAgent, root.Type)
		assert.Empty(t, root.ParentID)
		assert.Equal(t, model.TypeGeneration, gen.Type)
		assert.Equal(t, root.ID, gen.ParentID)
		assert.Equal(t, "gpt-4o-mini", gen.Model)
		assert.Equal(t, map[string]int64{"input": 12, "output": 7, "total": 19}, gen.UsageDetails)
		assert.InDelta(t, 0.00019, gen.CostDetails["total"], 1e-12)
		assert.JSONEq(t, `{"temperature":0.2}`, gen.ModelParameters)
		assert.Equal(t, model.TypeTool, tool.Type)
		assert.Equal(t, root.ID, tool.ParentID)
		assert.Equal(t, model.TypeSpan, inner.Type)
		assert.Equal(t, tool.ID, inner.ParentID)
		assert.JSONEq(t, `{"hits":3}`, tool.Output)

		assert.Equal(t, "agent-run", tr.Name)
		assert.Equal(t, sent.UserID, tr.UserID)
		assert.Equal(t, sent.SessionID, tr.SessionID)
		assert.ElementsMatch(t, []string{"sdk-test", run.RunTag}, tr.Tags)
		assert.JSONEq(t, `{"question":"question `+strconv.Itoa(i)+`"}`, tr.Input, "the trace input is the root's input")
		assert.InDelta(t, 0.00019, tr.TotalCost, 1e-12)
	}

	// Sessions group the run's traces.
	sessions, total, err := store.ListSessions(context.Background(), chstore.SessionFilter{ProjectID: projectA.ID})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, run.Traces[0].SessionID, sessions[0].ID)
}

// runSDKEmitter runs the JS SDK script against baseURL with the project's keys.
func runSDKEmitter(t *testing.T, sdkDir, baseURL string, p project, traces int) sdkRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(sdkDir, "emit-traces.mjs"))
	cmd.Env = append(os.Environ(),
		"LANGFUSE_BASE_URL="+baseURL,
		"LANGFUSE_PUBLIC_KEY="+p.PublicKey,
		"LANGFUSE_SECRET_KEY="+p.SecretKey,
		"TRACE_COUNT="+strconv.Itoa(traces),
	)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("emit-traces.mjs failed: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var run sdkRun
	require.NoError(t, json.Unmarshal(out, &run), "emitter output: %s", out)
	return run
}

func observationsByName(tr chstore.TraceWithObservations) map[string]*chstore.Observation {
	m := make(map[string]*chstore.Observation, len(tr.Observations))
	for i := range tr.Observations {
		m[tr.Observations[i].Name] = &tr.Observations[i]
	}
	return m
}

// TestCredentialsRejected checks the refusals (401 for credentials that do
// not verify, 403 for a public key alone, which may only write scores) and
// that nothing is stored.
func TestCredentialsRejected(t *testing.T) {
	store, dsn := newStore(t)
	c := startCollector(t, dsn, store.Database(), t.TempDir())
	endpoint := c.BaseURL + "/api/public/otel/v1/traces"
	body := otlpJSON("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "rejected", "")

	wrong := project{PublicKey: projectA.PublicKey, SecretKey: "sk-lf-wrong"}
	for name, tc := range map[string]struct {
		auth   string
		status int
	}{
		"missing":          {"", 401},
		"wrong secret":     {wrong.basicAuth(), 401},
		"public key alone": {"Bearer " + projectA.PublicKey, 403},
	} {
		resp, text := postJSON(t, endpoint, tc.auth, body)
		assert.Equal(t, tc.status, resp.StatusCode, name)
		var msg struct {
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal([]byte(text), &msg), name)
		assert.NotEmpty(t, msg.Message, name)
	}
	// A span accepted after the refused ones is stored alone.
	const accepted = "6b8efff798038103d269b633813fc60c"
	resp, text := postJSON(t, endpoint, projectA.basicAuth(), otlpJSON(accepted, "fee19b7ec3c1b174", "accepted", ""))
	require.Equal(t, 200, resp.StatusCode, text)
	waitTrace(t, store, projectA.ID, accepted, 1)
	page, err := store.ListObservations(context.Background(), chstore.ObservationFilter{ProjectID: projectA.ID, Page: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, page.Total)
}

// TestProjectIsolation sends the same trace and span ids from two projects,
// each claiming the other's project id in its resource: each project sees only
// what its own key wrote.
func TestProjectIsolation(t *testing.T) {
	store, dsn := newStore(t)
	c := startCollector(t, dsn, store.Database(), t.TempDir())
	endpoint := c.BaseURL + "/api/public/otel/v1/traces"
	const traceID, spanID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"

	resp, text := postJSON(t, endpoint, projectA.basicAuth(), otlpJSON(traceID, spanID, "written-by-a", projectB.ID))
	require.Equal(t, 200, resp.StatusCode, text)
	resp, text = postJSON(t, endpoint, projectB.basicAuth(), otlpJSON(traceID, spanID, "written-by-b", projectA.ID))
	require.Equal(t, 200, resp.StatusCode, text)

	a := waitTrace(t, store, projectA.ID, traceID, 1)
	b := waitTrace(t, store, projectB.ID, traceID, 1)
	require.Len(t, a.Observations, 1)
	require.Len(t, b.Observations, 1)
	assert.Equal(t, "written-by-a", a.Observations[0].Name)
	assert.Equal(t, "written-by-b", b.Observations[0].Name)

	_, err := store.GetTrace(context.Background(), "proj-unknown", traceID)
	assert.ErrorIs(t, err, chstore.ErrNotFound)
}

// otlpJSON is one span as the JS SDK's OTLP/JSON exporter encodes it: hex
// ids, decimal-string nanos, numeric intValue.
func otlpJSON(traceID, spanID, name, claimedProject string) string {
	now := time.Now().UnixNano()
	resAttrs := []map[string]any{{"key": "service.name", "value": map[string]any{"stringValue": "e2e-json"}}}
	if claimedProject != "" {
		resAttrs = append(resAttrs, map[string]any{"key": model.ProjectIDAttribute, "value": map[string]any{"stringValue": claimedProject}})
	}
	req := map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": resAttrs},
		"scopeSpans": []any{map[string]any{
			"scope": map[string]any{"name": "langfuse-sdk", "version": "5.11.1"},
			"spans": []any{map[string]any{
				"traceId": traceID, "spanId": spanID, "name": name, "kind": 1, "flags": 257,
				"startTimeUnixNano": strconv.FormatInt(now-5_000_000, 10), "endTimeUnixNano": strconv.FormatInt(now, 10),
				"attributes": []any{
					map[string]any{"key": "langfuse.observation.type", "value": map[string]any{"stringValue": "span"}},
					map[string]any{"key": "attempt", "value": map[string]any{"intValue": 1}},
				},
				"status": map[string]any{"code": 0},
			}},
		}},
	}}}
	b, _ := json.Marshal(req)
	return string(b)
}
