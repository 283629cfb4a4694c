package main

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Stamped copies of pre-encoded requests decode to the same spans with
// fresh ids: distinct across requests, children pointing at their root.
func TestStampedRequestsHaveDistinctIDs(t *testing.T) {
	for _, mix := range []string{"agent", "generation"} {
		t.Run(mix, func(t *testing.T) {
			g := newTextGen(7, 30000)
			const batch = 42 // not a multiple of four: the last trace is short
			req, err := buildRequest(g, mix, batch, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			perSpan := len(req.body) / batch
			want := map[string]int{"agent": 1300, "generation": 6800}[mix]
			t.Logf("%d bytes a span", perSpan)
			if perSpan < want*9/10 || perSpan > want*11/10 {
				t.Errorf("%d bytes a span, want %d ± 10%%", perSpan, want)
			}
			x := ids{tracePrefix: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, spanPrefix: 9 << 48}
			spanIDs := map[pcommon.SpanID]bool{}
			traceIDs := map[pcommon.TraceID]bool{}
			for seq := uint64(0); seq < 3; seq++ {
				body := append([]byte(nil), req.body...)
				x.stamp(body, &req, seq)
				er := ptraceotlp.NewExportRequest()
				if err := er.UnmarshalProto(body); err != nil {
					t.Fatal(err)
				}
				spans := er.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
				if spans.Len() != batch {
					t.Fatalf("%d spans, want %d", spans.Len(), batch)
				}
				roots := map[pcommon.TraceID]pcommon.SpanID{}
				for i := 0; i < spans.Len(); i++ {
					s := spans.At(i)
					if spanIDs[s.SpanID()] {
						t.Fatalf("span id %s repeated", s.SpanID())
					}
					spanIDs[s.SpanID()] = true
					traceIDs[s.TraceID()] = true
					if s.ParentSpanID().IsEmpty() {
						roots[s.TraceID()] = s.SpanID()
					} else if roots[s.TraceID()] != s.ParentSpanID() {
						t.Fatalf("span %d: parent %s, want its trace's root %s", i, s.ParentSpanID(), roots[s.TraceID()])
					}
					if s.Attributes().Len() < 8 {
						t.Fatalf("span %d lost its attributes", i)
					}
				}
			}
			if want := 3 * ((batch + 3) / 4); len(traceIDs) != want {
				t.Fatalf("%d trace ids, want %d", len(traceIDs), want)
			}
		})
	}
}
