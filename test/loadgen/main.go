// Command loadgen drives OTLP/HTTP protobuf load at a Glassbox (or any OTLP)
// endpoint and reports throughput and acknowledgement latency as JSON.
//
//	loadgen -url http://127.0.0.1:3000/api/public/otel/v1/traces -user pk -pass sk \
//	        -mix agent -duration 30s -workers 8 -batch 200
//
// It costs little per span, so that it does not take the CPU it measures: at
// start it encodes a pool of distinct requests whose text has English-like
// statistics, and each send copies one and writes fresh trace and span ids
// into it (every id of a run is distinct, so stored counts are exact).
// With -collector-pid and -clickhouse-pid it reports the CPU those processes
// used from the first request until every acknowledged span was stored (and,
// for ClickHouse, until its merges settled).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

type result struct {
	Mix            string  `json:"mix"`
	Requests       int64   `json:"requests"`
	Failed         int64   `json:"failed"`
	Spans          int64   `json:"spans"`
	BytesPerSpan   int     `json:"bytes_per_span"`
	PoolRequests   int     `json:"pool_requests"`
	TextGzipRatio  float64 `json:"text_gzip_ratio"`
	RateTarget     float64 `json:"rate_target,omitempty"`
	Seconds        float64 `json:"seconds"`
	SpansPerSecond float64 `json:"spans_per_second"`
	AckP50Millis   float64 `json:"ack_p50_ms"`
	AckP99Millis   float64 `json:"ack_p99_ms"`
	// LoadgenCPUMicrosPerSpan is this process's own CPU while sending, per
	// acknowledged span.
	LoadgenCPUMicrosPerSpan float64 `json:"loadgen_cpu_us_per_span"`
	// Stored* are set with -clickhouse-dsn: how long until every acknowledged
	// span was readable, counted from the first request.
	StoredSpans          int     `json:"stored_spans,omitempty"`
	StoredSeconds        float64 `json:"stored_seconds,omitempty"`
	StoredSpansPerSecond float64 `json:"stored_spans_per_second,omitempty"`
	// CPU seconds of the watched processes from the first request until every
	// span was stored (until the last acknowledgement without -clickhouse-dsn);
	// ClickHouseCPUMergedSeconds runs on until no merge was left.
	CollectorCPUSeconds        float64 `json:"collector_cpu_s,omitempty"`
	ClickHouseCPUSeconds       float64 `json:"clickhouse_cpu_s,omitempty"`
	ClickHouseCPUMergedSeconds float64 `json:"clickhouse_cpu_merged_s,omitempty"`
	MergesSettledSeconds       float64 `json:"merges_settled_seconds,omitempty"`
	// Error says why the run failed; the figures above are then partial.
	Error string `json:"error,omitempty"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:3000/api/public/otel/v1/traces", "OTLP/HTTP traces URL")
	user := flag.String("user", "", "basic auth user (public key)")
	pass := flag.String("pass", "", "basic auth password (secret key)")
	mix := flag.String("mix", "agent", "span mix: agent (~1.3 KB/span) or generation (~6.8 KB/span)")
	duration := flag.Duration("duration", 20*time.Second, "how long to send")
	workers := flag.Int("workers", 8, "concurrent senders")
	batch := flag.Int("batch", 200, "spans per request")
	rate := flag.Float64("rate", 0, "target spans/s across all workers (0: as fast as acknowledged)")
	poolBytes := flag.Int("pool-mib", 48, "MiB of distinct pre-encoded requests to cycle through")
	seed := flag.Uint64("seed", 1, "seed of the text generator")
	chDSN := flag.String("clickhouse-dsn", "", "when set, wait until every acknowledged span is stored in this ClickHouse")
	chDatabase := flag.String("clickhouse-database", "glassbox", "database the collector writes to")
	project := flag.String("project", "", "project id the key belongs to (with -clickhouse-dsn)")
	storeTimeout := flag.Duration("store-timeout", 5*time.Minute, "how long to wait for the spans to be stored")
	collectorPID := flag.Int("collector-pid", 0, "report this process's CPU time over the run")
	clickhousePID := flag.Int("clickhouse-pid", 0, "report this process's CPU time over the run, merges included (with -clickhouse-dsn)")
	readyFile := flag.String("ready-file", "", "created when the requests are built and sending starts")
	flag.Parse()

	if *mix != "agent" && *mix != "generation" {
		fmt.Fprintln(os.Stderr, "unknown -mix", *mix)
		os.Exit(2)
	}
	if *batch < 1 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "-batch and -workers must be positive")
		os.Exit(2)
	}
	// SIGTERM or Ctrl-C ends the sending early; the run is then measured
	// and waited for as if its duration had passed.
	sig, stopSig := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stopSig()
	pool, ratio, err := buildPool(*mix, *batch, *poolBytes<<20, *seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build requests:", err)
		os.Exit(1)
	}
	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	w := watch{collector: *collectorPID, clickhouse: *clickhousePID}
	res, start, err := run(sig, pool, *url, *user, *pass, *duration, *workers, *rate, &w)
	res.Mix, res.PoolRequests, res.TextGzipRatio, res.RateTarget = *mix, len(pool), ratio, *rate
	if err == nil && *chDSN != "" {
		err = waitStored(&res, start, *chDSN, *chDatabase, *project, *storeTimeout)
	}
	if err == nil {
		err = w.stored(&res)
	}
	if err == nil && *chDSN != "" && w.clickhouse != 0 {
		err = w.merged(&res, start, *chDSN)
	}
	if err != nil {
		res.Error = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// buildPool encodes about poolBytes of distinct requests (4 to 256 of them)
// and measures how well their input and output strings compress.
func buildPool(mix string, batch, poolBytes int, seed uint64) ([]request, float64, error) {
	g := newTextGen(seed, 30000)
	now := time.Now()
	var pool []request
	var texts []string
	textBytes, total := 0, 0
	for len(pool) < 256 && (len(pool) < 4 || total < poolBytes) {
		req, err := buildRequest(g, mix, batch, now)
		if err != nil {
			return nil, 0, err
		}
		total += len(req.body)
		// Gzip over a few MiB is enough to know the ratio.
		for _, t := range req.texts {
			if textBytes < 4<<20 {
				texts = append(texts, t)
				textBytes += len(t)
			}
		}
		req.texts = nil
		pool = append(pool, req)
	}
	return pool, gzipRatio(texts), nil
}

func run(parent context.Context, pool []request, url, user, pass string, duration time.Duration, workers int, rate float64, w *watch) (result, time.Time, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var x ids
	var prefix [10]byte
	_, _ = rand.Read(prefix[:])
	copy(x.tracePrefix[:], prefix[:8])
	x.spanPrefix = uint64(binary.BigEndian.Uint16(prefix[8:])) << 48

	batch := pool[0].spans
	// With a rate, request k leaves at start + k*interval (open loop).
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(batch) / rate * float64(time.Second))
	}
	var seq, requests, failed, spans, bodyBytes atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	cpu0, err := procCPU(os.Getpid())
	if err != nil {
		return result{}, time.Time{}, err
	}
	if err := w.begin(); err != nil {
		return result{}, time.Time{}, err
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(parent, start.Add(duration))
	defer cancel()
	maxLen := 0
	for _, r := range pool {
		maxLen = max(maxLen, len(r.body))
	}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, maxLen)
			var local []time.Duration
			for ctx.Err() == nil {
				k := seq.Add(1) - 1
				if interval > 0 {
					if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
						select {
						case <-ctx.Done():
							continue
						case <-time.After(d):
						}
					}
				}
				req := &pool[int(k)%len(pool)]
				body := buf[:len(req.body)]
				copy(body, req.body)
				x.stamp(body, req, uint64(k))
				bodyBytes.Add(int64(len(body)))
				t0 := time.Now()
				ok, retryLater := send(client, url, user, pass, body)
				requests.Add(1)
				if !ok {
					failed.Add(1)
					if retryLater {
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				local = append(local, time.Since(t0))
				spans.Add(int64(req.spans))
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	cpu1, err := procCPU(os.Getpid())
	if err != nil {
		return result{}, start, err
	}
	if err := w.end(); err != nil {
		return result{}, start, err
	}
	slices.Sort(latencies)
	res := result{
		Requests: requests.Load(), Failed: failed.Load(), Spans: spans.Load(),
		Seconds: elapsed, SpansPerSecond: float64(spans.Load()) / elapsed,
		AckP50Millis: quantileMillis(latencies, 0.50), AckP99Millis: quantileMillis(latencies, 0.99),
	}
	if sent := requests.Load() * int64(batch); sent > 0 {
		res.BytesPerSpan = int(bodyBytes.Load() / sent)
	}
	if res.Spans > 0 {
		res.LoadgenCPUMicrosPerSpan = (cpu1 - cpu0) * 1e6 / float64(res.Spans)
	}
	return res, start, nil
}

// send posts one export and says whether it was acknowledged, and whether
// the server asked to come back later.
func send(client *http.Client, url, user, pass string, body []byte) (ok, retryLater bool) {
	rb := &reusableBody{Reader: bytes.NewReader(body), closed: make(chan struct{})}
	req, err := http.NewRequest(http.MethodPost, url, rb)
	if err != nil {
		return false, false
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The transport may still hold the body after Do returns; the buffer is
	// reused only once it is closed.
	<-rb.closed
	if err != nil {
		return false, false
	}
	if resp.StatusCode != http.StatusOK {
		return false, resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests
	}
	return true, false
}

type reusableBody struct {
	*bytes.Reader
	once   sync.Once
	closed chan struct{}
}

func (b *reusableBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// waitStored polls until every acknowledged span is stored. Counting
// distinct spans sorts every stored key, which would weigh on the ClickHouse
// CPU being measured, so a plain row count is polled first and the distinct
// count, the spans a read returns, confirms once it is reached. Plain SQL,
// not the read path, so that pipelines of older schema versions are measured
// the same way.
func waitStored(res *result, start time.Time, dsn, database, project string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return err
	}
	db := clickhouse.OpenDB(opts)
	defer db.Close()
	table := "`" + database + "`.observations WHERE project_id = ?"
	stored := 0
	var lastErr error
	for {
		var rows, spans uint64
		lastErr = db.QueryRowContext(ctx, "SELECT count() FROM "+table, project).Scan(&rows)
		// Rows may hold a span twice (an insert retried).
		if lastErr == nil && int64(rows) >= res.Spans {
			lastErr = db.QueryRowContext(ctx, "SELECT uniqExact(trace_id, id) FROM "+table, project).Scan(&spans)
			stored = int(spans)
			if lastErr == nil && int64(stored) >= res.Spans {
				res.StoredSpans = stored
				res.StoredSeconds = time.Since(start).Seconds()
				res.StoredSpansPerSecond = float64(stored) / res.StoredSeconds
				return nil
			}
		}
		select {
		case <-ctx.Done():
			res.StoredSpans = stored
			if lastErr != nil {
				return fmt.Errorf("only %d of %d spans stored after %s: %w", stored, res.Spans, timeout, lastErr)
			}
			return fmt.Errorf("only %d of %d spans stored after %s", stored, res.Spans, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watch samples the CPU time of the collector and ClickHouse processes.
type watch struct {
	collector, clickhouse int
	c0, h0, c1, h1        float64
}

func (w *watch) sample(c, h *float64) error {
	var err error
	if w.collector != 0 {
		if *c, err = procCPU(w.collector); err != nil {
			return err
		}
	}
	if w.clickhouse != 0 {
		if *h, err = procCPU(w.clickhouse); err != nil {
			return err
		}
	}
	return nil
}

func (w *watch) begin() error { return w.sample(&w.c0, &w.h0) }
func (w *watch) end() error   { return w.sample(&w.c1, &w.h1) }

// stored records the CPU used until now: the spans are stored (or, without
// a store to wait for, the last one was acknowledged).
func (w *watch) stored(res *result) error {
	if res.StoredSpans > 0 {
		if err := w.end(); err != nil {
			return err
		}
	}
	if w.collector != 0 {
		res.CollectorCPUSeconds = w.c1 - w.c0
	}
	if w.clickhouse != 0 {
		res.ClickHouseCPUSeconds = w.h1 - w.h0
	}
	return nil
}

// merged waits until ClickHouse runs no merge (three looks in a row) and
// records its CPU time until then.
func (w *watch) merged(res *result, start time.Time, dsn string) error {
	if err := settleMerges(dsn, 10*time.Minute); err != nil {
		return err
	}
	h, err := procCPU(w.clickhouse)
	if err != nil {
		return err
	}
	res.ClickHouseCPUMergedSeconds = h - w.h0
	res.MergesSettledSeconds = time.Since(start).Seconds()
	return nil
}

func settleMerges(dsn string, timeout time.Duration) error {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return err
	}
	db := clickhouse.OpenDB(opts)
	defer db.Close()
	deadline := time.Now().Add(timeout)
	for quiet := 0; quiet < 3; {
		if time.Now().After(deadline) {
			return errors.New("merges still running after " + timeout.String())
		}
		n, err := runningMerges(db)
		if err != nil {
			return err
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func runningMerges(db *sql.DB) (int, error) {
	var n uint64
	err := db.QueryRow("SELECT count() FROM system.merges").Scan(&n)
	return int(n), err
}

// procCPU returns the user + system CPU seconds pid has used, from
// /proc/PID/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it do not.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(utime+stime) / 100, nil
}

func quantileMillis(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}
