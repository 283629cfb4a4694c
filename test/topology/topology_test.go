package topology

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyBound is how soon a key created or revoked through an API server is
// honoured by every gateway: the control plane's change counters are polled
// every 5 s (extension/controlplaneextension/README.md); the margin covers
// the probe's own interval and a late tick on a busy 2-core machine.
const keyBound = 5*time.Second + time.Second

// figure is one line of the report.
type figure struct {
	phase                              string
	sent, acked, failed, stored, dups  int64
	outage, catchUp, recover, duration time.Duration
}

// TestTopology runs the scale-out deployment under load through nginx, and
// after a baseline and after each fault checks that every acknowledged span
// is stored once, on one shard, and that both API servers answer the same
// complete reads.
func TestTopology(t *testing.T) {
	tp := startTopology(t)
	t.Logf("topology ready in %.1fs: nginx %s, API servers %v", tp.startupSeconds, tp.baseURL, tp.apiURLs)
	testStart := time.Now()
	l := newLoad(t, tp)
	var report []figure
	var scoreIDs []string
	phaseLoad := durationEnv(t, "GLASSBOX_TOPOLOGY_PHASE", 10*time.Second)
	replicaDown := durationEnv(t, "GLASSBOX_TOPOLOGY_REPLICA_DOWN", 60*time.Second)

	// phase runs the load for a while with fault in its middle, stops it, and
	// checks. fault returns the time it took the topology to serve again.
	phase := func(name string, fault func() time.Duration, readers []string) {
		before, _ := l.snapshot()
		sent0, failed0 := l.sent.Load(), l.failed.Load()
		begin := time.Now()
		l.start()
		time.Sleep(phaseLoad / 2)
		var recover time.Duration
		if fault != nil {
			recover = fault()
		}
		time.Sleep(phaseLoad / 2)
		l.halt()
		outage := time.Duration(l.maxGap.Load())
		acked, order := l.snapshot()
		var fresh []string
		for _, id := range order {
			if _, old := before[id]; !old {
				fresh = append(fresh, id)
			}
		}
		require.NotEmpty(t, fresh, "%s: nothing acknowledged", name)
		st, catchUp := tp.waitStored(t, acked)

		// Scores written through nginx; the reads of both servers must agree.
		sample := []string{fresh[0], fresh[len(fresh)/2], fresh[len(fresh)-1]}
		for i, tid := range sample {
			id := fmt.Sprintf("score-%s-%d", strings.ReplaceAll(name, " ", "-"), i)
			tp.createScore(t, id, tid)
			scoreIDs = append(scoreIDs, id)
		}
		sort.Strings(scoreIDs)
		tp.checkReads(t, readers, acked, sample, st, scoreIDs, testStart)

		ackedSpans := int64(len(acked) * spansPerTrace)
		report = append(report, figure{phase: name, sent: l.sent.Load() - sent0, acked: int64(len(fresh) * spansPerTrace),
			failed: l.failed.Load() - failed0, stored: int64(st.spans), dups: int64(st.rawDups),
			outage: outage, catchUp: catchUp, recover: recover, duration: time.Since(begin)})
		t.Logf("%s: stored %d spans (shards %v) of %d acknowledged in total, %d traces, %d rows collapsed on read",
			name, st.spans, st.perShard, ackedSpans, st.traces, st.rawDups)
	}
	both := append([]string{tp.baseURL}, tp.apiURLs...)

	phase("baseline", nil, both)
	tp.checkKeys(t)

	phase("writer kill -9", func() time.Duration {
		tp.writers[0].signal(t, syscall.SIGKILL, 10*time.Second)
		time.Sleep(2 * time.Second)
		return tp.writers[0].start(t)
	}, both)

	phase("gateway kill -9", func() time.Duration {
		tp.gateways[0].signal(t, syscall.SIGKILL, 10*time.Second)
		time.Sleep(2 * time.Second)
		return tp.gateways[0].start(t)
	}, both)

	// One API server dies: nginx and the other server go on serving; checked
	// with it down, then restarted.
	phase("API server kill -9", func() time.Duration {
		tp.apis[0].signal(t, syscall.SIGKILL, 10*time.Second)
		return 0
	}, []string{tp.baseURL, tp.apiURLs[1]})
	recovered := tp.apis[0].start(t)
	report[len(report)-1].recover = recovered
	tp.checkKeys(t)

	phase(fmt.Sprintf("ClickHouse replica down %s", replicaDown), func() time.Duration {
		// A shutdown that hangs (18.16 sometimes waits on the connections
		// other nodes hold) ends as a crash after 10 s; either is an outage
		// of the replica.
		tp.ch[1].signal(t, syscall.SIGTERM, 10*time.Second)
		time.Sleep(replicaDown)
		return tp.ch[1].start(t)
	}, both)

	phase("ZooKeeper restart", func() time.Duration {
		begin := time.Now()
		tp.zk.signal(t, syscall.SIGTERM, 10*time.Second)
		time.Sleep(2 * time.Second)
		tp.zk.start(t)
		return time.Since(begin)
	}, both)

	// The API servers' metrics rollup job ran on the cluster without an error.
	for _, a := range tp.apis {
		log, err := os.ReadFile(a.log)
		require.NoError(t, err)
		assert.NotContains(t, string(log), "rollups failed", "%s: the metrics rollup job failed", a.name)
	}

	// The figures, whatever the assertions said.
	var total figure
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-36s %8s %8s %8s %8s %6s %9s %9s %9s\n", "phase", "sent", "acked", "failed", "stored", "dups", "ack gap", "stored in", "restart")
	for _, f := range report {
		fmt.Fprintf(&b, "%-36s %8d %8d %8d %8d %6d %8.1fs %8.1fs %8.1fs\n", f.phase, f.sent, f.acked, f.failed, f.stored, f.dups,
			f.outage.Seconds(), f.catchUp.Seconds(), f.recover.Seconds())
		total.sent += f.sent
		total.acked += f.acked
		total.failed += f.failed
	}
	last := report[len(report)-1]
	fmt.Fprintf(&b, "%-36s %8d %8d %8d %8d %6d\n", "total", total.sent, total.acked, total.failed, last.stored, last.dups)
	b.WriteString("sent/acked/failed: spans in requests (first tries; the exporter's retries not counted again); stored: distinct spans on the shards;\n" +
		"dups: extra rows of a span (retried batches) that ReplacingMergeTree collapses on read; ack gap: longest time without an acknowledgement;\n" +
		"stored in: from the end of the load until every acknowledged span was on both replicas; restart: time until the restarted process was ready\n")
	t.Log(b.String())
}

// checkKeys creates a project key through one API server and revokes it
// through the other, and measures how soon each gateway honours it.
func (tp *topology) checkKeys(t *testing.T) {
	t.Helper()
	org := basic(orgPublic, orgSecret)
	code, b := tp.api(t, http.MethodPost, tp.apiURLs[0], "/api/public/projects/"+projectID+"/apiKeys", org, strings.NewReader(`{"note":"topology"}`))
	require.Equal(t, http.StatusCreated, code, "%s", b)
	var key struct {
		ID, PublicKey, SecretKey string
	}
	require.NoError(t, json.Unmarshal(b, &key))
	accepted := tp.waitGateways(t, basic(key.PublicKey, key.SecretKey), true)
	t.Logf("key created through %s: accepted by both gateways after %s", tp.apiURLs[0], accepted.Round(time.Millisecond))
	assert.LessOrEqual(t, accepted, keyBound, "new key accepted within the bound")

	code, b = tp.api(t, http.MethodDelete, tp.apiURLs[1], "/api/public/projects/"+projectID+"/apiKeys/"+key.ID, org, nil)
	require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, code, "%s", b)
	refused := tp.waitGateways(t, basic(key.PublicKey, key.SecretKey), false)
	t.Logf("key revoked through %s: refused by both gateways after %s", tp.apiURLs[1], refused.Round(time.Millisecond))
	assert.LessOrEqual(t, refused, keyBound, "revoked key refused within the bound")
}

// waitGateways probes both gateways directly until each accepts (or
// refuses) auth, and returns how long that took.
func (tp *topology) waitGateways(t *testing.T, auth string, accept bool) time.Duration {
	t.Helper()
	begin := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, g := range tp.gatewayAddrs {
		for {
			req, err := http.NewRequest(http.MethodPost, "http://"+g+"/api/public/otel/v1/traces", strings.NewReader(""))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-protobuf")
			req.Header.Set("Authorization", auth)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if ok := resp.StatusCode != http.StatusUnauthorized; ok == accept {
					break
				}
			}
			if time.Since(begin) > 2*keyBound {
				t.Fatalf("gateway %s: key not %s after %s", g, map[bool]string{true: "accepted", false: "refused"}[accept], 2*keyBound)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return time.Since(begin)
}

func durationEnv(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, name)
	return d
}
