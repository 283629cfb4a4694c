package mapping

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

func TestObservationTypePriority(t *testing.T) {
	tests := []struct {
		name   string
		scope  string
		span   string
		attrs  map[string]any
		expect string
	}{
		{"default", "", "", map[string]any{"http.method": "GET"}, model.TypeSpan},
		{"langfuse type beats OpenInference", "", "", map[string]any{
			"langfuse.observation.type": "tool", "openinference.span.kind": "LLM"}, model.TypeTool},
		{"unknown langfuse type falls through", "", "", map[string]any{
			"langfuse.observation.type": "workflow", "openinference.span.kind": "LLM"}, model.TypeGeneration},
		{"OpenInference beats GenAI operation", "", "", map[string]any{
			"openinference.span.kind": "CHAIN", "gen_ai.operation.name": "chat"}, model.TypeChain},
		{"OpenInference retriever", "", "", map[string]any{"openinference.span.kind": "RETRIEVER"}, model.TypeRetriever},
		{"GenAI chat", "", "", map[string]any{"gen_ai.operation.name": "chat"}, model.TypeGeneration},
		{"GenAI text_completion", "", "", map[string]any{"gen_ai.operation.name": "text_completion"}, model.TypeGeneration},
		{"GenAI embeddings", "", "", map[string]any{"gen_ai.operation.name": "embeddings"}, model.TypeEmbedding},
		{"GenAI invoke_agent", "", "", map[string]any{"gen_ai.operation.name": "invoke_agent"}, model.TypeAgent},
		{"GenAI execute_tool", "", "", map[string]any{"gen_ai.operation.name": "execute_tool"}, model.TypeTool},
		{"GenAI operation beats genkit", "", "", map[string]any{
			"gen_ai.operation.name": "chat", "genkit:metadata:subtype": "tool"}, model.TypeGeneration},
		{"genkit tool.v2", "", "", map[string]any{"genkit:metadata:subtype": "tool.v2"}, model.TypeTool},
		{"genkit model", "", "", map[string]any{"genkit:metadata:subtype": "model"}, model.TypeGeneration},
		{"Vercel doGenerate with model", "ai", "", map[string]any{
			"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o"}, model.TypeGeneration},
		{"Vercel doStream by operation.name prefix", "ai", "", map[string]any{
			"operation.name": "ai.streamText.doStream my-fn", "gen_ai.request.model": "gpt-4o"}, model.TypeGeneration},
		{"Vercel doGenerate without model", "ai", "", map[string]any{
			"ai.operationId": "ai.generateText.doGenerate"}, model.TypeSpan},
		{"Vercel embed", "ai", "", map[string]any{
			"ai.operationId": "ai.embedMany.doEmbed", "ai.model.id": "text-embedding-3-small"}, model.TypeEmbedding},
		{"Vercel tool call", "ai", "", map[string]any{"operation.name": "ai.toolCall my-fn"}, model.TypeTool},
		{"Vercel outer call stays a span", "ai", "", map[string]any{
			"ai.operationId": "ai.generateText", "ai.model.id": "gpt-4o"}, model.TypeSpan},
		{"GenAI tool call id", "", "", map[string]any{"gen_ai.tool.call.id": "call_1"}, model.TypeTool},
		{"Flue tool", "", "", map[string]any{"flue.tool.name": "grep"}, model.TypeTool},
		{"Flue task", "", "", map[string]any{"flue.task.id": "t1"}, model.TypeAgent},
		{"LiveKit function tool", "livekit-agents", "function_tool", nil, model.TypeTool},
		{"LiveKit agent turn", "livekit-agents", "agent_turn", nil, model.TypeAgent},
		{"LiveKit name outside its scope", "", "agent_turn", nil, model.TypeSpan},
		{"model fallback", "", "", map[string]any{"llm.model_name": "claude"}, model.TypeGeneration},
		{"empty model is not a model", "", "", map[string]any{"model": ""}, model.TypeSpan},
		{"empty langfuse type is absent", "", "", map[string]any{
			"langfuse.observation.type": "", "gen_ai.request.model": "m"}, model.TypeGeneration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture().withAttrs(t, tt.attrs)
			if tt.scope != "" {
				f = f.inScope(tt.scope, "")
			}
			if tt.span != "" {
				f.span.SetName(tt.span)
			}
			assert.Equal(t, tt.expect, f.mapped().Type)
		})
	}
}

func TestPythonSDKLegacyGenerations(t *testing.T) {
	tests := []struct {
		name, version, language string
		attrs                   map[string]any
		expect                  string
	}{
		{"3.3 span with model", "3.3.0", "python", map[string]any{
			"langfuse.observation.type": "span", "langfuse.observation.model.name": "gpt-4o"}, model.TypeGeneration},
		{"3.2 span with usage", "3.2.5", "python", map[string]any{
			"langfuse.observation.type": "span", "langfuse.observation.usage_details": `{"input":1}`}, model.TypeGeneration},
		{"3.4 is fixed upstream", "3.4.0", "python", map[string]any{
			"langfuse.observation.type": "span", "langfuse.observation.model.name": "gpt-4o"}, model.TypeSpan},
		{"4.0 is fixed upstream", "4.0.1", "python", map[string]any{
			"langfuse.observation.type": "span", "langfuse.observation.model.name": "gpt-4o"}, model.TypeSpan},
		{"JS SDK is not affected", "3.2.0", "nodejs", map[string]any{
			"langfuse.observation.type": "span", "langfuse.observation.model.name": "gpt-4o"}, model.TypeSpan},
		{"plain span stays", "3.2.0", "python", map[string]any{"langfuse.observation.type": "span"}, model.TypeSpan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture().withAttrs(t, tt.attrs).inScope("langfuse-sdk", tt.version)
			f.res.Attributes().PutStr("telemetry.sdk.language", tt.language)
			assert.Equal(t, tt.expect, f.mapped().Type)
		})
	}
}

func TestLevel(t *testing.T) {
	tests := []struct {
		name   string
		level  any
		status ptrace.StatusCode
		expect string
	}{
		{"absent", nil, ptrace.StatusCodeUnset, model.LevelDefault},
		{"status error", nil, ptrace.StatusCodeError, model.LevelError},
		{"status ok", nil, ptrace.StatusCodeOk, model.LevelDefault},
		{"exact", "WARNING", ptrace.StatusCodeUnset, model.LevelWarning},
		{"alias warn", "warn", ptrace.StatusCodeUnset, model.LevelWarning},
		{"alias info with spaces", " Info ", ptrace.StatusCodeUnset, model.LevelDefault},
		{"alias fatal", "fatal", ptrace.StatusCodeUnset, model.LevelError},
		{"alias critical", "CRITICAL", ptrace.StatusCodeUnset, model.LevelError},
		{"alias verbose", "verbose", ptrace.StatusCodeUnset, model.LevelDebug},
		{"alias trace", "trace", ptrace.StatusCodeUnset, model.LevelDebug},
		{"alias success", "success", ptrace.StatusCodeUnset, model.LevelDefault},
		{"level beats status", "DEBUG", ptrace.StatusCodeError, model.LevelDebug},
		{"unknown level uses status", "loud", ptrace.StatusCodeError, model.LevelError},
		{"non-string level ignored", int64(3), ptrace.StatusCodeUnset, model.LevelDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			if tt.level != nil {
				f = f.withAttrs(t, map[string]any{"langfuse.observation.level": tt.level})
			}
			f.span.Status().SetCode(tt.status)
			assert.Equal(t, tt.expect, f.mapped().Level)
		})
	}
}

func TestStatusMessage(t *testing.T) {
	f := newFixture()
	f.span.Status().SetMessage("boom")
	assert.Equal(t, "boom", f.mapped().StatusMessage)
	f = f.withAttrs(t, map[string]any{"langfuse.observation.status_message": "explicit"})
	assert.Equal(t, "explicit", f.mapped().StatusMessage)
}

func TestNormalizeEnvironment(t *testing.T) {
	tests := map[string]string{
		"production":                  "production",
		"Production":                  "production",
		"staging_eu-1":                "staging_eu-1",
		"langfuse-prod":               "prod",
		"langfuse_prod":               "prod",
		"LangfuseDev":                 "dev",
		"langfuselangfuse-x":          "x",
		"langfuse":                    defaultEnvironment,
		"":                            defaultEnvironment,
		"has space":                   defaultEnvironment,
		"ümlaut":                      defaultEnvironment,
		"sdk-experiment":              "sdk-experiment",
		strings.Repeat("a", 45):       strings.Repeat("a", 40),
		"x" + strings.Repeat("é", 30): defaultEnvironment,
	}
	for in, want := range tests {
		assert.Equal(t, want, normalizeEnvironment(in), "input %q", in)
	}
}

func TestEnvironmentPrecedence(t *testing.T) {
	assert.Equal(t, defaultEnvironment, newFixture().mapped().Environment)

	// Keys are tried in order, each on the span and then on the resource.
	f := newFixture().withAttrs(t, map[string]any{"deployment.environment.name": "span-env"})
	f.res.Attributes().PutStr("langfuse.environment", "Res-Env")
	assert.Equal(t, "res-env", f.mapped().Environment)

	f = newFixture().withAttrs(t, map[string]any{"langfuse.environment": "span-env"})
	f.res.Attributes().PutStr("langfuse.environment", "res-env")
	assert.Equal(t, "span-env", f.mapped().Environment)

	f = newFixture()
	f.res.Attributes().PutStr("deployment.environment", "qa")
	assert.Equal(t, "qa", f.mapped().Environment)

	f = newFixture().withAttrs(t, map[string]any{"langfuse.environment": ""})
	f.res.Attributes().PutStr("deployment.environment.name", "fallback")
	assert.Equal(t, "fallback", f.mapped().Environment, "an empty value is absent")
}

// TestEnvironmentIsWhatIsStored: the environment processors decide by
// (Environment) is the one the span is stored under, for every placement of
// awkward values over the keys of the span and of the resource.
func TestEnvironmentIsWhatIsStored(t *testing.T) {
	values := []any{nil, "", "langfuse-prod", "Prod", "prod eu", int64(7), true, strings.Repeat("x", 45)}
	keys := environmentKeys[:]
	checked := 0
	for _, key := range keys {
		for _, other := range keys {
			for _, spanValue := range values {
				for _, resValue := range values {
					f := newFixture()
					if spanValue != nil {
						require.NoError(t, f.span.Attributes().PutEmpty(key).FromRaw(spanValue))
					}
					if resValue != nil {
						require.NoError(t, f.res.Attributes().PutEmpty(other).FromRaw(resValue))
					}
					assert.Equal(t, f.mapped().Environment, Environment(f.span.Attributes(), f.res.Attributes()),
						"span %s=%v, resource %s=%v", key, spanValue, other, resValue)
					checked++
				}
			}
		}
	}
	require.Equal(t, 9*64, checked)
}

func TestReleaseAndVersion(t *testing.T) {
	f := newFixture()
	f.res.Attributes().PutStr("service.version", "1.2.3")
	f.res.Attributes().PutStr("langfuse.release", "r-res")
	o := f.mapped()
	assert.Equal(t, "1.2.3", o.Version)
	assert.Equal(t, "r-res", o.Release)

	o = f.withAttrs(t, map[string]any{"langfuse.version": "v-span", "langfuse.release": "r-span"}).mapped()
	assert.Equal(t, "v-span", o.Version)
	assert.Equal(t, "r-span", o.Release)
}

func TestTags(t *testing.T) {
	tests := []struct {
		name   string
		attrs  map[string]any
		expect []string
	}{
		{"array", map[string]any{"langfuse.trace.tags": []any{"b", "a", "b"}}, []string{"a", "b"}},
		{"JSON array string", map[string]any{"langfuse.trace.tags": `["x","y"]`}, []string{"x", "y"}},
		{"comma separated", map[string]any{"langfuse.tags": "one, two,,three"}, []string{"one", "three", "two"}},
		{"single", map[string]any{"langfuse.trace.tags": "solo"}, []string{"solo"}},
		{"broken JSON array is one tag", map[string]any{"langfuse.trace.tags": "[oops"}, []string{"[oops"}},
		{"numbers", map[string]any{"tag.tags": []any{int64(1), 2.5, true}}, []string{"1", "2.5", "true"}},
		{"precedence", map[string]any{"langfuse.trace.tags": []any{"first"}, "tag.tags": []any{"last"}}, []string{"first"}},
		{"empty falls through", map[string]any{"langfuse.trace.tags": "", "ai.telemetry.metadata.tags": []any{"v"}}, []string{"v"}},
		{"metadata form", map[string]any{"langfuse.trace.metadata.langfuse_tags": `["m"]`}, []string{"m"}},
		{"absent", nil, nil},
		{"only empties", map[string]any{"langfuse.trace.tags": " , "}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.expect, mapAttrs(t, tt.attrs).Tags)
		})
	}
}

func TestTimestamps(t *testing.T) {
	startUs := testStart.UnixMicro()
	f := newFixture()
	f.span.SetStartTimestamp(pcommon.NewTimestampFromTime(testStart.Add(1500 * time.Nanosecond)))
	o := f.mapped()
	assert.Equal(t, startUs+1, o.StartTime, "nanoseconds truncate to microseconds")
	assert.Equal(t, startUs+1_000_000, o.EndTime)

	f = newFixture()
	f.span.SetStartTimestamp(0)
	o = f.mapped()
	assert.Equal(t, startUs+1_000_000, o.StartTime, "missing start takes the end")
	assert.Equal(t, startUs+1_000_000, o.EndTime)

	f = newFixture()
	f.span.SetEndTimestamp(0)
	o = f.mapped()
	assert.Equal(t, startUs, o.StartTime)
	assert.Equal(t, startUs, o.EndTime, "missing end takes the start")

	f = newFixture()
	f.span.SetStartTimestamp(pcommon.Timestamp(math.MaxUint64))
	o = f.mapped()
	assert.Equal(t, startUs+1_000_000, o.StartTime, "an out-of-range start is missing")

	f = newFixture()
	f.span.SetStartTimestamp(0)
	f.span.SetEndTimestamp(0)
	o = f.mapped()
	assert.Equal(t, testNow.UnixMicro(), o.StartTime, "both missing take now")
	assert.Equal(t, testNow.UnixMicro(), o.EndTime)
}

func TestCompletionStartTime(t *testing.T) {
	startUs := testStart.UnixMicro()
	tests := []struct {
		name   string
		attrs  map[string]any
		expect int64
	}{
		{"ISO", map[string]any{"langfuse.observation.completion_start_time": "2025-10-31T08:40:00.250Z"}, startUs + 250_000},
		{"double quoted", map[string]any{"langfuse.observation.completion_start_time": `"2025-10-31T08:40:00.250Z"`}, startUs + 250_000},
		{"offset with microseconds", map[string]any{
			"langfuse.observation.completion_start_time": "2025-10-31T10:40:00.250001+02:00"}, startUs + 250_001},
		{"naive Python time is UTC", map[string]any{
			"langfuse.observation.completion_start_time": "2025-10-31T08:40:00.5"}, startUs + 500_000},
		{"Vercel ms to first chunk rounds up", map[string]any{"ai.response.msToFirstChunk": 412.2}, startUs + 413_000},
		{"Vercel stream key", map[string]any{"ai.stream.msToFirstChunk": int64(7)}, startUs + 7000},
		{"invalid ISO falls back", map[string]any{
			"langfuse.observation.completion_start_time": "soon", "ai.response.msToFirstChunk": 1.0}, startUs + 1000},
		{"absent", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.expect, mapAttrs(t, tt.attrs).CompletionStartTime)
		})
	}
}

func TestIDs(t *testing.T) {
	o := newFixture().mapped()
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", o.TraceID)
	assert.Equal(t, "00f067aa0ba902b7", o.ID)
	assert.Equal(t, "a2fb4a1d1a96d312", o.ParentID)
	assert.Equal(t, "proj-1", o.ProjectID)
	assert.False(t, o.IsRoot)

	o = newFixture().root().mapped()
	assert.Empty(t, o.ParentID)
	assert.True(t, o.IsRoot)
}

func TestTraceFields(t *testing.T) {
	t.Run("root defaults", func(t *testing.T) {
		o := newFixture().root().withAttrs(t, map[string]any{
			"langfuse.observation.input": `{"q":1}`, "langfuse.observation.output": "done",
		}).mapped()
		assert.True(t, o.IsRoot)
		assert.Equal(t, "span-name", o.TraceName)
		assert.Equal(t, `{"q":1}`, o.TraceInput)
		assert.Equal(t, "done", o.TraceOutput)
	})
	t.Run("explicit trace values win on the root", func(t *testing.T) {
		o := newFixture().root().withAttrs(t, map[string]any{
			"langfuse.trace.name": "my-trace", "langfuse.trace.input": "tin",
			"langfuse.observation.input": "oin", "langfuse.observation.output": "oout",
		}).mapped()
		assert.Equal(t, "my-trace", o.TraceName)
		assert.Equal(t, "tin", o.TraceInput)
		assert.Equal(t, "oout", o.TraceOutput)
	})
	t.Run("child carries only explicit trace values", func(t *testing.T) {
		o := mapAttrs(t, map[string]any{"langfuse.observation.input": "oin", "langfuse.trace.output": "tout"})
		assert.False(t, o.IsRoot)
		assert.Empty(t, o.TraceName)
		assert.Empty(t, o.TraceInput)
		assert.Equal(t, "tout", o.TraceOutput)
	})
	t.Run("as_root", func(t *testing.T) {
		assert.True(t, mapAttrs(t, map[string]any{"langfuse.internal.as_root": "true"}).IsRoot)
		assert.True(t, mapAttrs(t, map[string]any{"langfuse.internal.as_root": true}).IsRoot)
		assert.False(t, mapAttrs(t, map[string]any{"langfuse.internal.as_root": "false"}).IsRoot)
		o := mapAttrs(t, map[string]any{"langfuse.internal.is_app_root": true})
		assert.True(t, o.IsRoot, "the SDK's app root under a remote parent")
		assert.Equal(t, "span-name", o.TraceName)
	})
	t.Run("user and session precedence", func(t *testing.T) {
		o := mapAttrs(t, map[string]any{
			"user.id": "u-otel", "langfuse.user.id": "u-lf",
			"gen_ai.conversation.id": "conv", "ai.telemetry.metadata.sessionId": "ai-sess",
		})
		assert.Equal(t, "u-lf", o.UserID)
		assert.Equal(t, "conv", o.SessionID)
		o = mapAttrs(t, map[string]any{"ai.telemetry.metadata.userId": int64(42), "session.id": "s", "langfuse.session.id": ""})
		assert.Equal(t, "42", o.UserID, "non-string ids become text")
		assert.Equal(t, "s", o.SessionID)
	})
	t.Run("public", func(t *testing.T) {
		assert.True(t, mapAttrs(t, map[string]any{"langfuse.trace.public": true}).Public)
		assert.True(t, mapAttrs(t, map[string]any{"langfuse.public": "true"}).Public)
		assert.False(t, mapAttrs(t, map[string]any{"langfuse.trace.public": false, "langfuse.public": true}).Public)
		assert.False(t, mapAttrs(t, nil).Public)
	})
	t.Run("trace metadata from resource and span", func(t *testing.T) {
		f := newFixture().withAttrs(t, map[string]any{
			"langfuse.trace.metadata":        `{"blob":1,"shared":"span-blob"}`,
			"langfuse.trace.metadata.shared": "span-key",
			"langfuse.trace.metadata.obj":    `{"a":[1,2]}`,
		})
		f.res.Attributes().PutStr("langfuse.trace.metadata.team", "search")
		f.res.Attributes().PutStr("langfuse.trace.metadata.shared", "resource")
		o := f.mapped()
		assert.JSONEq(t, `{"team":"search","shared":"span-key","blob":1,"obj":{"a":[1,2]}}`, o.TraceMetadata)
		assert.Equal(t, `{"team":"search","shared":"span-key","blob":1,"obj":{"a":[1,2]}}`, o.TraceMetadata,
			"a repeated key keeps its first position and its last value")
		assert.Equal(t, "{}", newFixture().mapped().TraceMetadata)
	})
}

// Propagated trace attributes on a child must read exactly as on the root.
func TestPropagatedAttributesOnChildren(t *testing.T) {
	attrs := map[string]any{
		"user.id": "u1", "session.id": "s1", "langfuse.trace.tags": []any{"t2", "t1"},
		"langfuse.trace.metadata.plan": "pro", "langfuse.trace.name": "flow",
	}
	root := newFixture().root().withAttrs(t, attrs).mapped()
	child := newFixture().withAttrs(t, attrs).mapped()
	for _, o := range []model.Observation{root, child} {
		assert.Equal(t, "flow", o.TraceName)
		assert.Equal(t, "u1", o.UserID)
		assert.Equal(t, "s1", o.SessionID)
		assert.Equal(t, []string{"t1", "t2"}, o.Tags)
		assert.Equal(t, `{"plan":"pro"}`, o.TraceMetadata)
	}
}

func TestMetadata(t *testing.T) {
	t.Run("Langfuse SDK spans omit their attributes", func(t *testing.T) {
		f := newFixture().inScope("langfuse-sdk", "5.11.1").withAttrs(t, map[string]any{
			"langfuse.observation.metadata.k": "v", "user.id": "u",
		})
		f.res.Attributes().PutStr("service.name", "svc")
		f.scope.Attributes().PutStr("public_key", "pk")
		o := f.mapped()
		assert.Equal(t, `{"k":"v","resourceAttributes":{"service.name":"svc"},`+
			`"scope":{"name":"langfuse-sdk","version":"5.11.1","attributes":{"public_key":"pk"}}}`, o.Metadata)
	})
	t.Run("other spans show filtered attributes as text", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("http.route", "/chat")
		a.PutInt("retries", 2)
		a.PutEmptySlice("list").AppendEmpty().SetStr("x")
		a.PutStr("input.value", "hidden: I/O")
		a.PutStr("gen_ai.prompt.0.content", "hidden: rebuilt")
		a.PutStr("langfuse.observation.metadata.note", "shown as metadata")
		a.PutStr("ai.telemetry.metadata.userId", "hidden: trace field")
		a.PutStr("glassbox.sample_rate", "0.5")
		o := f.mapped()
		assert.Equal(t, `{"note":"shown as metadata","attributes":{"http.route":"/chat","retries":"2","list":"[\"x\"]"},`+
			`"resourceAttributes":{},"scope":{"name":"test-scope","version":"","attributes":{}}}`, o.Metadata)
	})
	t.Run("sources merge in order", func(t *testing.T) {
		f := newFixture().inScope("langfuse-sdk", "")
		f.res.Attributes().PutStr("langfuse.trace.metadata.env", "resource")
		a := f.span.Attributes()
		a.PutStr("langfuse.observation.metadata", `{"env":"blob","n":1}`)
		a.PutStr("langfuse.observation.metadata.env", "key")
		a.PutStr("langfuse.metadata.legacy", "old")
		a.PutStr("ai.telemetry.metadata.plan", "free")
		a.PutStr("ai.telemetry.metadata.langfusePrompt", `{"name":"p"}`)
		o := f.mapped()
		assert.Equal(t, `{"env":"key","n":1,"legacy":"old","plan":"free",`+
			`"resourceAttributes":{"langfuse.trace.metadata.env":"resource"},`+
			`"scope":{"name":"langfuse-sdk","version":"","attributes":{}}}`, o.Metadata)
	})
	t.Run("internal resource attributes stay internal", func(t *testing.T) {
		o := newFixture().mapped()
		assert.NotContains(t, o.Metadata, model.ProjectIDAttribute)
	})
}

func TestInvalidJSONBlobsFallBack(t *testing.T) {
	o := mapAttrs(t, map[string]any{
		"langfuse.observation.usage_details":    `{"input": 1,`,
		"gen_ai.usage.input_tokens":             int64(10),
		"langfuse.observation.cost_details":     `[1,2]`,
		"gen_ai.usage.cost":                     0.5,
		"langfuse.observation.model.parameters": `{"temperature":`,
		"gen_ai.request.temperature":            0.3,
		"langfuse.observation.metadata":         `{"broken"`,
		"langfuse.observation.metadata.ok":      "yes",
		"langfuse.trace.metadata":               `"just a string"`,
		"gen_ai.operation.name":                 "chat",
		"ai.telemetry.metadata.langfusePrompt":  `{"name":`,
		"langfuse.observation.prompt.version":   "not a number",
	})
	assert.Equal(t, map[string]int64{"input": 10, "total": 10}, o.UsageDetails)
	assert.Equal(t, map[string]float64{"total": 0.5}, o.CostDetails)
	assert.Equal(t, `{"temperature":0.3}`, o.ModelParameters)
	assert.True(t, strings.HasPrefix(o.Metadata, `{"ok":"yes",`), o.Metadata)
	assert.Equal(t, "{}", o.TraceMetadata)
	assert.Empty(t, o.PromptName)
	assert.Zero(t, o.PromptVersion)
}

func TestModelPrecedenceAndSuppression(t *testing.T) {
	o := mapAttrs(t, map[string]any{
		"llm.model_name": "oi", "gen_ai.request.model": "req", "gen_ai.response.model": "resp",
		"langfuse.observation.model.name": "lf",
	})
	assert.Equal(t, "lf", o.Model)
	o = mapAttrs(t, map[string]any{"gen_ai.request.model": "req", "ai.model.id": "ai", "gen_ai.response.model": "resp"})
	assert.Equal(t, "resp", o.Model)
	o = mapAttrs(t, map[string]any{"genkit:metadata:subtype": "model", "genkit:name": "googleai/gemini-2.5-flash"})
	assert.Equal(t, "googleai/gemini-2.5-flash", o.Model)

	o = mapAttrs(t, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o",
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.cost": 0.1,
	})
	assert.Equal(t, model.TypeAgent, o.Type)
	assert.Empty(t, o.Model, "agent spans repeat their generations' model")
	assert.Nil(t, o.UsageDetails)
	assert.Nil(t, o.CostDetails)
}

func TestModelParameters(t *testing.T) {
	tests := []struct {
		name   string
		scope  string
		attrs  map[string]any
		expect string
	}{
		{"langfuse JSON sanitized", "", map[string]any{
			"langfuse.observation.model.parameters": `{"t":0.1,"s":"x","b":true,"o":{"k":1},"n":null}`},
			`{"t":0.1,"s":"x","b":"true","o":"{\"k\":1}","n":"null"}`},
		{"OpenInference invocation parameters", "", map[string]any{
			"llm.invocation_parameters": `{"temperature":0}`, "gen_ai.request.top_p": 0.9}, `{"temperature":0}`},
		{"model_config", "", map[string]any{"model_config": `{"max_tokens":10}`}, `{"max_tokens":10}`},
		{"GenAI request keys without the model", "", map[string]any{
			"gen_ai.request.model": "m", "gen_ai.request.stop_sequences": []any{"\n"}}, `{"stop_sequences":"[\"\\n\"]"}`},
		{"Vercel settings as text, explicit over them", "ai", map[string]any{
			"ai.settings.maxRetries": int64(2), "gen_ai.request.temperature": 0.5,
			"gen_ai.response.finish_reasons":        []any{"stop", "length"},
			"langfuse.observation.model.parameters": `{"temperature":1}`,
		}, `{"finishReason":"stop,length","maxRetries":"2","temperature":1}`},
		{"none", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture().withAttrs(t, tt.attrs)
			if tt.scope != "" {
				f = f.inScope(tt.scope, "")
			}
			got := f.mapped().ModelParameters
			if tt.expect == "" {
				assert.Empty(t, got)
				return
			}
			assert.JSONEq(t, tt.expect, got)
		})
	}
}

func TestPrompt(t *testing.T) {
	o := mapAttrs(t, map[string]any{
		"langfuse.observation.type": "generation", "langfuse.observation.prompt.name": "p",
		"langfuse.observation.prompt.version": int64(3),
	})
	assert.Equal(t, "p", o.PromptName)
	assert.Equal(t, int64(3), o.PromptVersion)

	o = mapAttrs(t, map[string]any{
		"gen_ai.operation.name": "chat", "ai.telemetry.metadata.langfusePrompt": `{"name":"vp","version":7}`,
	})
	assert.Equal(t, "vp", o.PromptName)
	assert.Equal(t, int64(7), o.PromptVersion)

	o = mapAttrs(t, map[string]any{
		"langfuse.observation.type": "span", "langfuse.observation.prompt.name": "p",
		"langfuse.observation.prompt.version": "4",
	})
	assert.Empty(t, o.PromptName, "only generations link prompts")
	assert.Zero(t, o.PromptVersion)
}

func TestSampleRate(t *testing.T) {
	tests := []struct {
		name          string
		span, res     any
		expect        float64
		setSpan, setR bool
	}{
		{"absent", nil, nil, 1, false, false},
		{"span", 0.25, nil, 0.25, true, false},
		{"resource", nil, 0.5, 0.5, false, true},
		{"span over resource", 0.1, 0.5, 0.1, true, true},
		{"text", "0.2", nil, 0.2, true, false},
		{"zero is invalid", 0.0, nil, 1, true, false},
		{"above one is invalid", 1.5, 0.5, 0.5, true, true},
		{"int one", int64(1), nil, 1, true, false},
		{"garbage", "half", nil, 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			if tt.setSpan {
				require.NoError(t, f.span.Attributes().PutEmpty(model.SampleRateAttribute).FromRaw(tt.span))
			}
			if tt.setR {
				require.NoError(t, f.res.Attributes().PutEmpty(model.SampleRateAttribute).FromRaw(tt.res))
			}
			assert.InDelta(t, tt.expect, f.mapped().SampleRate, 1e-12)
		})
	}
}

func TestNames(t *testing.T) {
	assert.Equal(t, "span-name", mapAttrs(t, nil).Name)
	assert.Equal(t, "search", mapAttrs(t, map[string]any{"gen_ai.tool.name": "search", "ai.toolCall.name": "x"}).Name)
	assert.Equal(t, "fn:ai.generateText", mapAttrs(t, map[string]any{
		"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "fn"}).Name)
	assert.Equal(t, "ai.embed", mapAttrs(t, map[string]any{"ai.operationId": "ai.embed"}).Name)
	assert.Equal(t, "agent run", mapAttrs(t, map[string]any{"logfire.msg": "agent run"}).Name)
}

func TestResourceAndScopeFields(t *testing.T) {
	f := newFixture().inScope("my.instrumentation", "1.2")
	f.res.Attributes().PutStr("service.name", "checkout")
	o := f.mapped()
	assert.Equal(t, "checkout", o.ServiceName)
	assert.Equal(t, "my.instrumentation", o.ScopeName)
	assert.Equal(t, "1.2", o.ScopeVersion)
}

func TestObservationsAcrossResources(t *testing.T) {
	td := ptrace.NewTraces()
	for i, project := range []string{"p1", "p2"} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, project)
		rs.Resource().Attributes().PutStr("langfuse.trace.metadata.idx", project)
		for j := 0; j < 2; j++ {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("scope-" + project)
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{byte(i + 1)})
			sp.SetSpanID(pcommon.SpanID{byte(i + 1), byte(j + 1)})
		}
	}
	obs := AppendObservations([]model.Observation{{ID: "kept"}}, td, testNow)
	require.Len(t, obs, 5)
	assert.Equal(t, "kept", obs[0].ID)
	for i, o := range obs[1:] {
		project := []string{"p1", "p2"}[i/2]
		assert.Equal(t, project, o.ProjectID)
		assert.Equal(t, "scope-"+project, o.ScopeName)
		assert.Equal(t, `{"idx":"`+project+`"}`, o.TraceMetadata)
	}
	assert.Equal(t, "01000000000000000000000000000000", obs[1].TraceID)
	assert.Equal(t, "02000000000000000000000000000000", obs[3].TraceID)
	assert.Len(t, Observations(td, testNow), 4)
}

func TestMetadataIsValidJSONForOddValues(t *testing.T) {
	f := newFixture()
	a := f.span.Attributes()
	a.PutStr("bad\"key\n", "bad\x00value\xff")
	a.PutDouble("nan", math.NaN())
	a.PutEmptyBytes("bytes").FromRaw([]byte{1, 2})
	m := a.PutEmptyMap("kv")
	m.PutStr("inner", "v")
	a.PutEmpty("empty")
	o := f.mapped()
	require.True(t, json.Valid([]byte(o.Metadata)), o.Metadata)
	assert.Contains(t, o.Metadata, `"kv":"{\"inner\":\"v\"}"`)
	assert.Contains(t, o.Metadata, `"nan":"\"NaN\""`)
	assert.Contains(t, o.Metadata, `"bad\"key\n":"bad\u0000value\ufffd"`)
}

func TestMetadataManyKeys(t *testing.T) {
	f := newFixture().inScope("langfuse-sdk", "")
	a := f.span.Attributes()
	a.PutStr("langfuse.observation.metadata", `{"k0":"blob","k39":"blob"}`)
	for i := range 40 {
		a.PutInt("langfuse.observation.metadata.k"+strconv.Itoa(i), int64(i))
	}
	var got map[string]any
	o := f.mapped()
	require.NoError(t, json.Unmarshal([]byte(o.Metadata), &got))
	assert.Len(t, got, 42) // 40 keys, resourceAttributes, scope
	assert.EqualValues(t, 0, got["k0"])
	assert.EqualValues(t, 39, got["k39"])
	assert.True(t, strings.HasPrefix(o.Metadata, `{"k0":0,"k39":39,"k1":1,`), o.Metadata)
}

func TestMetadataBlobAsMap(t *testing.T) {
	f := newFixture().inScope("langfuse-sdk", "")
	blob := f.span.Attributes().PutEmptyMap("langfuse.observation.metadata")
	blob.PutStr("team", "search")
	blob.PutInt("n", 2)
	assert.True(t, strings.HasPrefix(f.mapped().Metadata, `{"team":"search","n":2,"resourceAttributes"`))
}

func TestUsageEstimated(t *testing.T) {
	o := mapAttrs(t, map[string]any{
		"langfuse.observation.usage_details": `{"input":3,"output":4}`, model.UsageEstimatedAttribute: true,
	})
	assert.True(t, o.UsageEstimated)
	assert.NotContains(t, o.Metadata, model.UsageEstimatedAttribute, "internal attributes stay out of metadata")
	assert.False(t, mapAttrs(t, map[string]any{"langfuse.observation.usage_details": `{"input":3}`}).UsageEstimated)
	assert.False(t, mapAttrs(t, map[string]any{model.UsageEstimatedAttribute: "true"}).UsageEstimated,
		"no usage, nothing estimated")
}
