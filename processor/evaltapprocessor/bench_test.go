package evaltapprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// BenchmarkProcessTraces measures the cost per span of a batch of 100 spans
// of a project with three rules (one matching every span) and of a project
// with none.
func BenchmarkProcessTraces(b *testing.B) {
	rules := []evaljobs.Rule{
		{ID: "gens", ProjectID: "p", Target: evaljobs.TargetObservation, SamplingRate: 0.1,
			Filter: evaljobs.Filter{{Field: evaljobs.FieldType, Operator: evaljobs.OpEquals, Value: model.TypeGeneration}}},
		{ID: "prod", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 1,
			Filter: evaljobs.Filter{{Field: evaljobs.FieldTags, Operator: evaljobs.OpAnyOf, Values: []string{"prod"}}}},
		{ID: "acme", ProjectID: "p", Target: evaljobs.TargetTrace, SamplingRate: 0.5,
			Filter: evaljobs.Filter{{Field: evaljobs.FieldMetadata, Key: "customer", Operator: evaljobs.OpEquals, Value: "acme"}}},
	}
	var spans []span
	for i := range 100 {
		spans = append(spans, span{trace: uint64(i / 10), id: uint64(i + 1), root: i%10 == 0, name: "llm",
			attrs: map[string]any{"langfuse.observation.type": "generation", "gen_ai.request.model": "gpt-4o",
				"langfuse.trace.tags": []any{"prod"}, "langfuse.observation.input": `{"messages":[{"role":"user","content":"hello there"}]}`}})
	}
	for _, project := range []string{"p", "other"} {
		b.Run("project="+project, func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			p, err := newTap(cfg, processortest.NewNopSettings(Type))
			require.NoError(b, err)
			p.setRules(rules)
			td := batch(project, spans...)
			// Offered jobs are drained as a writer would, without a store.
			go func() {
				for range p.jobs {
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.processTraces(context.Background(), td); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
			close(p.jobs)
		})
	}
}
