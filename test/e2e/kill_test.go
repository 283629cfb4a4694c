package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// TestKillNineLosesNothing kills the all-in-one collector with SIGKILL while
// several clients send spans, restarts it on the same data directory and
// keeps sending. Every span the receiver acknowledged, before or after the
// kill, is then read back through the store's read path exactly once. Spans
// whose request was not acknowledged may or may not be stored. The test
// looks only at what clients see, not at how the exporter queues.
func TestKillNineLosesNothing(t *testing.T) {
	ch := chtest.Config(t)
	a := startAllInOneOn(t, ch, http.StatusOK)
	endpoint := a.BaseURL + "/api/public/otel/v1/traces"
	auth := basic(a.PublicKey, a.SecretKey)

	var prefix [2]byte
	_, _ = rand.Read(prefix[:])
	l := &killLoad{spanPrefix: uint64(binary.BigEndian.Uint16(prefix[:])) << 48, sent: map[string]bool{}, acked: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !l.send(endpoint, auth) {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}

	// Kill once a few thousand spans were acknowledged, so that some are
	// still on their way to ClickHouse.
	waitFor(t, 30*time.Second, func() bool { return l.ackedCount() >= 3000 }, "3000 spans acknowledged before the kill")
	require.NoError(t, a.cmd.Process.Kill())
	<-a.done
	beforeKill := l.ackedCount()
	time.Sleep(500 * time.Millisecond)
	a.run(t, http.StatusOK)
	restarted := l.ackedCount()
	waitFor(t, 30*time.Second, func() bool { return l.ackedCount() >= restarted+2000 }, "2000 spans acknowledged after the restart")
	close(stop)
	wg.Wait()
	t.Logf("acknowledged %d spans before the kill, %d in all; %d sent", beforeKill, l.ackedCount(), len(l.sent))

	ctx := context.Background()
	store, err := chstore.Open(ctx, ch)
	require.NoError(t, err)
	defer store.Close()
	want := l.ackedCount()
	// Wait until the count reaches the acknowledged spans, or stops growing
	// for 30 s; the checks below then name what is missing.
	stored, grew := 0, time.Now()
	for deadline := time.Now().Add(3 * time.Minute); stored < want && time.Now().Before(deadline) && time.Since(grew) < 30*time.Second; {
		page, err := store.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj-e2e", Page: 1, Limit: 1})
		if err == nil && page.Total > stored {
			stored, grew = page.Total, time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Read every stored observation back, page after page.
	seen := map[string]int{}
	f := chstore.ObservationFilter{ProjectID: "proj-e2e", Limit: 5000}
	for {
		page, err := store.ListObservations(ctx, f)
		require.NoError(t, err)
		for _, o := range page.Observations {
			seen[o.TraceID+"/"+o.ID]++
		}
		if page.Next == nil {
			break
		}
		f.Cursor = page.Next
	}
	missing, repeated, unknown := 0, 0, 0
	for id := range l.acked {
		if seen[id] == 0 {
			missing++
		}
	}
	for id, n := range seen {
		if n > 1 {
			repeated++
		}
		if !l.sent[id] {
			unknown++
		}
	}
	require.Zero(t, missing, "of %d acknowledged spans, some are missing from reads", want)
	require.Zero(t, repeated, "spans read more than once")
	require.Zero(t, unknown, "stored spans that were never sent")
	require.GreaterOrEqual(t, len(seen), want)
	require.NotContains(t, a.log.String(), "panic", "the restarted collector panicked")
}

// killLoad sends batches of spans with ids unique across the test and
// remembers which were sent and which acknowledged.
type killLoad struct {
	spanPrefix uint64
	next       atomic.Uint64
	mu         sync.Mutex
	sent       map[string]bool
	acked      map[string]bool
}

func (l *killLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// send posts one batch of 40 spans (ten traces of four) and says whether it
// was acknowledged.
func (l *killLoad) send(endpoint, auth string) bool {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "kill-nine")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	var keys []string
	var traceID pcommon.TraceID
	var root pcommon.SpanID
	for i := 0; i < 40; i++ {
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], l.spanPrefix|l.next.Add(1))
		s := ss.Spans().AppendEmpty()
		if i%4 == 0 {
			_, _ = rand.Read(traceID[:])
			root = id
			s.SetName("agent-run")
		} else {
			s.SetParentSpanID(root)
			s.SetName("chat-completion")
			s.Attributes().PutStr("langfuse.observation.type", "generation")
			s.Attributes().PutStr("langfuse.observation.model.name", "gpt-4o-mini")
			s.Attributes().PutStr("langfuse.observation.usage_details", `{"input":120,"output":40}`)
		}
		s.SetTraceID(traceID)
		s.SetSpanID(id)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
		s.Attributes().PutStr("langfuse.observation.input", `{"step":"kill nine","n":`+id.String()+`}`)
		keys = append(keys, traceID.String()+"/"+id.String())
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return false
	}
	l.mu.Lock()
	for _, k := range keys {
		l.sent[k] = true
	}
	l.mu.Unlock()
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	l.mu.Lock()
	for _, k := range keys {
		l.acked[k] = true
	}
	l.mu.Unlock()
	return true
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %s: %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
