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

// benchLayoutEnv picks another observations layout for a comparison run, as
// "ORDER BY expressions|index granularity".
const benchLayoutEnv = "GLASSBOX_BENCH_LAYOUT"

const (
	benchProjects     = 5
	benchUsers        = 200 // per project
	benchObservations = 1_000_000
	benchDays         = 30
	benchBatch        = 10_000
)

var benchWords = strings.Fields(`the a user asked for weather forecast in paris tomorrow assistant replied sunny with light
	wind retrieval found three documents about climate travel budget hotel booking summary answer context tool search
	result score relevant citation model temperature token prompt system you are helpful`)

func benchText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(benchWords[r.IntN(len(benchWords))])
		b.WriteByte(' ')
	}
	return b.String()
}

// benchModels are the models the generations call, most often the first.
var benchModels = []string{"gpt-4o-mini", "gpt-4o-mini", "gpt-4o", "claude-sonnet-4", "gemini-2.5-flash"}

// benchTrace builds one trace of 3 to 17 observations (10 on average) with
// LLM-sized inputs and outputs: ~2 KB per generation, ~300 B per other span,
// times textScale.
func benchTrace(r *rand.Rand, i int, start int64, textScale float64) []model.Observation {
	text := func(n int) string { return benchText(r, max(1, int(float64(n)*textScale))) }
	project := fmt.Sprintf("proj-%d", i%benchProjects)
	traceID := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	n := 3 + r.IntN(15)
	root := model.Observation{
		ProjectID: project, TraceID: traceID, ID: fmt.Sprintf("%016x", r.Uint64()), Type: model.TypeSpan,
		Name: "handle-request", StartTime: start, EndTime: start + int64(n)*400_000 + int64(r.IntN(2_000_000)),
		Level: model.LevelDefault, Metadata: `{"route":"/chat"}`, Environment: "production", Release: "2025.11.1",
		TraceName: fmt.Sprintf("workflow-%d", r.IntN(20)), UserID: fmt.Sprintf("user-%d", r.IntN(benchUsers)),
		SessionID: fmt.Sprintf("session-%d-%d", i%benchProjects, i/50), Tags: []string{"chat", fmt.Sprintf("tier-%d", r.IntN(3))},
		TraceMetadata: fmt.Sprintf(`{"customer":"c-%d","plan":"pro"}`, r.IntN(1000)),
		TraceInput:    `{"question":"` + text(150) + `"}`, TraceOutput: `{"answer":"` + text(250) + `"}`,
		IsRoot: true, ServiceName: "chat-api", ScopeName: "langfuse-sdk", ScopeVersion: "3.2.0", SampleRate: 1,
	}
	root.Input, root.Output = root.TraceInput, root.TraceOutput
	obs := []model.Observation{root}
	for k := 1; k < n; k++ {
		o := model.Observation{
			ProjectID: project, TraceID: traceID, ID: fmt.Sprintf("%016x", r.Uint64()), ParentID: root.ID,
			StartTime: start + int64(k)*400_000, Level: model.LevelDefault, Metadata: "{}", Environment: "production",
			Release: root.Release, TraceMetadata: "{}", ServiceName: "chat-api", ScopeName: "langfuse-sdk", SampleRate: 1,
		}
		o.EndTime = o.StartTime + 300_000 + int64(r.IntN(1_000_000))
		if k%3 == 1 {
			o.Type, o.Name, o.Model = model.TypeGeneration, "llm-call", benchModels[r.IntN(len(benchModels))]
			o.Input = `[{"role":"system","content":"` + text(400) + `"},{"role":"user","content":"` + text(800) + `"}]`
			o.Output = `{"role":"assistant","content":"` + text(600) + `"}`
			o.ModelParameters = `{"temperature":0.2,"max_tokens":512}`
			in, out := int64(300+r.IntN(500)), int64(100+r.IntN(300))
			o.UsageDetails = map[string]int64{"input": in, "output": out, "total": in + out}
			o.CostDetails = map[string]float64{"input": float64(in) * 1.5e-7, "output": float64(out) * 6e-7, "total": float64(in)*1.5e-7 + float64(out)*6e-7}
			o.CompletionStartTime = o.StartTime + 150_000
		} else {
			o.Type, o.Name = model.TypeTool, []string{"search", "fetch-page", "calculator"}[r.IntN(3)]
			o.Input = `{"query":"` + text(80) + `"}`
			o.Output = `{"hits":"` + text(200) + `"}`
		}
		obs = append(obs, o)
	}
	return obs
}

// BenchmarkRead loads 1M observations (about 100k traces in 5 projects over 30
// days) and reports insert throughput and the latency of the two hot reads:
// one trace by id, and the first page of a project's traces in a 7-day window
// filtered by user. Run it on purpose:
//
//	GLASSBOX_TEST_CLICKHOUSE_DSN=clickhouse://127.0.0.1:19000 go test -run XXX -bench BenchmarkRead -benchtime 1x ./internal/chstore/
func BenchmarkRead(b *testing.B) {
	if layout := os.Getenv(benchLayoutEnv); layout != "" {
		orderBy, granularity, ok := strings.Cut(layout, "|")
		require.True(b, ok, "%s wants \"ORDER BY expressions|granularity\"", benchLayoutEnv)
		var g int
		_, err := fmt.Sscan(granularity, &g)
		require.NoError(b, err)
		b.Cleanup(chstore.SetObservationsLayout(orderBy, g))
	}
	s := chtest.Store(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	end := time.Now().Truncate(24 * time.Hour).UnixMicro()
	start := end - benchDays*24*time.Hour.Microseconds()

	var (
		batch   []model.Observation
		traces  []benchTraceRef
		stored  int
		text    int
		elapsed time.Duration
	)
	step := benchDays * 24 * time.Hour.Microseconds() / (benchObservations / 10)
	for i := 0; stored < benchObservations; i++ {
		obs := benchTrace(r, i, start+int64(i)*step+r.Int64N(step), 1)
		traces = append(traces, benchTraceRef{obs[0].ProjectID, obs[0].TraceID})
		batch = append(batch, obs...)
		for _, o := range obs {
			text += len(o.Input) + len(o.Output) + len(o.Metadata) + len(o.ModelParameters) +
				len(o.TraceInput) + len(o.TraceOutput) + len(o.TraceMetadata)
		}
		if len(batch) >= benchBatch {
			t0 := time.Now()
			require.NoError(b, s.InsertObservations(ctx, batch))
			elapsed += time.Since(t0)
			stored += len(batch)
			batch = batch[:0]
		}
	}
	insertRate := float64(stored) / elapsed.Seconds()
	b.Logf("stored %d observations of %d traces (%d B of input/output/metadata text per row) in %s",
		stored, len(traces), text/stored, elapsed.Round(time.Millisecond))

	b.ResetTimer()
	for b.Loop() {
		// First right after the load, with many small parts, then once background
		// merges have settled as they do between bursts of traffic.
		measureReads(b, s, r, traces, start, end, "fresh-")
		waitForMerges(b, s)
		measureReads(b, s, r, traces, start, end, "")
		b.ReportMetric(insertRate, "insert-rows/s")
	}
}

func measureReads(b *testing.B, s *chstore.Store, r *rand.Rand, traces []benchTraceRef, start, end int64, prefix string) {
	ctx := context.Background()
	var getTimes, listTimes []time.Duration
	for range 200 {
		tr := traces[r.IntN(len(traces))]
		t0 := time.Now()
		got, err := s.GetTrace(ctx, tr.project, tr.id)
		getTimes = append(getTimes, time.Since(t0))
		require.NoError(b, err)
		require.NotEmpty(b, got.Observations)
	}
	week := 7 * 24 * time.Hour.Microseconds()
	for range 200 {
		from := start + r.Int64N(end-start-week)
		f := chstore.TraceFilter{
			ProjectID: fmt.Sprintf("proj-%d", r.IntN(benchProjects)), UserID: fmt.Sprintf("user-%d", r.IntN(benchUsers)),
			From: from, To: from + week, Limit: 50,
		}
		t0 := time.Now()
		page, total, err := s.ListTraces(ctx, f)
		listTimes = append(listTimes, time.Since(t0))
		require.NoError(b, err)
		require.Len(b, page, min(total, 50))
	}
	for _, m := range []struct {
		name  string
		times []time.Duration
	}{{"get-trace", getTimes}, {"list-traces", listTimes}} {
		slices.Sort(m.times)
		b.ReportMetric(ms(m.times[len(m.times)/2]), prefix+m.name+"-p50-ms")
		b.ReportMetric(ms(m.times[len(m.times)*95/100]), prefix+m.name+"-p95-ms")
	}
}

type benchTraceRef struct{ project, id string }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkObservationInsert sends records of about 2,000 agent-mix rows as
// blocks of one insert, as the exporter's consumer does, and reports the
// client's CPU per row: ClickHouse runs in its own process, so
// this is the collector's share alone.
//
//	GLASSBOX_TEST_CLICKHOUSE_DSN=clickhouse://127.0.0.1:19000 go test -run XXX -bench BenchmarkObservationInsert ./internal/chstore/
func BenchmarkObservationInsert(b *testing.B) {
	s := chtest.Store(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	start := time.Now().UnixMicro()
	var records [][]byte
	rows := 0
	for i := 0; rows < 2_000; i++ {
		obs := benchTrace(r, i, start+int64(i)*1_000, 1)
		records = append(records, chstore.AppendObservationRecord(nil, obs))
		rows += len(obs)
	}
	const blocksPerInsert = 10
	self := strconv.Itoa(os.Getpid())
	cpu0 := processCPU(b, self)
	for b.Loop() {
		ins, err := s.BeginObservationInsert(ctx)
		require.NoError(b, err)
		for range blocksPerInsert {
			require.NoError(b, ins.Add(records))
		}
		_, err = ins.Send()
		ins.Close()
		require.NoError(b, err)
	}
	cpu := processCPU(b, self) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*blocksPerInsert*rows), "client-cpu-ns/row")
}
