package topology

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const spansPerTrace = 5

// traceRec is one trace the load sent, with the span ids of every
// request that carried it and was acknowledged.
type traceRec struct {
	session string
	spans   []string
}

// load sends traces through nginx with the stock OTel Go exporter (its
// retries on 429/502/503/504 included) and records what was acknowledged.
type load struct {
	exp     *otlptrace.Exporter
	workers int
	traces  int // per request
	every   time.Duration

	mu        sync.Mutex
	acked     map[string]*traceRec // trace id -> trace, acknowledged
	ackOrder  []string
	sent      atomic.Int64 // spans in requests sent (first tries)
	failed    atomic.Int64 // spans in requests that ended in an error
	lastAck   atomic.Int64 // unix nanos of the last acknowledgement
	maxGap    atomic.Int64 // the longest time without an acknowledgement, since reset
	stop      chan struct{}
	wg        sync.WaitGroup
	sessionNo atomic.Int64
}

// newLoad sends about 500 spans/s: 4 senders, a request of 5 traces every
// 200 ms each. The 2-core machine that runs all thirteen processes keeps up
// with that even when it is busy with other work, so the time to store
// after a fault measures recovery, not a backlog.
func newLoad(t *testing.T, tp *topology) *load {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(tp.baseURL+"/api/public/otel/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": basic(publicKey, secretKey)}),
		otlptracehttp.WithTLSClientConfig(tp.tlsConfig.Clone()),
		otlptracehttp.WithTimeout(120*time.Second),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond,
			MaxInterval: 2 * time.Second, MaxElapsedTime: 110 * time.Second}))
	require.NoError(t, err)
	return &load{exp: exp, workers: 4, traces: 5, every: 200 * time.Millisecond, acked: map[string]*traceRec{}}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// start runs the senders until halt.
func (l *load) start() {
	l.stop = make(chan struct{})
	l.lastAck.Store(time.Now().UnixNano())
	l.maxGap.Store(0)
	for w := range l.workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(l.every)
			defer tick.Stop()
			for {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				l.send(w)
			}
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			gap := time.Now().UnixNano() - l.lastAck.Load()
			if gap > l.maxGap.Load() {
				l.maxGap.Store(gap)
			}
		}
	}()
}

// halt stops sending and waits for the requests in flight to end.
func (l *load) halt() {
	close(l.stop)
	l.wg.Wait()
}

// send exports one request of l.traces traces, spansPerTrace spans each: a
// root with user and session, a generation with usage, three tools.
func (l *load) send(worker int) {
	now := time.Now()
	session := fmt.Sprintf("session-%d", l.sessionNo.Add(1)%40)
	res := resource.NewSchemaless(attribute.String("service.name", "topology-load"))
	var stubs tracetest.SpanStubs
	recs := map[string]*traceRec{}
	for range l.traces {
		var tid trace.TraceID
		_, _ = rand.Read(tid[:])
		rec := &traceRec{session: session}
		root := newSpanID()
		for s := range spansPerTrace {
			sid := root
			if s > 0 {
				sid = newSpanID()
			}
			stub := tracetest.SpanStub{
				Name:                 fmt.Sprintf("step-%d", s),
				SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
				StartTime:            now.Add(time.Duration(s) * time.Millisecond),
				EndTime:              now.Add(time.Duration(s+10) * time.Millisecond),
				Resource:             res,
				InstrumentationScope: instrumentation.Scope{Name: "topology"},
			}
			switch s {
			case 0:
				stub.Name = "agent-run"
				stub.Attributes = []attribute.KeyValue{attribute.String("user.id", fmt.Sprintf("user-%d", worker)),
					attribute.String("session.id", session), attribute.String("langfuse.observation.input", `{"q":"hello"}`)}
			case 1:
				stub.Name = "chat gpt-4o"
				stub.Attributes = []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"),
					attribute.String("gen_ai.request.model", "gpt-4o"), attribute.Int("gen_ai.usage.input_tokens", 100),
					attribute.Int("gen_ai.usage.output_tokens", 20)}
			default:
				stub.Attributes = []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"),
					attribute.String("gen_ai.tool.name", fmt.Sprintf("tool-%d", s))}
			}
			if s > 0 {
				stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: root})
			}
			stubs = append(stubs, stub)
			rec.spans = append(rec.spans, sid.String())
		}
		recs[tid.String()] = rec
	}
	spans := int64(len(stubs))
	l.sent.Add(spans)
	if err := l.exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
		l.failed.Add(spans)
		return
	}
	l.lastAck.Store(time.Now().UnixNano())
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range recs {
		l.acked[id] = r
		l.ackOrder = append(l.ackOrder, id)
	}
}

// snapshot copies what was acknowledged so far.
func (l *load) snapshot() (map[string]*traceRec, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]*traceRec, len(l.acked))
	for k, v := range l.acked {
		out[k] = v
	}
	return out, append([]string(nil), l.ackOrder...)
}

func newSpanID() trace.SpanID {
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
