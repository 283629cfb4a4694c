package costprocessor

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// spanStart is when the test generations ran: after every built-in start date used here.
var spanStart = time.Date(2025, 11, 1, 12, 0, 0, 0, time.UTC)

type testSpan struct {
	scope string
	attrs map[string]any
	start time.Time // spanStart when zero
}

func testTraces(t testing.TB, project string, spans ...testSpan) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, project)
	rs.Resource().Attributes().PutStr("service.name", "test")
	for i, s := range spans {
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(s.scope)
		span := ss.Spans().AppendEmpty()
		span.SetTraceID(pcommon.TraceID{1, byte(i)})
		span.SetSpanID(pcommon.SpanID{2, byte(i)})
		span.SetName("generation")
		start := s.start
		if start.IsZero() {
			start = spanStart
		}
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
		require.NoError(t, span.Attributes().FromRaw(s.attrs))
	}
	return td
}

// generation is a Langfuse SDK generation span.
func generation(modelName string, extra map[string]any) testSpan {
	attrs := map[string]any{
		"langfuse.observation.type":       "generation",
		"langfuse.observation.model.name": modelName,
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return testSpan{scope: "langfuse-sdk", attrs: attrs}
}

type fakeHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h fakeHost) GetExtensions() map[component.ID]component.Component {
	return h.extensions
}

type fakeSource struct {
	component.StartFunc
	component.ShutdownFunc

	mu     sync.Mutex
	models map[string][]pricing.Model
	err    error
}

func (s *fakeSource) ProjectModels(context.Context) (map[string][]pricing.Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models, s.err
}

type harness struct {
	proc processor.Traces
	sink *consumertest.TracesSink
	tt   *componenttest.Telemetry
	logs *observer.ObservedLogs
}

func newHarness(t *testing.T, cfg *Config, host component.Host) *harness {
	t.Helper()
	h := &harness{sink: new(consumertest.TracesSink), tt: componenttest.NewTelemetry()}
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tt.NewTelemetrySettings()
	core, logs := observer.New(zap.DebugLevel)
	h.logs = logs
	set.Logger = zap.New(core)
	proc, err := NewFactory().CreateTraces(context.Background(), set, cfg, h.sink)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, proc.Start(context.Background(), host))
	t.Cleanup(func() {
		require.NoError(t, proc.Shutdown(context.Background()))
		require.NoError(t, h.tt.Shutdown(context.Background()))
	})
	h.proc = proc
	return h
}

// consume runs td through the processor and returns the span attributes.
func (h *harness) consume(t *testing.T, td ptrace.Traces) []pcommon.Map {
	t.Helper()
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), td))
	all := h.sink.AllTraces()
	out := all[len(all)-1]
	var attrs []pcommon.Map
	rs := out.ResourceSpans().At(0)
	for i := 0; i < rs.ScopeSpans().Len(); i++ {
		attrs = append(attrs, rs.ScopeSpans().At(i).Spans().At(0).Attributes())
	}
	return attrs
}

func (h *harness) results(t *testing.T) map[string]int64 {
	t.Helper()
	m, err := h.tt.GetMetric("otelcol_processor_glassbox_cost_spans")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		r, _ := dp.Attributes.Value(attribute.Key("result"))
		got[r.AsString()] = dp.Value
	}
	return got
}

func jsonAttr(t *testing.T, attrs pcommon.Map, key string) map[string]float64 {
	t.Helper()
	v, ok := attrs.Get(key)
	require.True(t, ok, "%s is set", key)
	var out map[string]float64
	require.NoError(t, json.Unmarshal([]byte(v.Str()), &out), v.Str())
	return out
}

func defaultConfig() *Config {
	return createDefaultConfig().(*Config)
}

func TestPricesGenerations(t *testing.T) {
	h := newHarness(t, defaultConfig(), nil)
	td := testTraces(t, "proj",
		generation("gpt-4o", map[string]any{"langfuse.observation.usage_details": `{"input":1000,"output":500}`}),
		testSpan{scope: "opentelemetry.instrumentation.openai", attrs: map[string]any{
			"gen_ai.operation.name":                "chat",
			"gen_ai.request.model":                 "gpt-4o-mini",
			"gen_ai.usage.input_tokens":            1200,
			"gen_ai.usage.output_tokens":           300,
			"gen_ai.usage.cache_read_input_tokens": 200,
		}},
	)
	attrs := h.consume(t, td)

	assert.Equal(t, map[string]float64{"input": 1000, "output": 500, "total": 1500},
		jsonAttr(t, attrs[0], model.UsageDetailsAttribute))
	cost := jsonAttr(t, attrs[0], model.CostDetailsAttribute)
	assert.InDelta(t, 1000*2.5e-6, cost["input"], 1e-12)
	assert.InDelta(t, 500*10e-6, cost["output"], 1e-12)
	assert.InDelta(t, 1000*2.5e-6+500*10e-6, cost["total"], 1e-12)
	_, estimated := attrs[0].Get(model.UsageEstimatedAttribute)
	assert.False(t, estimated)

	assert.Equal(t, map[string]float64{"input": 1000, "input_cached_tokens": 200, "output": 300, "total": 1500},
		jsonAttr(t, attrs[1], model.UsageDetailsAttribute), "provider usage is normalised")
	cost = jsonAttr(t, attrs[1], model.CostDetailsAttribute)
	assert.InDelta(t, 1000*0.15e-6+200*0.075e-6+300*0.6e-6, cost["total"], 1e-12)

	// The mapping reads back exactly what the processor computed.
	out := h.sink.AllTraces()[0]
	obs := mapping.Observations(out, time.Now())
	require.Len(t, obs, 2)
	assert.InDelta(t, cost["total"], obs[1].CostDetails["total"], 1e-15)
	assert.Equal(t, map[string]int64{"input": 1000, "input_cached_tokens": 200, "output": 300, "total": 1500}, obs[1].UsageDetails)

	assert.Equal(t, map[string]int64{"priced": 2}, h.results(t))
}

func TestClientCostWins(t *testing.T) {
	h := newHarness(t, defaultConfig(), nil)
	attrs := h.consume(t, testTraces(t, "proj", generation("gpt-4o", map[string]any{
		"langfuse.observation.usage_details": `{"input":1000,"output":500}`,
		"langfuse.observation.cost_details":  `{"total":42}`,
	})))
	assert.Equal(t, map[string]float64{"total": 42}, jsonAttr(t, attrs[0], model.CostDetailsAttribute))
	v, _ := attrs[0].Get(model.UsageDetailsAttribute)
	assert.Equal(t, `{"input":1000,"output":500}`, v.Str(), "left as the client sent it")
	assert.Equal(t, map[string]int64{"client_cost": 1}, h.results(t))
}

func TestUnknownModelStaysWithoutCost(t *testing.T) {
	h := newHarness(t, defaultConfig(), nil)
	for range 2 {
		attrs := h.consume(t, testTraces(t, "proj", generation("acme-llm-9000", map[string]any{
			"langfuse.observation.usage_details": `{"input":10}`,
		})))
		_, has := attrs[0].Get(model.CostDetailsAttribute)
		assert.False(t, has, "no guessed cost")
	}
	logged := h.logs.FilterMessageSnippet("No price for this model").All()
	require.Len(t, logged, 1, "logged once")
	assert.Equal(t, "acme-llm-9000", logged[0].ContextMap()["model"])
	assert.Equal(t, map[string]int64{"unknown_model": 2}, h.results(t))
}

func TestSpansWithoutModelAreUntouched(t *testing.T) {
	h := newHarness(t, defaultConfig(), nil)
	attrs := h.consume(t, testTraces(t, "proj", testSpan{scope: "http", attrs: map[string]any{"http.method": "GET"}}))
	assert.Equal(t, 1, attrs[0].Len())
	_, err := h.tt.GetMetric("otelcol_processor_glassbox_cost_spans")
	assert.Error(t, err, "spans without a model are not counted")
}

func TestEstimatesMissingUsage(t *testing.T) {
	io := map[string]any{
		"langfuse.observation.input":  `[{"role":"user","content":"Hello world"}]`,
		"langfuse.observation.output": `"Hello world"`,
	}
	h := newHarness(t, defaultConfig(), nil)
	attrs := h.consume(t, testTraces(t, "proj",
		generation("gpt-4o", io),
		generation("claude-3-5-sonnet-20241022", io), // no offline tokenizer
		generation("gpt-4o", map[string]any{ // failed generation
			"langfuse.observation.level": "ERROR", "langfuse.observation.input": "Hello world",
		}),
		testSpan{scope: "langfuse-sdk", attrs: map[string]any{ // a span, not a generation
			"langfuse.observation.type": "span", "langfuse.observation.model.name": "gpt-4o",
			"langfuse.observation.input": "Hello world",
		}},
	))
	// 3 + (3 + role 1 + content 2) for the chat input, 2 for the output.
	assert.Equal(t, map[string]float64{"input": 9, "output": 2, "total": 11}, jsonAttr(t, attrs[0], model.UsageDetailsAttribute))
	assert.InDelta(t, 9*2.5e-6+2*10e-6, jsonAttr(t, attrs[0], model.CostDetailsAttribute)["total"], 1e-12)
	v, ok := attrs[0].Get(model.UsageEstimatedAttribute)
	require.True(t, ok)
	assert.True(t, v.Bool())
	for i := 1; i < 4; i++ {
		_, has := attrs[i].Get(model.CostDetailsAttribute)
		assert.False(t, has, "span %d", i)
	}
	assert.Equal(t, map[string]int64{"estimated": 1, "no_usage": 3}, h.results(t))

	off := defaultConfig()
	off.Pricing.EstimateUsage = false
	h = newHarness(t, off, nil)
	attrs = h.consume(t, testTraces(t, "proj", generation("gpt-4o", io)))
	_, has := attrs[0].Get(model.CostDetailsAttribute)
	assert.False(t, has, "estimation off")

	small := defaultConfig()
	small.Pricing.MaxEstimateBytes = 10
	h = newHarness(t, small, nil)
	attrs = h.consume(t, testTraces(t, "proj", generation("gpt-4o", io)))
	_, has = attrs[0].Get(model.CostDetailsAttribute)
	assert.False(t, has, "too large to estimate")
}

func TestProjectModelsFromExtension(t *testing.T) {
	sourceID := component.MustNewID("glassbox_api")
	custom := pricing.Model{
		ID: "m1", Name: "our-gpt-4o", MatchPattern: `^gpt-4o$`,
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1, "output": 1}}},
	}
	src := &fakeSource{models: map[string][]pricing.Model{"proj": {custom}}}
	cfg := defaultConfig()
	cfg.Pricing.ModelsSource = &sourceID
	cfg.Pricing.RefreshInterval = 10 * time.Millisecond
	h := newHarness(t, cfg, fakeHost{extensions: map[component.ID]component.Component{sourceID: src}})

	usage := map[string]any{"langfuse.observation.usage_details": `{"input":2,"output":3}`}
	require.Eventually(t, func() bool {
		attrs := h.consume(t, testTraces(t, "proj", generation("gpt-4o", usage)))
		return jsonAttr(t, attrs[0], model.CostDetailsAttribute)["total"] == 5
	}, 5*time.Second, 5*time.Millisecond, "the project's definition overrides the built-in one")
	attrs := h.consume(t, testTraces(t, "other", generation("gpt-4o", usage)))
	assert.InDelta(t, 2*2.5e-6+3*10e-6, jsonAttr(t, attrs[0], model.CostDetailsAttribute)["total"], 1e-12)

	// A failing store keeps the last definitions.
	src.mu.Lock()
	src.models, src.err = nil, errors.New("store down")
	src.mu.Unlock()
	require.Eventually(t, func() bool {
		return h.logs.FilterMessageSnippet("Refresh failed").Len() > 0
	}, 5*time.Second, 5*time.Millisecond)
	attrs = h.consume(t, testTraces(t, "proj", generation("gpt-4o", usage)))
	assert.Equal(t, 5.0, jsonAttr(t, attrs[0], model.CostDetailsAttribute)["total"])
}

func TestStartRejectsMissingOrWrongSource(t *testing.T) {
	id := component.MustNewID("glassbox_api")
	cfg := defaultConfig()
	cfg.Pricing.ModelsSource = &id
	for name, host := range map[string]component.Host{
		"missing": componenttest.NewNopHost(),
		"wrong": fakeHost{extensions: map[component.ID]component.Component{id: struct {
			component.StartFunc
			component.ShutdownFunc
		}{}}},
	} {
		t.Run(name, func(t *testing.T) {
			proc, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			assert.Error(t, proc.Start(context.Background(), host))
			require.NoError(t, proc.Shutdown(context.Background()))
		})
	}
}

func TestLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, Type, f.Type())
	proc, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	assert.True(t, proc.Capabilities().MutatesData)
	require.NoError(t, proc.Shutdown(context.Background()), "shutdown without start")
	require.NoError(t, proc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, proc.ConsumeTraces(context.Background(), ptrace.NewTraces()))
	require.NoError(t, proc.Shutdown(context.Background()))
	require.NoError(t, proc.Shutdown(context.Background()), "shutdown twice")
}

func TestJSONKeysAreEscaped(t *testing.T) {
	var s scratch
	got := s.usageJSON(map[string]int64{"a\"b\\c\x01\xff": 1, "input": 2})
	var decoded map[string]int64
	require.NoError(t, json.Unmarshal([]byte(got), &decoded), got)
	assert.Equal(t, map[string]int64{"a\"b\\c\x01\uFFFD": 1, "input": 2}, decoded)
}
