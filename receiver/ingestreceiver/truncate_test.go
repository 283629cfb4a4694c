package ingestreceiver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// oversized is one span whose input far exceeds max_span_bytes, with
// multi-byte text so that a cut could split a character.
func oversized(inputBytes int) ptrace.Traces {
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1})
	s.SetSpanID(pcommon.SpanID{1})
	s.SetName("generation")
	s.Attributes().PutStr("langfuse.observation.input", strings.Repeat("Grüße, ", inputBytes/8))
	s.Attributes().PutStr("langfuse.observation.output", strings.Repeat("ok ", 200<<10))
	s.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
	e := s.Events().AppendEmpty()
	e.SetName("gen_ai.content.prompt")
	e.Attributes().PutStr("gen_ai.prompt", strings.Repeat("x", 300<<10))
	return td
}

// A span the exporter's batcher would drop after it was acknowledged is
// stored with its largest values truncated, and says which and how large
// they were; one that cannot fit is refused through partial success.
func TestOversizedSpans(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSpanBytes = 1 << 20
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, cfg, sink, nil, nil)

	resp, body := post(t, s.url+TracesPath, protoBody(t, oversized(12<<20)), map[string]string{"Content-Type": ctProto})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Len(t, sink.AllTraces(), 1)
	span := sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.LessOrEqual(t, spanBytes(span), int(cfg.MaxSpanBytes))
	input, _ := span.Attributes().Get("langfuse.observation.input")
	assert.True(t, strings.HasSuffix(input.Str(), truncationMark))
	assert.True(t, strings.HasPrefix(input.Str(), "Grüße, Grüße"))
	assert.True(t, utf8.ValidString(input.Str()), "cut on a character boundary")
	model, _ := span.Attributes().Get("gen_ai.request.model")
	assert.Equal(t, "gpt-4o", model.Str(), "small values are kept")
	marker, ok := span.Attributes().Get(truncatedAttribute)
	require.True(t, ok)
	var original map[string]int
	require.NoError(t, json.Unmarshal([]byte(marker.Str()), &original))
	assert.Contains(t, original, "langfuse.observation.input")
	assert.Greater(t, original["langfuse.observation.input"], 12<<20-16)

	// Within the limit: untouched.
	sink.Reset()
	small := oversized(64 << 10)
	small.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Events().RemoveIf(func(ptrace.SpanEvent) bool { return true })
	want := strings.Repeat("Grüße, ", (64<<10)/8)
	resp, _ = post(t, s.url+TracesPath, protoBody(t, small), map[string]string{"Content-Type": ctProto})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	input, _ = got.Attributes().Get("langfuse.observation.input")
	assert.Equal(t, want, input.Str())
	_, marked := got.Attributes().Get(truncatedAttribute)
	assert.False(t, marked)

	// Many small values cannot be truncated to fit: refused, not dropped later.
	sink.Reset()
	many := ptrace.NewTraces()
	sp := many.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{2})
	sp.SetSpanID(pcommon.SpanID{2})
	for i := range 3000 {
		sp.Attributes().PutStr("attribute."+strconv.Itoa(i), strings.Repeat("v", 900))
	}
	resp, body = post(t, s.url+TracesPath, jsonBody(t, many), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":"1 span(s) rejected: 1 with `+reasonTooLarge+`"}}`, string(body))
	assert.Empty(t, sink.AllTraces())
}
