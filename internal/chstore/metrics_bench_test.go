package chstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// benchMetricsDBEnv names a database the benchmark keeps: loaded once, then
// reused by later runs, for comparing query variants.
const benchMetricsDBEnv = "GLASSBOX_BENCH_METRICS_DATABASE"

// benchCHPidEnv names the ClickHouse server's pid, so the benchmark can
// report the server's CPU per query from /proc beside the latency.
const benchCHPidEnv = "GLASSBOX_BENCH_CLICKHOUSE_PID"

// metricsBenchObservations is the size of the metrics benchmark's data set.
const metricsBenchObservations = 10_000_000

// BenchmarkMetrics loads 10M observations (about 1M traces in 5 projects over
// 30 days, one numeric score per trace) and times the three metrics queries
// the dashboards lean on, 50 times each after background merges settle. Text
// is a tenth of BenchmarkRead's: metrics never read input or output, and the
// load stays a few minutes. Run it on purpose:
//
//	GLASSBOX_TEST_CLICKHOUSE_DSN=clickhouse://127.0.0.1:19000 go test -run XXX -bench BenchmarkMetrics -benchtime 1x -timeout 60m ./internal/chstore/
func BenchmarkMetrics(b *testing.B) {
	ctx := context.Background()
	s := metricsBenchStore(b)
	r := rand.New(rand.NewPCG(3, 4))
	end := time.Now().Truncate(time.Hour).UnixMicro()
	start := end - benchDays*24*time.Hour.Microseconds()

	var (
		batch   []model.Observation
		scores  []chstore.Score
		stored  int
		elapsed time.Duration
	)
	flush := func() {
		t0 := time.Now()
		require.NoError(b, s.InsertObservations(ctx, batch))
		require.NoError(b, s.InsertScores(ctx, scores))
		elapsed += time.Since(t0)
		stored += len(batch)
		batch, scores = batch[:0], scores[:0]
	}
	loaded, err := s.CountObservations(ctx)
	require.NoError(b, err)
	if loaded > 0 {
		b.Logf("reusing %d observations", loaded)
		stored = metricsBenchObservations
	}
	step := benchDays * 24 * time.Hour.Microseconds() / (metricsBenchObservations / 10)
	for i := 0; stored+len(batch) < metricsBenchObservations; i++ {
		obs := benchTrace(r, i, start+int64(i)*step+r.Int64N(step), 0.1)
		batch = append(batch, obs...)
		scores = append(scores, chstore.Score{
			ProjectID: obs[0].ProjectID, ID: fmt.Sprintf("%016x", r.Uint64()), TraceID: obs[0].TraceID,
			Timestamp: obs[0].EndTime, Name: "quality", Value: r.Float64(), DataType: chstore.ScoreNumeric,
			Source: chstore.SourceEval, Environment: "production", Metadata: "{}",
		})
		if len(batch) >= benchBatch {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
		b.Logf("stored %d observations in %s (%.0f rows/s)", stored, elapsed.Round(time.Second), float64(stored)/elapsed.Seconds())
	}
	waitForMerges(b, s)
	pid := os.Getenv(benchCHPidEnv)
	// The background job's work: on a fresh load every closed day, on a
	// kept database only what changed since (usually nothing).
	cpu0, t0 := processCPU(b, pid), time.Now()
	st, err := s.RefreshRollups(ctx, 0)
	require.NoError(b, err)
	b.Logf("rolled up %d project days and %d project score days in %s (ClickHouse CPU %s)", st.Days, st.ScoreDays, time.Since(t0).Round(time.Millisecond),
		(processCPU(b, pid) - cpu0).Round(time.Millisecond))

	day := 24 * time.Hour
	endTime := time.UnixMicro(end)
	queries := []struct {
		name string
		run  func(project string) error
	}{
		{"30-day daily cost and count by model", func(project string) error {
			_, err := s.Metrics(ctx, project, chstore.MetricsQuery{
				View: chstore.ViewObservations, Dimensions: []string{"providedModelName"},
				Metrics:     []chstore.Metric{{Measure: "totalCost", Aggregation: "sum"}, {Measure: "count", Aggregation: "count"}},
				Granularity: "day", From: endTime.Add(-benchDays * day), To: endTime,
			})
			return err
		}},
		{"24-hour hourly p95 latency by observation name", func(project string) error {
			_, err := s.Metrics(ctx, project, chstore.MetricsQuery{
				View: chstore.ViewObservations, Dimensions: []string{"name"},
				Metrics:     []chstore.Metric{{Measure: "latency", Aggregation: "p95"}},
				Granularity: "hour", From: endTime.Add(-day), To: endTime,
			})
			return err
		}},
		{"traces list, 7 days, metadata and score filter", func(project string) error {
			_, _, err := s.ListTraces(ctx, chstore.TraceFilter{
				ProjectID: project, From: end - 7*day.Microseconds(), To: end, Limit: 50,
				Filters: []chstore.Filter{
					{Column: "metadata", Type: "stringObject", Key: "plan", Operator: "=", Value: "pro"},
					{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: ">", Value: 0.9},
				},
			})
			return err
		}},
	}
	b.ResetTimer()
	for b.Loop() {
		for _, q := range queries {
			var times []time.Duration
			cpu0 := processCPU(b, pid)
			for i := range 50 {
				t0 := time.Now()
				require.NoError(b, q.run(fmt.Sprintf("proj-%d", i%benchProjects)), q.name)
				times = append(times, time.Since(t0))
			}
			cpu := processCPU(b, pid) - cpu0
			slices.Sort(times)
			line := fmt.Sprintf("| %s | %.1f | %.1f |", q.name, ms(times[len(times)/2]), ms(times[len(times)*95/100]))
			if pid != "" {
				line += fmt.Sprintf(" %.1f |", ms(cpu)/float64(len(times)))
			}
			b.Log(line)
		}
	}
}

// metricsBenchStore is a fresh store, or the kept one benchMetricsDBEnv names.
func metricsBenchStore(b *testing.B) *chstore.Store {
	name := os.Getenv(benchMetricsDBEnv)
	if name == "" {
		return chtest.Store(b)
	}
	cfg := chtest.Config(b)
	cfg.Database = name
	s, err := chstore.Open(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	require.NoError(b, s.Migrate(context.Background()))
	return s
}

// waitForMerges waits until the part count holds for 10 s (at most 10 min),
// as between bursts of traffic.
func waitForMerges(b *testing.B, s *chstore.Store) {
	ctx := context.Background()
	settle := time.Now()
	parts, err := s.ActiveParts(ctx)
	require.NoError(b, err)
	for stable := 0; stable < 10 && time.Since(settle) < 10*time.Minute; {
		time.Sleep(time.Second)
		now, err := s.ActiveParts(ctx)
		require.NoError(b, err)
		if now == parts {
			stable++
		} else {
			parts, stable = now, 0
		}
	}
	b.Logf("%d parts after %s of background merges", parts, time.Since(settle).Round(time.Second))
}

// processCPU is the user and system CPU time the process has used, from
// /proc/<pid>/stat; zero without a pid.
func processCPU(b *testing.B, pid string) time.Duration {
	if pid == "" {
		return 0
	}
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	require.NoError(b, err)
	// The command name in parentheses may hold spaces; fields count after it.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	require.NoError(b, err1)
	require.NoError(b, err2)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}
