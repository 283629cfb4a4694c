package costprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

const benchBatch = 100

// benchProcessor prices against a 500-definition catalogue: the built-in
// one plus the project's own definitions.
func benchProcessor(b *testing.B) *costProcessor {
	b.Helper()
	p, err := newCostProcessor(defaultConfig(), processortest.NewNopSettings(Type))
	if err != nil {
		b.Fatal(err)
	}
	var custom []pricing.Model
	for i := 0; p.pricing.Pricer().Builtin().Len()+len(custom) < 500; i++ {
		custom = append(custom, pricing.Model{
			ID: fmt.Sprint("c", i), Name: fmt.Sprint("custom-", i), MatchPattern: fmt.Sprintf(`^(acme/)?custom-%d(-v\d+)?$`, i),
			Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1e-6, "output": 2e-6}}},
		})
	}
	if err := p.pricing.Pricer().SetProjectModels(map[string][]pricing.Model{"proj": custom}); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchTraces is a batch of generations as SDKs send them: about 1.5 KB
// of chat input and 0.5 KB of output each, usage in one of three shapes,
// models rotating over ten names.
func benchTraces(b *testing.B, generations bool) ptrace.Traces {
	models := []string{"gpt-4o", "gpt-4.1-mini", "claude-sonnet-4-5-20250929", "gemini-2.5-pro", "custom-7",
		"o3", "deepseek-chat", "grok-4", "mistral-large-latest", "llama-3.3-70b-versatile"}
	input := `[{"role":"system","content":"` + strings.Repeat("You are a helpful travel agent. ", 20) +
		`"},{"role":"user","content":"` + strings.Repeat("Find me a flight to Lisbon. ", 30) + `"}]`
	output := `"` + strings.Repeat("Here are three options. ", 20) + `"`
	var spans []testSpan
	for i := range benchBatch {
		m := models[i%len(models)]
		var s testSpan
		switch {
		case !generations:
			s = testSpan{scope: "net/http", attrs: map[string]any{
				"http.request.method": "GET", "url.path": "/api/flights", "http.response.status_code": 200,
				"server.address": "api.example.com",
			}}
		case i%3 == 0:
			s = generation(m, map[string]any{
				"langfuse.observation.usage_details":    `{"input":1200,"output":300,"input_cached_tokens":200}`,
				"langfuse.observation.input":            input,
				"langfuse.observation.output":           output,
				"langfuse.observation.model.parameters": `{"temperature":0.2,"max_tokens":1024}`,
			})
		case i%3 == 1:
			s = testSpan{scope: "opentelemetry.instrumentation.openai.v2", attrs: map[string]any{
				"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": m,
				"gen_ai.request.temperature": 0.2, "gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 300,
				"gen_ai.input.messages": input, "gen_ai.output.messages": output,
			}}
		default:
			s = testSpan{scope: "openinference.instrumentation.openai", attrs: map[string]any{
				"openinference.span.kind": "LLM", "llm.model_name": m, "llm.token_count.prompt": 1200,
				"llm.token_count.completion": 300, "llm.token_count.total": 1500, "input.value": input,
				"output.value": output, "input.mime_type": "application/json",
			}}
		}
		spans = append(spans, s)
	}
	return testTraces(b, "proj", spans...)
}

func BenchmarkProcessSpans(b *testing.B) {
	for _, tc := range []struct {
		name        string
		generations bool
	}{{"generations", true}, {"plain_spans", false}} {
		b.Run(tc.name, func(b *testing.B) {
			p := benchProcessor(b)
			src := benchTraces(b, tc.generations)
			// Pricing writes attributes; after each round they are put back
			// as the client sent them, outside the timer.
			td := ptrace.NewTraces()
			src.CopyTo(td)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.processTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				restore(td, src)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/span")
		})
	}
}

// restore resets the attributes the processor writes to those of src.
func restore(td, src ptrace.Traces) {
	dst, orig := td.ResourceSpans().At(0).ScopeSpans(), src.ResourceSpans().At(0).ScopeSpans()
	for i := 0; i < dst.Len(); i++ {
		attrs, was := dst.At(i).Spans().At(0).Attributes(), orig.At(i).Spans().At(0).Attributes()
		for _, k := range []string{model.UsageDetailsAttribute, model.CostDetailsAttribute} {
			if v, ok := was.Get(k); ok {
				attrs.PutStr(k, v.Str())
			} else {
				attrs.Remove(k)
			}
		}
	}
}
