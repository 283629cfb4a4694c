package costprocessor // import "github.com/glassbox-dev/glassbox/processor/costprocessor"

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

const scopeName = "github.com/glassbox-dev/glassbox/processor/costprocessor"

type costProcessor struct {
	pricing *costing.Service
	now     func() time.Time

	spans     metric.Int64Counter
	resultOpt [costing.NumResults]metric.AddOption

	scratch sync.Pool // *scratch
}

// scratch is the per-call buffer space for the attribute values.
type scratch struct {
	keys []string
	buf  []byte
}

func newCostProcessor(cfg *Config, set processor.Settings) (*costProcessor, error) {
	service, err := costing.NewService(cfg.Pricing, set.Logger)
	if err != nil {
		return nil, err
	}
	spans, err := spansMetric.Int64Counter(set.MeterProvider.Meter(scopeName))
	if err != nil {
		return nil, err
	}
	p := &costProcessor{
		pricing: service,
		now:     time.Now,
		spans:   spans,
		scratch: sync.Pool{New: func() any { return new(scratch) }},
	}
	for r := costing.ClientCost; r < costing.NumResults; r++ {
		p.resultOpt[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r.String())))
	}
	return p, nil
}

func (p *costProcessor) start(_ context.Context, host component.Host) error {
	return p.pricing.Start(host)
}

func (p *costProcessor) shutdown(context.Context) error {
	p.pricing.Shutdown()
	return nil
}

func (p *costProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	p.pricing.Current(ctx)
	now := p.now()
	var counts [costing.NumResults]int64
	reader := mapping.NewPriceReader(now)
	defer reader.Close()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		reader.SetResource(rs.Resource())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			reader.SetScope(ss.Scope())
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				o := reader.Read(span)
				counts[p.processSpan(&o, rs.Resource(), ss.Scope(), span, now)]++
			}
		}
	}
	for r := costing.ClientCost; r < costing.NumResults; r++ {
		if counts[r] > 0 {
			p.spans.Add(ctx, counts[r], p.resultOpt[r])
		}
	}
	return td, nil
}

// processSpan prices one span, whose pricing fields the mapping read into
// o, by the costing rule: the processor prices exactly what will be stored.
// The whole span is mapped only when an estimate needs its input and output.
func (p *costProcessor) processSpan(o *model.Observation, res pcommon.Resource, scope pcommon.InstrumentationScope, span ptrace.Span, now time.Time) costing.Result {
	result := p.pricing.Apply(o, now, func() model.Observation {
		return mapping.FromSpan(res, scope, span, now)
	})
	switch result {
	case costing.Priced, costing.Estimated:
		s := p.scratch.Get().(*scratch)
		attrs := span.Attributes()
		attrs.PutStr(model.UsageDetailsAttribute, s.usageJSON(o.UsageDetails))
		attrs.PutStr(model.CostDetailsAttribute, s.costJSON(o.CostDetails))
		p.scratch.Put(s)
		if o.UsageEstimated {
			attrs.PutBool(model.UsageEstimatedAttribute, true)
		}
	}
	return result
}

// usageJSON writes usage as a JSON object with sorted keys.
func (s *scratch) usageJSON(usage map[string]int64) string {
	s.keys = sortedKeys(s.keys, usage)
	b := append(s.buf[:0], '{')
	for i, k := range s.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, usage[k], 10)
	}
	s.buf = append(b, '}')
	return string(s.buf)
}

// costJSON writes cost details as a JSON object with sorted keys.
func (s *scratch) costJSON(cost map[string]float64) string {
	s.keys = sortedKeys(s.keys, cost)
	b := append(s.buf[:0], '{')
	for i, k := range s.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = strconv.AppendFloat(b, cost[k], 'g', -1, 64)
	}
	s.buf = append(b, '}')
	return string(s.buf)
}

func sortedKeys[V any](dst []string, m map[string]V) []string {
	dst = dst[:0]
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}

// appendJSONString appends s as a JSON string. Usage keys come from client
// data, so quotes, backslashes, control characters and invalid UTF-8 are
// escaped or replaced.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	if plainJSON(s) {
		return append(append(b, s...), '"')
	}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r) // invalid bytes arrive as U+FFFD
		}
	}
	return append(b, '"')
}

// plainJSON reports whether s is printable ASCII without quotes or
// backslashes, as usage keys almost always are: it needs no escaping.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
