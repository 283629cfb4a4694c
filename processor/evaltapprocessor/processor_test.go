package evaltapprocessor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// fakeSource serves rules and records the jobs written; it can fail or
// block writes.
type fakeSource struct {
	mu       sync.Mutex
	rules    []evaljobs.Rule
	jobs     []evaljobs.Job
	failures int           // the next writes that fail
	block    chan struct{} // writes wait for it to close, or for their deadline
}

func (f *fakeSource) Start(context.Context, component.Host) error { return nil }
func (f *fakeSource) Shutdown(context.Context) error              { return nil }

func (f *fakeSource) ActiveEvalRules(context.Context) ([]evaljobs.Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rules, nil
}

func (f *fakeSource) EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		f.failures--
		return errors.New("store down")
	}
	f.jobs = append(f.jobs, jobs...)
	return nil
}

func (f *fakeSource) written() []evaljobs.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]evaljobs.Job(nil), f.jobs...)
}

type host struct {
	component.Host
	ext map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.ext }

func withSource(src component.Component) host {
	return host{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{component.MustNewID("glassbox_controlplane"): src}}
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.FlushInterval = 10 * time.Millisecond
	return cfg
}

var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// startTap starts a tap on src and waits until it has loaded src's rules.
func startTap(t *testing.T, cfg *Config, src *fakeSource) (*tap, *componenttest.Telemetry) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	set := processortest.NewNopSettings(Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	p, err := newTap(cfg, set)
	require.NoError(t, err)
	p.now = func() time.Time { return testNow }
	p.retryPause = time.Millisecond
	require.NoError(t, p.start(context.Background(), withSource(src)))
	t.Cleanup(func() {
		require.NoError(t, p.shutdown(context.Background()))
		require.NoError(t, tt.Shutdown(context.Background()))
	})
	if len(src.rules) > 0 {
		require.Eventually(t, func() bool { return len(*p.rules.Load()) > 0 }, 5*time.Second, time.Millisecond)
	}
	return p, tt
}

func jobCounts(t *testing.T, tt *componenttest.Telemetry) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tt.GetMetric("otelcol_processor_glassbox_evaltap_jobs")
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		result, _ := dp.Attributes.Value("result")
		out[result.AsString()] = dp.Value
	}
	return out
}

// span describes one span of a test batch.
type span struct {
	trace uint64 // low bits of the trace id
	id    uint64
	root  bool
	name  string
	attrs map[string]any
}

func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], n*0x9e3779b97f4a7c15+1)
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func batch(project string, spans ...span) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if project != "" {
		rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, project)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	for _, s := range spans {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(traceID(s.trace))
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], s.id)
		sp.SetSpanID(id)
		if !s.root {
			sp.SetParentSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 9, 9})
		}
		sp.SetName(s.name)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(testNow))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(testNow.Add(time.Second)))
		if err := sp.Attributes().FromRaw(s.attrs); err != nil {
			panic(err)
		}
	}
	return td
}

func TestPassesDataUnchanged(t *testing.T) {
	src := &fakeSource{rules: []evaljobs.Rule{{ID: "r", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 1}}}
	sink := new(consumertest.TracesSink)
	proc, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(Type), testConfig(), sink)
	require.NoError(t, err)
	assert.False(t, proc.Capabilities().MutatesData)
	require.NoError(t, proc.Start(context.Background(), withSource(src)))
	defer func() { require.NoError(t, proc.Shutdown(context.Background())) }()

	in := batch("p", span{trace: 1, id: 1, root: true, name: "root", attrs: map[string]any{"langfuse.trace.tags": []any{"a"}}})
	want := ptrace.NewTraces()
	in.CopyTo(want)
	// The pipeline shares data with processors that declare MutatesData
	// false; any write to read-only data panics.
	in.MarkReadOnly()
	want.MarkReadOnly()
	require.Eventually(t, func() bool {
		require.NoError(t, proc.ConsumeTraces(context.Background(), in))
		return len(src.written()) > 0
	}, 5*time.Second, 10*time.Millisecond)
	for _, got := range sink.AllTraces() {
		assert.Equal(t, want, got)
	}
}

func TestRulesSelectTargetsOnce(t *testing.T) {
	src := &fakeSource{rules: []evaljobs.Rule{
		{ID: "trace-rule", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 1, Delay: time.Minute,
			Filter: evaljobs.Filter{{Field: evaljobs.FieldTags, Operator: evaljobs.OpAnyOf, Values: []string{"prod"}}}},
		{ID: "gen-rule", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 1,
			Filter: evaljobs.Filter{{Field: evaljobs.FieldType, Operator: evaljobs.OpEquals, Value: model.TypeGeneration}}},
		{ID: "other-project", ProjectID: "q", Target: evaljobs.TargetTrace, SamplingRate: 1},
	}}
	p, tt := startTap(t, testConfig(), src)
	prod := map[string]any{"langfuse.trace.tags": []any{"prod"}}
	gen := map[string]any{"langfuse.trace.tags": []any{"prod"}, "langfuse.observation.type": "generation"}
	td := batch("p",
		span{trace: 1, id: 1, root: true, name: "root", attrs: prod},
		span{trace: 1, id: 2, name: "llm", attrs: gen},
		span{trace: 1, id: 3, name: "tool", attrs: prod},
		span{trace: 2, id: 4, root: true, name: "dev", attrs: map[string]any{"langfuse.trace.tags": []any{"dev"}}},
	)
	batch("", span{trace: 5, id: 5, root: true, name: "no project"}).ResourceSpans().At(0).CopyTo(td.ResourceSpans().AppendEmpty())
	_, err := p.processTraces(context.Background(), td)
	require.NoError(t, err)
	_, err = p.processTraces(context.Background(), td)
	require.NoError(t, err, "a second delivery of the same spans offers nothing new")

	require.Eventually(t, func() bool { return len(src.written()) == 2 }, 5*time.Second, time.Millisecond)
	trace1 := traceID(1).String()
	assert.ElementsMatch(t, []evaljobs.Job{
		{ProjectID: "p", RuleID: "trace-rule", TraceID: trace1, Due: testNow.Add(time.Minute)},
		{ProjectID: "p", RuleID: "gen-rule", TraceID: trace1, ObservationID: "0000000000000002", Due: testNow},
	}, src.written())
	assert.Equal(t, map[string]int64{resultBuffered: 2, resultWritten: 2}, jobCounts(t, tt))
}

func TestFiltersExcludeWhatTheyShould(t *testing.T) {
	src := &fakeSource{rules: []evaljobs.Rule{{ID: "r", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 1,
		Filter: evaljobs.Filter{
			{Field: evaljobs.FieldEnvironment, Operator: evaljobs.OpNoneOf, Values: []string{"dev"}},
			{Field: evaljobs.FieldMetadata, Key: "customer", Operator: evaljobs.OpEquals, Value: "acme"},
			{Field: evaljobs.FieldModel, Operator: evaljobs.OpStartsWith, Value: "gpt-"},
			{Field: evaljobs.FieldLevel, Operator: evaljobs.OpNotEquals, Value: model.LevelError},
			{Field: evaljobs.FieldUserID, Operator: evaljobs.OpExists},
		}}}}
	p, _ := startTap(t, testConfig(), src)
	match := func() map[string]any {
		return map[string]any{"langfuse.observation.metadata.customer": "acme", "gen_ai.request.model": "gpt-4o",
			"langfuse.environment": "production", "langfuse.user.id": "u1"}
	}
	variants := []map[string]any{match()}
	for _, change := range []func(map[string]any){
		func(m map[string]any) { m["langfuse.environment"] = "dev" },
		func(m map[string]any) { m["langfuse.observation.metadata.customer"] = "globex" },
		func(m map[string]any) { delete(m, "langfuse.observation.metadata.customer") },
		func(m map[string]any) { m["gen_ai.request.model"] = "claude-3" },
		func(m map[string]any) { m["langfuse.observation.level"] = model.LevelError },
		func(m map[string]any) { delete(m, "langfuse.user.id") },
	} {
		m := match()
		change(m)
		variants = append(variants, m)
	}
	var spans []span
	for i, attrs := range variants {
		spans = append(spans, span{trace: uint64(100 + i), id: uint64(i + 1), root: true, name: fmt.Sprint(i), attrs: attrs})
	}
	_, err := p.processTraces(context.Background(), batch("p", spans...))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(src.written()) > 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.shutdown(context.Background()))
	require.Len(t, src.written(), 1, "only the span that meets every condition")
	assert.Equal(t, traceID(100).String(), src.written()[0].TraceID)
}

// Sampling at 0.5 keeps about half the traces, and a second collector keeps
// the same ones.
func TestSamplingIsConsistentAcrossInstances(t *testing.T) {
	rules := []evaljobs.Rule{{ID: "half", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 0.5, Delay: time.Second}}
	const traces = 2000
	var spans []span
	for i := range traces {
		spans = append(spans, span{trace: uint64(i), id: uint64(i + 1), root: true, name: "t"})
	}
	selected := func() map[string]bool {
		src := &fakeSource{rules: rules}
		p, _ := startTap(t, testConfig(), src)
		_, err := p.processTraces(context.Background(), batch("p", spans...))
		require.NoError(t, err)
		require.NoError(t, p.shutdown(context.Background()))
		out := map[string]bool{}
		for _, j := range src.written() {
			out[j.TraceID] = true
		}
		return out
	}
	first, second := selected(), selected()
	// Binomial standard deviation at n=2000 is about 0.011; 4 sigma.
	assert.InDelta(t, 0.5, float64(len(first))/traces, 0.045)
	assert.Equal(t, first, second)
}

func TestFullBufferDropsWithoutBlocking(t *testing.T) {
	src := &fakeSource{block: make(chan struct{}),
		rules: []evaljobs.Rule{{ID: "r", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 1}}}
	cfg := testConfig()
	cfg.QueueSize, cfg.BatchSize, cfg.EnqueueAttempts = 2, 1, 1
	p, tt := startTap(t, cfg, src)
	var spans []span
	for i := range 50 {
		spans = append(spans, span{trace: uint64(i), id: uint64(i + 1), name: "s"})
	}
	start := time.Now()
	_, err := p.processTraces(context.Background(), batch("p", spans...))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "the pipeline does not wait for the job queue")
	counts := jobCounts(t, tt)
	assert.Positive(t, counts[resultDropped])
	assert.Equal(t, int64(50), counts[resultDropped]+counts[resultBuffered])
	close(src.block)
}

func TestFailedWritesAreRetriedThenCounted(t *testing.T) {
	src := &fakeSource{failures: 1, rules: []evaljobs.Rule{{ID: "r", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 1}}}
	cfg := testConfig()
	cfg.EnqueueAttempts = 2
	p, tt := startTap(t, cfg, src)
	_, err := p.processTraces(context.Background(), batch("p", span{trace: 1, id: 1, root: true, name: "a"}))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(src.written()) == 1 }, 5*time.Second, time.Millisecond, "the retry succeeds")

	src.mu.Lock()
	src.failures = 2
	src.mu.Unlock()
	_, err = p.processTraces(context.Background(), batch("p", span{trace: 2, id: 2, root: true, name: "b"}))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return jobCounts(t, tt)[resultFailed] == 1 }, 5*time.Second, time.Millisecond)
	assert.Len(t, src.written(), 1)
}

func TestShutdownWritesWhatIsBuffered(t *testing.T) {
	src := &fakeSource{rules: []evaljobs.Rule{{ID: "r", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 1}}}
	cfg := testConfig()
	cfg.FlushInterval, cfg.BatchSize = time.Hour, 2
	p, _ := startTap(t, cfg, src)
	var spans []span
	for i := range 5 {
		spans = append(spans, span{trace: 1, id: uint64(i + 1), name: "s"})
	}
	_, err := p.processTraces(context.Background(), batch("p", spans...))
	require.NoError(t, err)
	require.NoError(t, p.shutdown(context.Background()))
	assert.Len(t, src.written(), 5)
}

func TestInvalidRulesAreSkipped(t *testing.T) {
	src := &fakeSource{rules: []evaljobs.Rule{
		{ID: "bad", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 1,
			Filter: evaljobs.Filter{{Field: "cost", Operator: evaljobs.OpEquals, Value: "1"}}},
		{ID: "bad-target", ProjectID: "p", Target: "session", SamplingRate: 1},
		{ID: "good", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 1},
	}}
	p, _ := startTap(t, testConfig(), src)
	assert.Len(t, (*p.rules.Load())["p"], 1)
	assert.Equal(t, "good", (*p.rules.Load())["p"][0].ID)
}

func TestStartNeedsTheSourceExtension(t *testing.T) {
	p, err := newTap(testConfig(), processortest.NewNopSettings(Type))
	require.NoError(t, err)
	assert.ErrorContains(t, p.start(context.Background(), componenttest.NewNopHost()), "is not configured")
	other := withSource(struct {
		component.StartFunc
		component.ShutdownFunc
	}{})
	assert.ErrorContains(t, p.start(context.Background(), other), "does not serve evaluator rules")
	require.NoError(t, p.shutdown(context.Background()), "shutdown is safe without start")
	require.NoError(t, p.shutdown(context.Background()), "and when repeated")
}

func TestRecentSetForgetsTheOldest(t *testing.T) {
	r := newRecentSet(2)
	r.add("a")
	r.add("b")
	r.add("b")
	assert.True(t, r.contains("a"))
	r.add("c")
	assert.False(t, r.contains("a"))
	assert.True(t, r.contains("b"))
	assert.True(t, r.contains("c"))

	off := newRecentSet(0)
	off.add("a")
	assert.False(t, off.contains("a"))
}
