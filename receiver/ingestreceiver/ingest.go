package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receiverhelper"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// Reasons a span is unusable. Spans ending before they start are kept: the
// timing is the client's to report and the mapping copes with it.
const (
	reasonTraceID    = "an all-zero trace id"
	reasonSpanID     = "an all-zero span id"
	reasonSelfParent = "a parent span id equal to its own span id"
	reasonTooLarge   = "more attribute data than max_span_bytes even with its largest values truncated"
)

var errInvalidSpans = errors.New("spans rejected by validation")

// rejection tells how many spans were removed and why.
type rejection struct {
	count   int64
	reasons map[string]int
}

// message is the partial-success text, reasons in a fixed order.
func (r rejection) message() string {
	parts := make([]string, 0, len(r.reasons))
	for _, reason := range []string{reasonTraceID, reasonSpanID, reasonSelfParent, reasonTooLarge} {
		if n := r.reasons[reason]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d with %s", n, reason))
		}
	}
	return fmt.Sprintf("%d span(s) rejected: %s", r.count, strings.Join(parts, ", "))
}

func invalidReason(s ptrace.Span) string {
	switch {
	case s.TraceID().IsEmpty():
		return reasonTraceID
	case s.SpanID().IsEmpty():
		return reasonSpanID
	case s.ParentSpanID() == s.SpanID():
		return reasonSelfParent
	}
	return ""
}

// removeInvalidSpans drops unusable spans, and the scopes and resources left
// empty, in place; spans larger than maxSpanBytes are truncated to fit.
func removeInvalidSpans(td ptrace.Traces, maxSpanBytes int) rejection {
	rej := rejection{reasons: map[string]int{}}
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(s ptrace.Span) bool {
				reason := invalidReason(s)
				if reason == "" && !fitSpan(s, maxSpanBytes) {
					reason = reasonTooLarge
				}
				if reason == "" {
					return false
				}
				rej.count++
				rej.reasons[reason]++
				return true
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	return rej
}

// ingest validates, stamps and forwards one export request. It reports the
// spans it removed; err is the next consumer's.
func (r *ingestReceiver) ingest(ctx context.Context, obs *receiverhelper.ObsReport, format, projectID string, td ptrace.Traces) (rejection, error) {
	rej := removeInvalidSpans(td, int(r.cfg.MaxSpanBytes))
	if rej.count > 0 {
		opCtx := obs.StartTracesOp(ctx)
		obs.EndTracesOp(opCtx, format, int(rej.count), consumererror.NewPermanent(errInvalidSpans))
	}
	n := td.SpanCount()
	if n == 0 {
		return rej, nil
	}
	model.StampProject(td, projectID)
	opCtx := obs.StartTracesOp(ctx)
	err := r.next.ConsumeTraces(opCtx, td)
	obs.EndTracesOp(opCtx, format, n, err)
	return rej, err
}
