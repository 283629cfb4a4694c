package samplingprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

func BenchmarkProcessSpans(b *testing.B) {
	cfg := withRate(0.5)
	cfg.Projects = map[string]ProjectConfig{"p": {Environments: map[string]float64{"production": 0.25}}}
	p, err := newSamplingProcessor(cfg, processortest.NewNopSettings(Type))
	if err != nil {
		b.Fatal(err)
	}
	const batch = 100
	var spans []spanSpec
	for i, id := range traceIDs(batch) {
		ts := ""
		if i%2 == 0 {
			ts = "ot=th:0"
		}
		spans = append(spans, spanSpec{trace: id, span: 1, traceState: ts, attrs: map[string]any{
			"langfuse.environment": "production", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
		}})
	}
	src := build(b, resourceSpec{project: "p", attrs: map[string]any{"service.name": "svc"}, spans: spans})
	copies := make([]ptrace.Traces, 64)
	refill := func() {
		for i := range copies {
			copies[i] = ptrace.NewTraces()
			src.CopyTo(copies[i])
		}
	}
	refill()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%len(copies) == 0 {
			b.StopTimer()
			refill()
			b.StartTimer()
		}
		if _, err := p.processTraces(ctx, copies[i%len(copies)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/span")
}
