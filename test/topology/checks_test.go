package topology

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stored is what the shards hold for the project, read from each node's
// local table.
type stored struct {
	spans      int // distinct spans over both shards
	traces     int
	rawDups    int // rows beyond the first of a span on a shard (ReplacingMergeTree collapses them on read)
	finalRows  int // rows after FINAL, summed over one replica per shard
	perShard   []int
	splitTrace []string
	spanTrace  map[string]string // span id -> trace id
}

// nodeRows reads trace id, span id and row count from one node's local table.
func nodeRows(ctx context.Context, addr string) (map[[2]string]int, int, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native,
		DialTimeout: 2 * time.Second, ReadTimeout: 30 * time.Second})
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT trace_id, id, count() FROM %s.observations_local WHERE project_id = '%s' GROUP BY trace_id, id", database, projectID))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := map[[2]string]int{}
	for rows.Next() {
		var tid, id string
		var n uint64
		if err := rows.Scan(&tid, &id, &n); err != nil {
			return nil, 0, err
		}
		out[[2]string{tid, id}] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	var final uint64
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM %s.observations_local FINAL WHERE project_id = '%s'", database, projectID)).Scan(&final); err != nil {
		return nil, 0, err
	}
	return out, int(final), nil
}

// waitStored waits until both replicas of each shard hold the same spans and
// every acknowledged span is among them, then checks that no trace is on
// two shards and that reads see each span once.
func (tp *topology) waitStored(t *testing.T, acked map[string]*traceRec) (stored, time.Duration) {
	t.Helper()
	begin := time.Now()
	ctx := context.Background()
	var why string
	lastLog := time.Now()
	for time.Since(begin) < 4*time.Minute {
		if why != "" && time.Since(lastLog) > 15*time.Second {
			t.Logf("waiting %s for the stored data: %s", time.Since(begin).Round(time.Second), why)
			lastLog = time.Now()
		}
		// A cheap count first: while a replica catches up, the full read of
		// every node would only slow it down.
		if why = replicasDiffer(ctx, tp.ch); why != "" {
			time.Sleep(time.Second)
			continue
		}
		var nodes []map[[2]string]int
		var finals []int
		why = ""
		for _, n := range tp.ch {
			rows, final, err := nodeRows(ctx, n.addr())
			if err != nil {
				why = fmt.Sprintf("%s: %v", n.name, err)
				break
			}
			nodes, finals = append(nodes, rows), append(finals, final)
		}
		if why == "" {
			for s := 0; s < len(nodes); s += 2 {
				if !sameKeys(nodes[s], nodes[s+1]) {
					why = fmt.Sprintf("replicas of shard %d differ: %d and %d spans", s/2+1, len(nodes[s]), len(nodes[s+1]))
				}
			}
		}
		if why == "" {
			st := stored{spanTrace: map[string]string{}}
			shardOf := map[string]int{}
			split := map[string]bool{}
			for s := 0; s < len(nodes); s += 2 {
				st.finalRows += finals[s]
				st.perShard = append(st.perShard, len(nodes[s]))
				for k, n := range nodes[s] {
					st.spanTrace[k[1]] = k[0]
					st.rawDups += n - 1
					if prev, ok := shardOf[k[0]]; ok && prev != s {
						split[k[0]] = true
					}
					shardOf[k[0]] = s
				}
			}
			st.spans, st.traces = len(st.spanTrace), len(shardOf)
			for id := range split {
				st.splitTrace = append(st.splitTrace, id)
			}
			missing := 0
			for tid, r := range acked {
				for _, sid := range r.spans {
					if st.spanTrace[sid] != tid {
						missing++
					}
				}
			}
			if missing == 0 {
				assert.Empty(t, st.splitTrace, "traces with spans on both shards")
				for i, n := range st.perShard {
					assert.Positive(t, n, "shard %d holds spans", i+1)
				}
				assert.Equal(t, st.spans, st.finalRows, "FINAL reads see every span once")
				return st, time.Since(begin)
			}
			why = fmt.Sprintf("%d acknowledged spans not stored yet", missing)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("stored data did not converge within 4 minutes: %s", why)
	return stored{}, 0
}

// replicasDiffer says why the two replicas of a shard differ in the spans
// they hold, or "" when each pair agrees. It counts distinct spans, not
// rows: after a ZooKeeper restart, 18.16 can keep a part whose commit lost
// its session on one replica only, while the writer's retry stores the same
// rows on both, so the replicas agree on the spans but not on the rows.
func replicasDiffer(ctx context.Context, nodes []*chNode) string {
	counts := make([]uint64, len(nodes))
	for i, n := range nodes {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{n.addr()}, Protocol: clickhouse.Native,
			DialTimeout: 2 * time.Second, ReadTimeout: 30 * time.Second})
		if err != nil {
			return fmt.Sprintf("%s: %v", n.name, err)
		}
		err = conn.QueryRow(ctx, fmt.Sprintf("SELECT uniqExact(trace_id, id) FROM %s.observations_local WHERE project_id = '%s'", database, projectID)).Scan(&counts[i])
		conn.Close()
		if err != nil {
			return fmt.Sprintf("%s: %v", n.name, err)
		}
	}
	for s := 0; s < len(nodes); s += 2 {
		if counts[s] != counts[s+1] {
			return fmt.Sprintf("replicas of shard %d hold %d and %d spans", s/2+1, counts[s], counts[s+1])
		}
	}
	return ""
}

func sameKeys(a, b map[[2]string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// api calls one API server (or nginx) with the project key.
func (tp *topology) api(t *testing.T, method, base, path, auth string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := tp.client().Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (tp *topology) getJSON(t *testing.T, base, path string, out any) error {
	t.Helper()
	code, b := tp.api(t, http.MethodGet, base, path, basic(publicKey, secretKey), nil)
	if code != http.StatusOK {
		return fmt.Errorf("GET %s%s: %d %s", base, path, code, b)
	}
	return json.Unmarshal(b, out)
}

// readView is what one API server answers for the checked traces, sessions,
// scores and metrics; the servers' views must be equal and complete.
type readView struct {
	Traces   map[string][]string // trace id -> observation ids, sorted
	Sessions map[string][]string // session id -> trace ids, sorted
	Scores   []string
	Traces_  string
	Obs      string
}

func (tp *topology) readFrom(t *testing.T, base string, sample []string, acked map[string]*traceRec, from time.Time) (readView, error) {
	t.Helper()
	v := readView{Traces: map[string][]string{}, Sessions: map[string][]string{}}
	for _, tid := range sample {
		var tr struct {
			Input struct {
				Q string `json:"q"`
			} `json:"input"`
			Observations []struct {
				ID string `json:"id"`
			} `json:"observations"`
		}
		if err := tp.getJSON(t, base, "/api/public/traces/"+tid, &tr); err != nil {
			return v, err
		}
		if len(tr.Observations) > 0 && tr.Input.Q != "hello" {
			return v, fmt.Errorf("trace %s: input %q, want the root span's input", tid, tr.Input.Q)
		}
		var ids []string
		for _, o := range tr.Observations {
			ids = append(ids, o.ID)
		}
		sort.Strings(ids)
		v.Traces[tid] = ids
		sid := acked[tid].session
		if _, done := v.Sessions[sid]; done {
			continue
		}
		var sess struct {
			Traces []struct {
				ID string `json:"id"`
			} `json:"traces"`
		}
		if err := tp.getJSON(t, base, "/api/public/sessions/"+url.PathEscape(sid), &sess); err != nil {
			return v, err
		}
		var tids []string
		for _, x := range sess.Traces {
			tids = append(tids, x.ID)
		}
		sort.Strings(tids)
		v.Sessions[sid] = tids
	}
	var scores struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := tp.getJSON(t, base, "/api/public/v2/scores?name=topology&limit=100", &scores); err != nil {
		return v, err
	}
	for _, s := range scores.Data {
		v.Scores = append(v.Scores, s.ID)
	}
	sort.Strings(v.Scores)
	count := func(view string) (string, error) {
		q, _ := json.Marshal(map[string]any{"view": view, "metrics": []any{map[string]any{"measure": "count", "aggregation": "count"}},
			"fromTimestamp": from.Add(-time.Hour).UTC().Format(time.RFC3339), "toTimestamp": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		var m struct {
			Data []map[string]any `json:"data"`
		}
		if err := tp.getJSON(t, base, "/api/public/metrics?query="+url.QueryEscape(string(q)), &m); err != nil {
			return "", err
		}
		if len(m.Data) != 1 {
			return "", fmt.Errorf("metrics: %d rows", len(m.Data))
		}
		return fmt.Sprint(m.Data[0]["count_count"]), nil
	}
	var err error
	if v.Traces_, err = count("traces"); err != nil {
		return v, err
	}
	v.Obs, err = count("observations")
	return v, err
}

// checkReads compares what every listed API server returns with what was
// acknowledged and stored: each sampled trace complete and without
// duplicates, sessions, scores and metrics equal on all servers.
func (tp *topology) checkReads(t *testing.T, bases []string, acked map[string]*traceRec, sample []string, st stored, scoreIDs []string, from time.Time) {
	t.Helper()
	var last []readView
	var lastErr error
	ok := assert.Eventually(t, func() bool {
		last, lastErr = nil, nil
		for _, b := range bases {
			v, err := tp.readFrom(t, b, sample, acked, from)
			if err != nil {
				lastErr = err
				return false
			}
			last = append(last, v)
		}
		for _, v := range last {
			for _, tid := range sample {
				want := slices.Clone(acked[tid].spans)
				sort.Strings(want)
				if !slices.Equal(v.Traces[tid], want) {
					lastErr = fmt.Errorf("trace %s: %d observations, want %d", tid, len(v.Traces[tid]), len(want))
					return false
				}
				if !slices.Contains(v.Sessions[acked[tid].session], tid) {
					lastErr = fmt.Errorf("session %s lacks trace %s", acked[tid].session, tid)
					return false
				}
			}
			if !slices.Equal(v.Scores, scoreIDs) {
				lastErr = fmt.Errorf("scores %v, want %v", v.Scores, scoreIDs)
				return false
			}
			if v.Traces_ != fmt.Sprint(st.traces) || v.Obs != fmt.Sprint(st.spans) {
				lastErr = fmt.Errorf("metrics: %s traces, %s observations; stored %d and %d", v.Traces_, v.Obs, st.traces, st.spans)
				return false
			}
		}
		for _, v := range last[1:] {
			if fmt.Sprint(v) != fmt.Sprint(last[0]) {
				lastErr = fmt.Errorf("API servers differ")
				return false
			}
		}
		return true
	}, 60*time.Second, time.Second)
	if !ok {
		t.Errorf("reads through %s: %v", strings.Join(bases, ", "), lastErr)
	}
}

// createScore writes a score through nginx for a trace.
func (tp *topology) createScore(t *testing.T, id, traceID string) {
	t.Helper()
	body := fmt.Sprintf(`{"id":%q,"traceId":%q,"name":"topology","value":1}`, id, traceID)
	require.Eventually(t, func() bool {
		code, b := tp.api(t, http.MethodPost, tp.baseURL, "/api/public/scores", basic(publicKey, secretKey), strings.NewReader(body))
		if code != http.StatusOK {
			t.Logf("create score: %d %s", code, b)
		}
		return code == http.StatusOK
	}, 30*time.Second, 500*time.Millisecond)
}
