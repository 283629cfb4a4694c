package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// spansPerTrace is the shape of both mixes: traces of four spans.
const spansPerTrace = 4

// request is one pre-encoded OTLP export with the places of its ids, so that
// a sender can give each copy fresh ids without encoding it again.
type request struct {
	body    []byte
	spans   int
	traces  int
	patches []patch
	// texts are the input and output strings, to measure how they compress.
	texts []string
}

// patch is where an id sits in the body: a trace id (16 bytes) or a span id
// (8 bytes, as a span's own id or as its children's parent id), by its index
// among the request's traces or spans.
type patch struct {
	offset int
	trace  bool
	index  uint32
}

// Placeholder ids start with bytes that UTF-8 text never holds, and each is
// checked against the protobuf tag before it, so a match in text or in a
// timestamp cannot be taken for an id.
var (
	idMagic    = []byte{0xff, 0xfe, 0xfd}
	traceMagic = []byte{0xff, 0xfe, 0xfd, 0xfc, 'T'}
	spanMagic  = []byte{0xff, 0xfe, 0xfd, 'S'}
)

func placeholderTraceID(i int) pcommon.TraceID {
	var id pcommon.TraceID
	copy(id[:], traceMagic)
	binary.BigEndian.PutUint32(id[12:], uint32(i))
	return id
}

func placeholderSpanID(i int) pcommon.SpanID {
	var id pcommon.SpanID
	copy(id[:], spanMagic)
	binary.BigEndian.PutUint32(id[4:], uint32(i))
	return id
}

// Protobuf tags (field number << 3 | wire type 2) and lengths before the
// ids in a Span: trace_id = 1, span_id = 2, parent_span_id = 4.
var (
	traceIDPrefix  = []byte{0x0a, 16}
	spanIDPrefix   = []byte{0x12, 8}
	parentIDPrefix = []byte{0x22, 8}
)

// models have prices in the built-in catalogue, so the cost processor prices
// every generation.
var models = []string{"gpt-4o-mini", "gpt-4.1-mini", "claude-sonnet-4-5", "gemini-2.5-flash", "gpt-4o"}

// buildRequest encodes one export of n spans of the mix, in traces of four,
// with placeholder ids, and records where the ids are.
// The agent mix is an agent run (~1.3 KB a span on the wire): a root agent
// span, a generation, a tool call and a nested span. The generation mix is
// four LLM calls a trace with ~6.8 KB of chat input and output each.
func buildRequest(g *textGen, mix string, n int, now time.Time) (request, error) {
	req := request{spans: n, traces: (n + spansPerTrace - 1) / spansPerTrace}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "loadgen")
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("langfuse-sdk")
	ss.Scope().SetVersion("5.11.1")
	rng := g.rng
	put := func(a pcommon.Map, key, text string) {
		a.PutStr(key, text)
		req.texts = append(req.texts, text)
	}
	var user, session int
	for i := 0; i < n; i++ {
		s := ss.Spans().AppendEmpty()
		trace := i / spansPerTrace
		s.SetTraceID(placeholderTraceID(trace))
		s.SetSpanID(placeholderSpanID(i))
		if i%spansPerTrace == 0 {
			user, session = rng.IntN(500), rng.IntN(5000)
		} else {
			s.SetParentSpanID(placeholderSpanID(trace * spansPerTrace))
		}
		start := now.Add(time.Duration(i) * time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(50+rng.IntN(2000)) * time.Millisecond)))
		a := s.Attributes()
		a.PutStr("user.id", "user-"+strconv.Itoa(user))
		a.PutStr("session.id", "session-"+strconv.Itoa(session))
		a.PutStr("langfuse.environment", "production")
		a.PutStr("langfuse.trace.name", "support-agent")
		tags := a.PutEmptySlice("langfuse.trace.tags")
		tags.AppendEmpty().SetStr("bench")
		tags.AppendEmpty().SetStr(mix)
		a.PutStr("langfuse.trace.metadata.tenant", "tenant-"+strconv.Itoa(user%20))
		if mix == "generation" {
			s.SetName("chat-completion")
			putGeneration(g, a, put, 650, 2200, 2900)
			continue
		}
		switch i % spansPerTrace {
		case 0:
			s.SetName("agent-run")
			a.PutStr("langfuse.observation.type", "agent")
			put(a, "langfuse.observation.input", jsonText(map[string]string{"question": g.text(200)}))
			put(a, "langfuse.observation.output", jsonText(map[string]string{"answer": g.text(420)}))
		case 1:
			s.SetName("chat-completion")
			putGeneration(g, a, put, 150, 250, 300)
		case 2:
			s.SetName("kb-search")
			a.PutStr("langfuse.observation.type", "tool")
			put(a, "langfuse.observation.input", jsonText(map[string]string{"query": g.text(80)}))
			put(a, "langfuse.observation.output", jsonText(map[string][]string{"hits": {g.text(170), g.text(170), g.text(170)}}))
		case 3:
			s.SetName("rerank")
			a.PutStr("langfuse.observation.metadata.reranker", "bm25")
			put(a, "langfuse.observation.input", jsonText(map[string]string{"candidates": g.text(330)}))
			put(a, "langfuse.observation.output", jsonText(map[string]string{"order": g.text(120)}))
		}
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return request{}, err
	}
	req.body = body
	req.patches, err = findIDs(body, req.traces, n)
	return req, err
}

// findIDs returns the places of the placeholder ids in body and checks that
// every trace id appears once per span of its trace and every span id once,
// plus once per child for a trace's root.
func findIDs(body []byte, traces, spans int) ([]patch, error) {
	var patches []patch
	traceSeen := make([]int, traces)
	spanSeen := make([]int, spans)
	for pos := 0; ; {
		i := bytes.Index(body[pos:], idMagic)
		if i < 0 {
			break
		}
		off := pos + i
		pos = off + 1
		switch {
		case bytes.HasPrefix(body[off:], traceMagic) && off >= 2 && bytes.Equal(body[off-2:off], traceIDPrefix):
			idx := binary.BigEndian.Uint32(body[off+12:])
			if int(idx) >= traces {
				return nil, fmt.Errorf("trace placeholder %d out of range", idx)
			}
			traceSeen[idx]++
			patches = append(patches, patch{offset: off, trace: true, index: idx})
			pos = off + 16
		case bytes.HasPrefix(body[off:], spanMagic) && off >= 2 &&
			(bytes.Equal(body[off-2:off], spanIDPrefix) || bytes.Equal(body[off-2:off], parentIDPrefix)):
			idx := binary.BigEndian.Uint32(body[off+4:])
			if int(idx) >= spans {
				return nil, fmt.Errorf("span placeholder %d out of range", idx)
			}
			spanSeen[idx]++
			patches = append(patches, patch{offset: off, index: idx})
			pos = off + 8
		}
	}
	for t, seen := range traceSeen {
		if want := min(spansPerTrace, spans-t*spansPerTrace); seen != want {
			return nil, fmt.Errorf("trace %d: id found %d times, want %d", t, seen, want)
		}
	}
	for s, seen := range spanSeen {
		want := 1
		if s%spansPerTrace == 0 {
			want += min(spansPerTrace, spans-s) - 1
		}
		if seen != want {
			return nil, fmt.Errorf("span %d: id found %d times, want %d", s, seen, want)
		}
	}
	return patches, nil
}

// putGeneration sets the attributes of an LLM call: a system prompt and a
// user message of about system and user bytes, and an answer of about output
// bytes.
func putGeneration(g *textGen, a pcommon.Map, put func(pcommon.Map, string, string), system, user, output int) {
	rng := g.rng
	a.PutStr("langfuse.observation.type", "generation")
	a.PutStr("langfuse.observation.model.name", models[rng.IntN(len(models))])
	a.PutStr("langfuse.observation.model.parameters", `{"temperature":0.`+strconv.Itoa(rng.IntN(10))+`,"max_tokens":1024}`)
	in, out := (system+user)/4+rng.IntN(50), output/4+rng.IntN(50)
	a.PutStr("langfuse.observation.usage_details", `{"input":`+strconv.Itoa(in)+`,"output":`+strconv.Itoa(out)+`,"total":`+strconv.Itoa(in+out)+`}`)
	a.PutStr("langfuse.observation.prompt.name", "support/answer")
	a.PutInt("langfuse.observation.prompt.version", int64(1+rng.IntN(5)))
	put(a, "langfuse.observation.input", jsonText([]map[string]string{
		{"role": "system", "content": g.text(system)},
		{"role": "user", "content": g.text(user)},
	}))
	put(a, "langfuse.observation.output", jsonText(map[string]string{"role": "assistant", "content": g.text(output)}))
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ids hands out the ids of a run: trace ids are the run's random prefix and a
// trace number, span ids a span number under a random prefix, so that every
// id of a run is distinct and runs do not collide.
type ids struct {
	tracePrefix [8]byte
	spanPrefix  uint64
}

// stamp writes fresh ids into body, a copy of req.body, for the seq'th
// request of the run.
func (x *ids) stamp(body []byte, req *request, seq uint64) {
	firstTrace := seq * uint64(req.traces)
	firstSpan := seq * uint64(req.spans)
	for _, p := range req.patches {
		if p.trace {
			copy(body[p.offset:], x.tracePrefix[:])
			binary.BigEndian.PutUint64(body[p.offset+8:], firstTrace+uint64(p.index))
		} else {
			binary.BigEndian.PutUint64(body[p.offset:], x.spanPrefix|(firstSpan+uint64(p.index)+1))
		}
	}
}
