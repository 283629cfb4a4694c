package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const (
	// minSpanBytes is the smallest max_span_bytes: room for a span's
	// structure beside truncated values.
	minSpanBytes = 64 << 10
	// keptBytes is what a truncated value keeps at least, so that a reader
	// still sees how it began.
	keptBytes = 1 << 10
	// truncatedAttribute lands in the observation's metadata, as
	// glassbox_truncated: each truncated attribute with its original size.
	truncatedAttribute = "langfuse.observation.metadata.glassbox_truncated"
	// truncationMark ends a truncated value.
	truncationMark = "…[truncated]"
)

// fitSpan makes s fit in limit bytes by truncating its largest string
// attribute values, of the span and of its events, largest first. It
// reports whether s fits now; one that does not (many small values) is
// refused rather than acknowledged and dropped by the exporter's batcher.
func fitSpan(s ptrace.Span, limit int) bool {
	size := spanBytes(s)
	if size <= limit {
		return true
	}
	type candidate struct {
		key string
		v   pcommon.Value
	}
	var large []candidate
	collect := func(prefix string, m pcommon.Map) {
		for k, v := range m.All() {
			if v.Type() == pcommon.ValueTypeStr && len(v.Str()) > keptBytes+len(truncationMark) {
				large = append(large, candidate{prefix + k, v})
			}
		}
	}
	collect("", s.Attributes())
	for _, e := range s.Events().All() {
		collect("event "+e.Name()+": ", e.Attributes())
	}
	slices.SortFunc(large, func(a, b candidate) int { return len(b.v.Str()) - len(a.v.Str()) })
	excess := size - limit + len(truncatedAttribute) + 256 // room for the marker itself
	original := map[string]int{}
	for _, c := range large {
		if excess <= 0 {
			break
		}
		text := c.v.Str()
		keep := max(keptBytes, len(text)-len(truncationMark)-excess)
		for keep > 0 && !utf8.RuneStart(text[keep]) {
			keep--
		}
		original[c.key] = len(text)
		c.v.SetStr(text[:keep] + truncationMark)
		excess -= len(text) - keep - len(truncationMark)
	}
	if excess > 0 {
		return false
	}
	marker, _ := json.Marshal(original)
	s.Attributes().PutStr(truncatedAttribute, string(marker))
	return true
}

// spanBytes approximates what a span adds to a batch: its names, status
// message and attribute keys and values, with events and links.
func spanBytes(s ptrace.Span) int {
	n := len(s.Name()) + len(s.Status().Message()) + mapBytes(s.Attributes())
	for _, e := range s.Events().All() {
		n += len(e.Name()) + mapBytes(e.Attributes())
	}
	for _, l := range s.Links().All() {
		n += len(l.TraceState().AsRaw()) + mapBytes(l.Attributes())
	}
	return n
}

func mapBytes(m pcommon.Map) int {
	n := 0
	for k, v := range m.All() {
		n += len(k) + valueBytes(v)
	}
	return n
}

func valueBytes(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str())
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len()
	case pcommon.ValueTypeMap:
		return mapBytes(v.Map())
	case pcommon.ValueTypeSlice:
		n := 0
		for _, e := range v.Slice().All() {
			n += valueBytes(e)
		}
		return n
	default:
		return 8
	}
}
