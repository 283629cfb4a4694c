package samplingprocessor

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
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

	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

// traceIDs returns n random trace ids from a fixed seed.
func traceIDs(n int) []pcommon.TraceID {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]pcommon.TraceID, n)
	for i := range out {
		binary.BigEndian.PutUint64(out[i][:8], rng.Uint64())
		binary.BigEndian.PutUint64(out[i][8:], rng.Uint64())
	}
	return out
}

type resourceSpec struct {
	project string
	attrs   map[string]any
	spans   []spanSpec
}

type spanSpec struct {
	trace      pcommon.TraceID
	span       byte
	attrs      map[string]any
	traceState string
}

func build(t testing.TB, resources ...resourceSpec) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		require.NoError(t, rs.Resource().Attributes().FromRaw(r.attrs))
		rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, r.project)
		ss := rs.ScopeSpans().AppendEmpty()
		for _, s := range r.spans {
			span := ss.Spans().AppendEmpty()
			span.SetTraceID(s.trace)
			span.SetSpanID(pcommon.SpanID{s.span, 1})
			span.TraceState().FromRaw(s.traceState)
			require.NoError(t, span.Attributes().FromRaw(s.attrs))
		}
	}
	return td
}

type keptSpan struct {
	trace pcommon.TraceID
	span  byte
	attrs pcommon.Map
	ts    string
}

func keptSpans(sink *consumertest.TracesSink) []keptSpan {
	var out []keptSpan
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					out = append(out, keptSpan{trace: s.TraceID(), span: s.SpanID()[0], attrs: s.Attributes(), ts: s.TraceState().AsRaw()})
				}
			}
		}
	}
	return out
}

type fakeHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h fakeHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

type fakeSource struct {
	component.StartFunc
	component.ShutdownFunc

	mu       sync.Mutex
	settings map[string]sampling.Rates
	err      error
	failed   int // loads answered with err
}

func (s *fakeSource) ProjectSampling(context.Context) (map[string]sampling.Rates, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		s.failed++
	}
	return s.settings, s.err
}

func (s *fakeSource) set(settings map[string]sampling.Rates, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings, s.err = settings, err
}

func (s *fakeSource) failedLoads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

type harness struct {
	proc processor.Traces
	sink *consumertest.TracesSink
	tt   *componenttest.Telemetry
}

func newHarness(t *testing.T, cfg *Config, host component.Host) *harness {
	t.Helper()
	h := &harness{sink: new(consumertest.TracesSink), tt: componenttest.NewTelemetry()}
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = h.tt.NewTelemetrySettings()
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

func (h *harness) consume(t *testing.T, td ptrace.Traces) {
	t.Helper()
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), td))
}

func (h *harness) decisions(t *testing.T) map[string]int64 {
	t.Helper()
	m, err := h.tt.GetMetric("otelcol_processor_glassbox_sampling_spans")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		d, _ := dp.Attributes.Value(attribute.Key("decision"))
		got[d.AsString()] = dp.Value
	}
	return got
}

func withRate(rate float64) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Rate = rate
	return cfg
}

func within(t *testing.T, k, n int, p float64) {
	t.Helper()
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	assert.InDelta(t, float64(n)*p, float64(k), 5*sigma+1, "kept %d of %d at %v", k, n, p)
}

// Two replicas receive different spans of the same traces in different
// batches and still keep or drop each trace whole, identically.
func TestConsistentAcrossInstances(t *testing.T) {
	ids := traceIDs(2000)
	a, b := newHarness(t, withRate(0.3), nil), newHarness(t, withRate(0.3), nil)
	for i, id := range ids {
		spans := []spanSpec{{trace: id, span: 1}, {trace: id, span: 2}, {trace: id, span: 3}}
		// Spans 1 and 2 go to one replica, span 3 to the other, alternating.
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		first.consume(t, build(t, resourceSpec{project: "p", spans: spans[:2]}))
		second.consume(t, build(t, resourceSpec{project: "p", spans: spans[2:]}))
	}
	perTrace := map[pcommon.TraceID]int{}
	for _, h := range []*harness{a, b} {
		for _, s := range keptSpans(h.sink) {
			perTrace[s.trace]++
		}
	}
	for id, n := range perTrace {
		assert.Equal(t, 3, n, "trace %s kept whole", id)
	}
	within(t, len(perTrace), len(ids), 0.3)
}

func TestObservedFractionAndRecordedRate(t *testing.T) {
	ids := traceIDs(20000)
	h := newHarness(t, withRate(0.25), nil)
	var spans []spanSpec
	for _, id := range ids {
		spans = append(spans, spanSpec{trace: id, span: 1})
	}
	h.consume(t, build(t, resourceSpec{project: "p", spans: spans}))
	kept := keptSpans(h.sink)
	within(t, len(kept), len(ids), 0.25)
	for _, s := range kept {
		v, ok := s.attrs.Get(model.SampleRateAttribute)
		require.True(t, ok)
		assert.Equal(t, 0.25, v.Double())
		assert.Empty(t, s.ts, "no tracestate written without an upstream threshold")
	}
	assert.Equal(t, map[string]int64{"kept": int64(len(kept)), "dropped": int64(len(ids) - len(kept))}, h.decisions(t))
}

func TestComposesWithUpstreamThreshold(t *testing.T) {
	ids := traceIDs(40000)
	h := newHarness(t, withRate(0.1), nil)
	var arrived []spanSpec
	for _, id := range ids {
		// An SDK consistent sampler at 0.5 kept the ids whose low 56 bits are >= 2^55.
		if binary.BigEndian.Uint64(id[8:])&(1<<56-1) >= 1<<55 {
			arrived = append(arrived, spanSpec{trace: id, span: 1, traceState: "ot=th:8"})
		}
	}
	h.consume(t, build(t, resourceSpec{project: "p", spans: arrived}))
	kept := keptSpans(h.sink)
	within(t, len(kept), len(ids), 0.1)
	for _, s := range kept {
		assert.Equal(t, "ot=th:e66666666666", s.ts)
		v, _ := s.attrs.Get(model.SampleRateAttribute)
		assert.InDelta(t, 0.1, v.Double(), 1e-12)
	}
}

func TestRatesByProjectAndEnvironment(t *testing.T) {
	cfg := withRate(1)
	cfg.Environments = map[string]float64{"Development": 0, "testing": 1}
	zero := 0.0
	cfg.Projects = map[string]ProjectConfig{
		"quiet": {Rate: &zero, Environments: map[string]float64{"production": 1}},
	}
	h := newHarness(t, cfg, nil)
	id := traceIDs(1)[0]
	span := func(n byte, attrs map[string]any) spanSpec { return spanSpec{trace: id, span: n, attrs: attrs} }
	h.consume(t, build(t,
		resourceSpec{project: "loud", attrs: map[string]any{"deployment.environment.name": "development"}, spans: []spanSpec{
			span(1, nil), // development: dropped for every project
			span(2, map[string]any{"langfuse.environment": "Staging"}), // the span's own environment wins
		}},
		resourceSpec{project: "quiet", spans: []spanSpec{
			span(3, nil), // default environment: the project's rate 0
			span(4, map[string]any{"deployment.environment": "PRODUCTION"}),
			span(5, map[string]any{"langfuse.environment": "testing"}), // the project's rate comes before the top level's environment rate
		}},
	))
	var got []byte
	for _, s := range keptSpans(h.sink) {
		got = append(got, s.span)
	}
	assert.ElementsMatch(t, []byte{2, 4}, got)
	for _, s := range keptSpans(h.sink) {
		_, ok := s.attrs.Get(model.SampleRateAttribute)
		assert.False(t, ok, "nothing recorded at rate 1")
	}
}

// The rates see the environment as the mapping stores it: "langfuse-prod"
// is stored, listed and sampled as "prod", an integer environment as its
// text, and a blank one as "default".
func TestEnvironmentAsStored(t *testing.T) {
	cfg := withRate(1)
	cfg.Environments = map[string]float64{"prod": 0, "default": 0, "7": 0}
	h := newHarness(t, cfg, nil)
	id := traceIDs(1)[0]
	span := func(n byte, attrs map[string]any) spanSpec { return spanSpec{trace: id, span: n, attrs: attrs} }
	h.consume(t, build(t, resourceSpec{project: "p", attrs: map[string]any{"deployment.environment": "langfuse-prod"}, spans: []spanSpec{
		span(1, nil),
		span(2, map[string]any{"langfuse.environment": "Langfuse_Prod"}),
		span(3, map[string]any{"langfuse.environment": ""}), // blank: the resource's
		span(4, map[string]any{"langfuse.environment": int64(7)}),
		span(5, map[string]any{"langfuse.environment": "staging"}),
	}}))
	var got []byte
	for _, s := range keptSpans(h.sink) {
		got = append(got, s.span)
	}
	assert.ElementsMatch(t, []byte{5}, got)
}

func TestSettingsFromExtension(t *testing.T) {
	sourceID := component.MustNewID("glassbox_api")
	src := &fakeSource{}
	none := 0.0
	src.set(map[string]sampling.Rates{"p": {Rate: &none}}, nil)
	cfg := withRate(1)
	cfg.SettingsSource = &sourceID
	cfg.RefreshInterval = 5 * time.Millisecond
	h := newHarness(t, cfg, fakeHost{extensions: map[component.ID]component.Component{sourceID: src}})

	ids := traceIDs(50)
	batch := func(project string) ptrace.Traces {
		var spans []spanSpec
		for _, id := range ids {
			spans = append(spans, spanSpec{trace: id, span: 1})
		}
		return build(t, resourceSpec{project: project, spans: spans})
	}
	keptNow := func(project string) int {
		before := len(keptSpans(h.sink))
		h.consume(t, batch(project))
		return len(keptSpans(h.sink)) - before
	}
	require.Eventually(t, func() bool { return keptNow("p") == 0 }, 5*time.Second, time.Millisecond,
		"the project's stored rate applies")
	assert.Equal(t, len(ids), keptNow("other"), "other projects keep the configured rate")

	// Changed at run time: the project's default environment is kept again.
	src.set(map[string]sampling.Rates{"p": {Rate: &none, Environments: map[string]float64{"Default": 1}}}, nil)
	require.Eventually(t, func() bool { return keptNow("p") == len(ids) }, 5*time.Second, time.Millisecond)

	// A failing store keeps the last settings.
	src.set(nil, errors.New("store down"))
	require.Eventually(t, func() bool { return src.failedLoads() >= 2 }, 5*time.Second, time.Millisecond,
		"the processor reloads while the store fails")
	assert.Equal(t, len(ids), keptNow("p"))
}

func TestUpstreamSampleRate(t *testing.T) {
	h := newHarness(t, withRate(1), nil)
	id := traceIDs(1)[0]
	h.consume(t, build(t,
		resourceSpec{project: "p", attrs: map[string]any{model.SampleRateAttribute: 0.2}, spans: []spanSpec{
			{trace: id, span: 1},
			{trace: id, span: 2, attrs: map[string]any{model.SampleRateAttribute: "0.5"}},
		}},
	))
	got := map[byte]float64{}
	for _, s := range keptSpans(h.sink) {
		v, ok := s.attrs.Get(model.SampleRateAttribute)
		require.True(t, ok)
		got[s.span] = v.Double()
	}
	assert.Equal(t, map[byte]float64{1: 0.2, 2: 0.5}, got, "the span's own rate before the resource's")
}

func TestAllDroppedSkipsTheRestOfThePipeline(t *testing.T) {
	h := newHarness(t, withRate(0), nil)
	h.consume(t, build(t, resourceSpec{project: "p", spans: []spanSpec{{trace: traceIDs(1)[0], span: 1}}}))
	assert.Empty(t, h.sink.AllTraces())
	assert.Equal(t, map[string]int64{"dropped": 1}, h.decisions(t))
}

func TestStartRejectsMissingOrWrongSource(t *testing.T) {
	id := component.MustNewID("glassbox_api")
	cfg := withRate(1)
	cfg.SettingsSource = &id
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
