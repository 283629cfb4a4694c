// Command loadgen drives OTLP/HTTP protobuf load at a Glassbox (or any OTLP)
// endpoint and reports throughput and acknowledgement latency as JSON.
//
//	loadgen -url http://127.0.0.1:3000/api/public/otel/v1/traces -user pk -pass sk \
//	        -mix agent -duration 30s -workers 8 -batch 200
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

type result struct {
	Mix            string  `json:"mix"`
	Requests       int64   `json:"requests"`
	Failed         int64   `json:"failed"`
	Spans          int64   `json:"spans"`
	BytesPerSpan   int     `json:"bytes_per_span"`
	Seconds        float64 `json:"seconds"`
	SpansPerSecond float64 `json:"spans_per_second"`
	AckP50Millis   float64 `json:"ack_p50_ms"`
	AckP99Millis   float64 `json:"ack_p99_ms"`
	// Stored* are set with -clickhouse-dsn: how long until every acknowledged
	// span was readable, counted from the first request.
	StoredSpans          int     `json:"stored_spans,omitempty"`
	StoredSeconds        float64 `json:"stored_seconds,omitempty"`
	StoredSpansPerSecond float64 `json:"stored_spans_per_second,omitempty"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:3000/api/public/otel/v1/traces", "OTLP/HTTP traces URL")
	user := flag.String("user", "", "basic auth user (public key)")
	pass := flag.String("pass", "", "basic auth password (secret key)")
	mix := flag.String("mix", "agent", "span mix: agent (~1.4 KB/span) or generation (~6 KB/span)")
	duration := flag.Duration("duration", 20*time.Second, "how long to send")
	workers := flag.Int("workers", 8, "concurrent senders")
	batch := flag.Int("batch", 200, "spans per request")
	chDSN := flag.String("clickhouse-dsn", "", "when set, wait until every acknowledged span is stored in this ClickHouse")
	chDatabase := flag.String("clickhouse-database", "glassbox", "database the collector writes to")
	project := flag.String("project", "", "project id the key belongs to (with -clickhouse-dsn)")
	storeTimeout := flag.Duration("store-timeout", 5*time.Minute, "how long to wait for the spans to be stored")
	flag.Parse()

	if *mix != "agent" && *mix != "generation" {
		fmt.Fprintln(os.Stderr, "unknown -mix", *mix)
		os.Exit(2)
	}
	start := time.Now()
	res, err := run(*url, *user, *pass, *mix, *duration, *workers, *batch)
	if err == nil && *chDSN != "" {
		err = waitStored(&res, start, chstore.Config{DSN: *chDSN, Database: *chDatabase, QueryTimeout: time.Minute}, *project, *storeTimeout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func run(url, user, pass, mix string, duration time.Duration, workers, batch int) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}

	var requests, failed, spans atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	var bodyBytes atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for ctx.Err() == nil {
				body, n := buildRequest(mix, batch)
				bodyBytes.Add(int64(len(body)))
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				if user != "" {
					req.SetBasicAuth(user, pass)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				requests.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				local = append(local, time.Since(t0))
				spans.Add(int64(n))
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	slices.Sort(latencies)
	res := result{
		Mix: mix, Requests: requests.Load(), Failed: failed.Load(), Spans: spans.Load(),
		Seconds: elapsed, SpansPerSecond: float64(spans.Load()) / elapsed,
		AckP50Millis: quantileMillis(latencies, 0.50), AckP99Millis: quantileMillis(latencies, 0.99),
	}
	if sent := requests.Load() * int64(batch); sent > 0 {
		res.BytesPerSpan = int(bodyBytes.Load() / sent)
	}
	return res, nil
}

// waitStored polls the store until it holds every acknowledged span.
func waitStored(res *result, start time.Time, cfg chstore.Config, project string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	store, err := chstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	stored := 0
	var lastErr error
	for {
		page, err := store.ListObservations(ctx, chstore.ObservationFilter{ProjectID: project, Page: 1, Limit: 1})
		if err == nil {
			stored = page.Total
		}
		lastErr = err
		if err == nil && int64(stored) >= res.Spans {
			res.StoredSpans = stored
			res.StoredSeconds = time.Since(start).Seconds()
			res.StoredSpansPerSecond = float64(stored) / res.StoredSeconds
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d spans stored after %s (last read error: %w)", stored, res.Spans, timeout, lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func quantileMillis(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}

// buildRequest returns one protobuf export of n spans in traces of four.
// The agent mix is an agent run (~1.4 KB a span on the wire): a root agent
// span, a generation, a tool call and a nested span. The generation mix is
// four LLM calls a trace, each with ~6 KB of chat input and output.
func buildRequest(mix string, n int) ([]byte, int) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "loadgen")
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("langfuse-sdk")
	ss.Scope().SetVersion("5.11.1")
	now := time.Now()
	var traceID pcommon.TraceID
	var rootID pcommon.SpanID
	for i := 0; i < n; i++ {
		s := ss.Spans().AppendEmpty()
		if i%4 == 0 {
			_, _ = rand.Read(traceID[:])
		}
		var id pcommon.SpanID
		_, _ = rand.Read(id[:])
		s.SetTraceID(traceID)
		s.SetSpanID(id)
		if i%4 == 0 {
			rootID = id
		} else {
			s.SetParentSpanID(rootID)
		}
		start := now.Add(time.Duration(i) * time.Millisecond)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(120 * time.Millisecond)))
		a := s.Attributes()
		a.PutStr("user.id", fmt.Sprintf("user-%d", i%50))
		a.PutStr("session.id", fmt.Sprintf("session-%d", i%200))
		a.PutStr("langfuse.environment", "production")
		a.PutStr("langfuse.trace.name", "support-agent")
		tags := a.PutEmptySlice("langfuse.trace.tags")
		tags.AppendEmpty().SetStr("bench")
		tags.AppendEmpty().SetStr(mix)
		a.PutStr("langfuse.trace.metadata.tenant", "acme")
		if mix == "generation" {
			s.SetName("chat-completion")
			putGeneration(a, 2900)
			continue
		}
		switch i % 4 {
		case 0:
			s.SetName("agent-run")
			a.PutStr("langfuse.observation.type", "agent")
			a.PutStr("langfuse.observation.input", jsonText(map[string]string{"question": text(420)}))
			a.PutStr("langfuse.observation.output", jsonText(map[string]string{"answer": text(420)}))
		case 1:
			s.SetName("chat-completion")
			putGeneration(a, 330)
		case 2:
			s.SetName("kb-search")
			a.PutStr("langfuse.observation.type", "tool")
			a.PutStr("langfuse.observation.input", jsonText(map[string]string{"query": text(300)}))
			a.PutStr("langfuse.observation.output", jsonText(map[string][]string{"hits": {text(200), text(200), text(200)}}))
		case 3:
			s.SetName("rerank")
			a.PutStr("langfuse.observation.metadata.reranker", "bm25")
			a.PutStr("langfuse.observation.input", jsonText(map[string]string{"candidates": text(500)}))
			a.PutStr("langfuse.observation.output", jsonText(map[string]string{"order": text(200)}))
		}
	}
	body, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	return body, n
}

// putGeneration sets the attributes of an LLM call whose input and output
// each carry about ioBytes of text.
func putGeneration(a pcommon.Map, ioBytes int) {
	a.PutStr("langfuse.observation.type", "generation")
	a.PutStr("langfuse.observation.model.name", "gpt-4o-mini")
	a.PutStr("langfuse.observation.model.parameters", `{"temperature":0.2,"max_tokens":512}`)
	a.PutStr("langfuse.observation.usage_details", `{"input":812,"output":96,"total":908}`)
	a.PutStr("langfuse.observation.prompt.name", "support/answer")
	a.PutInt("langfuse.observation.prompt.version", 3)
	a.PutStr("langfuse.observation.input", jsonText([]map[string]string{
		{"role": "system", "content": "You are a helpful support agent. " + text(ioBytes-80)},
		{"role": "user", "content": "How do I reset my password?"},
	}))
	a.PutStr("langfuse.observation.output", jsonText(map[string]string{"role": "assistant", "content": text(ioBytes)}))
}

const prose = "The customer asked about account recovery, billing cycles and the expired reset link. "

// text returns n bytes of prose.
func text(n int) string {
	return strings.Repeat(prose, n/len(prose)+1)[:n]
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
