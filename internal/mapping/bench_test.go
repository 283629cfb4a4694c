package mapping

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

const benchSpans = 120 // spans per export, about what an SDK batch holds

// benchTraces builds one export in the shape of the JS SDK: a resource with
// the NodeSDK attributes, the langfuse-sdk scope, and traces of a root span,
// an agent, generations and tools, all carrying propagated trace attributes.
// ioBytes sets the size of generation input.
func benchTraces(generationsOnly bool, ioBytes int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ra := rs.Resource().Attributes()
	ra.PutStr(model.ProjectIDAttribute, "proj-bench")
	for k, v := range map[string]string{
		"service.name": "support-bot", "host.name": "ip-10-0-3-17", "host.arch": "amd64",
		"process.runtime.name": "nodejs", "process.runtime.version": "20.18.0",
		"telemetry.sdk.language": "nodejs", "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.version": "2.2.0",
	} {
		ra.PutStr(k, v)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("langfuse-sdk")
	ss.Scope().SetVersion("5.11.1")

	text := func(n int) string { return strings.Repeat("lorem ipsum ", n/12+1)[:n] }
	messages := fmt.Sprintf(`[{"role":"system","content":%q},{"role":"user","content":%q}]`,
		text(ioBytes/4), text(ioBytes*3/4-60))
	reply := fmt.Sprintf(`{"role":"assistant","content":%q}`, text(ioBytes/5))
	start := pcommon.NewTimestampFromTime(time.Date(2025, 10, 31, 8, 40, 0, 0, time.UTC))

	var traceID pcommon.TraceID
	var rootID pcommon.SpanID
	for i := 0; i < benchSpans; i++ {
		sp := ss.Spans().AppendEmpty()
		kind := "generation"
		if !generationsOnly {
			kind = [...]string{"span", "agent", "generation", "tool", "generation", "tool"}[i%6]
		}
		if i%6 == 0 {
			traceID = pcommon.TraceID{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
			rootID = pcommon.SpanID{byte(i), 1, 2, 3, 4, 5, 6, 7}
		}
		sp.SetTraceID(traceID)
		sp.SetSpanID(pcommon.SpanID{byte(i), 9, 9, 9, 9, 9, 9, 9})
		if i%6 != 0 {
			sp.SetParentSpanID(rootID)
		}
		sp.SetName(kind + "-step")
		sp.SetStartTimestamp(start + pcommon.Timestamp(i)*1_000_000)
		sp.SetEndTimestamp(start + pcommon.Timestamp(i+5)*1_000_000)
		a := sp.Attributes()
		a.PutStr("user.id", "user_2f9a")
		a.PutStr("session.id", "sess_71c0e5")
		tags := a.PutEmptySlice("langfuse.trace.tags")
		tags.AppendEmpty().SetStr("support")
		tags.AppendEmpty().SetStr("tier-2")
		a.PutStr("langfuse.trace.metadata.plan", "pro")
		a.PutStr("langfuse.trace.metadata.region", "eu-west-1")
		a.PutStr("langfuse.environment", "production")
		a.PutStr("langfuse.release", "v1.4.2")
		a.PutStr("langfuse.observation.type", kind)
		a.PutStr("langfuse.observation.metadata.source", "zendesk")
		switch kind {
		case "generation":
			a.PutStr("langfuse.observation.model.name", "gpt-4o-mini")
			a.PutStr("langfuse.observation.model.parameters", `{"temperature":0.2,"max_tokens":512}`)
			a.PutStr("langfuse.observation.input", messages)
			a.PutStr("langfuse.observation.output", reply)
			a.PutStr("langfuse.observation.usage_details",
				`{"prompt_tokens":1650,"completion_tokens":61,"total_tokens":1711,"prompt_tokens_details":{"cached_tokens":1024}}`)
			a.PutStr("langfuse.observation.cost_details", `{"input":0.0000618,"output":0.0000228,"total":0.0000846}`)
			a.PutStr("langfuse.observation.completion_start_time", `"2025-10-31T08:40:00.410Z"`)
			a.PutStr("langfuse.observation.prompt.name", "triage-classifier")
			a.PutInt("langfuse.observation.prompt.version", 3)
		default:
			a.PutStr("langfuse.observation.input", fmt.Sprintf(`{"ticketId":"T-88412","query":%q}`, text(300)))
			a.PutStr("langfuse.observation.output", fmt.Sprintf(`{"status":"ok","result":%q}`, text(300)))
		}
		if i%6 == 0 {
			a.PutBool("langfuse.internal.is_app_root", true)
		}
	}
	return td
}

// attributeBytes is the size of the span attributes as sent, to state what a
// benchmark's spans weigh.
func attributeBytes(td ptrace.Traces) int {
	n := 0
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		for k, v := range spans.At(i).Attributes().All() {
			n += len(k) + len(v.AsString())
		}
	}
	return n / spans.Len()
}

func BenchmarkObservations(b *testing.B) {
	for _, bc := range []struct {
		name string
		td   ptrace.Traces
	}{
		{"agent_mix", benchTraces(false, 700)},
		{"generation_mix", benchTraces(true, 6000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			now := time.Now()
			dst := make([]model.Observation, 0, benchSpans)
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendObservations(dst[:0], bc.td, now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSpans), "ns/span")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { AppendObservations(dst[:0], bc.td, now) }))/benchSpans, "allocs/span")
			b.ReportMetric(float64(attributeBytes(bc.td)), "attr-bytes/span")
		})
	}
}

// BenchmarkPriceFields reads the pricing fields of generations whose usage
// and cost details are flat JSON objects, as the SDKs send usage and as the
// cost processor writes both: what the processor and then the exporter read.
func BenchmarkPriceFields(b *testing.B) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, "proj-bench")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("langfuse-sdk")
	for i := range benchSpans {
		a := ss.Spans().AppendEmpty().Attributes()
		a.PutStr("langfuse.observation.type", "generation")
		a.PutStr("langfuse.observation.model.name", "gpt-4o-mini")
		a.PutStr(model.UsageDetailsAttribute, fmt.Sprintf(`{"input":%d,"input_cached_tokens":1024,"output":%d,"total":%d}`, 600+i, 61+i, 1685+2*i))
		a.PutStr(model.CostDetailsAttribute, fmt.Sprintf(`{"input":%g,"input_cached_tokens":7.68e-05,"output":%g,"total":%g}`, 9e-05+float64(i)*1.5e-07, 3.66e-05+float64(i)*6e-07, 0.0002034+float64(i)*7.5e-07))
	}
	spans := ss.Spans()
	reader := NewPriceReader(time.Now())
	defer reader.Close()
	reader.SetResource(rs.Resource())
	reader.SetScope(ss.Scope())
	b.ReportAllocs()
	for b.Loop() {
		for i := range spans.Len() {
			if o := reader.Read(spans.At(i)); len(o.CostDetails) != 4 || len(o.UsageDetails) != 4 {
				b.Fatalf("read usage %v and cost %v", o.UsageDetails, o.CostDetails)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSpans), "ns/span")
}
