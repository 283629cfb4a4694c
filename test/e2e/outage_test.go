package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// outage is how long ClickHouse stays down while the load goes on.
const outage = 60 * time.Second

// TestClickHouseOutageLosesNothing stops ClickHouse for a minute under load and
// starts it again: every span the receiver acknowledged is stored, and reads
// show each exactly once even though the queue retried inserts.
func TestClickHouseOutageLosesNothing(t *testing.T) {
	script := requireEnv(t, "GLASSBOX_CLICKHOUSE_SCRIPT")
	dir := filepath.Join(t.TempDir(), "clickhouse")
	tcp, httpPort := freeport.Port(t), freeport.Port(t)
	chctl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(script, args...).CombinedOutput()
		require.NoError(t, err, "%s %v: %s", script, args, out)
	}
	chctl("start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort))
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })
	dsn := fmt.Sprintf("clickhouse://127.0.0.1:%d", tcp)

	ctx := context.Background()
	store, err := chstore.Open(ctx, chstore.Config{DSN: dsn, Database: "outage", QueryTimeout: 10 * time.Second})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.Migrate(ctx))

	c := startCollector(t, dsn, "outage", t.TempDir())
	endpoint := c.BaseURL + "/api/public/otel/v1/traces"

	var accepted, refused atomic.Int64
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				body, n := spanBatch(50)
				req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Authorization", projectA.basicAuth())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					refused.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					accepted.Add(int64(n))
				} else {
					refused.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	time.Sleep(3 * time.Second)
	chctl("stop", dir)
	down := accepted.Load()
	time.Sleep(outage)
	duringOutage := accepted.Load() - down
	chctl("start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort))
	time.Sleep(5 * time.Second)
	close(stopLoad)
	wg.Wait()
	require.Positive(t, duringOutage, "the receiver keeps accepting while ClickHouse is down")
	want := int(accepted.Load())
	t.Logf("accepted %d spans (%d during the outage), %d requests refused", want, duringOutage, refused.Load())

	deadline := time.Now().Add(3 * time.Minute)
	var got int
	for time.Now().Before(deadline) {
		page, err := store.ListObservations(ctx, chstore.ObservationFilter{ProjectID: projectA.ID, Page: 1, Limit: 1})
		if err == nil {
			got = page.Total
			if got >= want {
				break
			}
		}
		time.Sleep(time.Second)
	}
	require.Equal(t, want, got, "every acknowledged span is stored exactly once")
	if strings.Contains(c.log.String(), "panic") {
		t.Fatalf("collector panicked:\n%s", c.log.String())
	}
}

// spanBatch is one protobuf export of n spans with fresh ids.
func spanBatch(n int) ([]byte, int) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "outage")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	var traceID pcommon.TraceID
	_, _ = rand.Read(traceID[:])
	for i := 0; i < n; i++ {
		s := ss.Spans().AppendEmpty()
		var id pcommon.SpanID
		_, _ = rand.Read(id[:])
		s.SetTraceID(traceID)
		s.SetSpanID(id)
		s.SetName("work")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
		s.Attributes().PutStr("langfuse.observation.input", `{"step":"outage"}`)
	}
	body, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	return body, n
}
