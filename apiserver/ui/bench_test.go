package ui_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// The UI's budgets, measured by `make bench`:
//   - the traces page and a trace page render server-side in p95 < 150 ms
//     with 1M observations stored;
//   - a trace of 10,000 observations opens in Chromium in < 1 s and stays
//     scrollable;
//   - a page ships < 150 KB of JS and CSS, gzipped.
//
//	GLASSBOX_TEST_CLICKHOUSE_DSN=clickhouse://127.0.0.1:19000 \
//	  go test -run XXX -bench BenchmarkPages -benchtime 1x ./apiserver/ui/

const (
	benchObservations = 1_000_000
	benchUsers        = 500
	benchDays         = 30
	bigTrace          = 10_000
)

var benchWords = strings.Fields(`order refund shipping weather paris invoice password reset account plan upgrade
	summary answer context tool search result model prompt assistant helpful please thanks`)

func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(benchWords[r.IntN(len(benchWords))])
		b.WriteByte(' ')
	}
	return b.String()
}

// benchTrace is an agent run of 4 to 16 observations: a root span with the
// trace's fields, generations with chat I/O and usage, and tool calls.
func benchTrace(r *rand.Rand, project string, start int64) []model.Observation {
	id := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	n := 4 + r.IntN(13)
	root := model.Observation{ProjectID: project, TraceID: id, ID: fmt.Sprintf("%016x", r.Uint64()), Type: model.TypeAgent,
		Name: "agent-run", StartTime: start, EndTime: start + int64(n)*300_000, Level: model.LevelDefault, Environment: "production",
		Metadata: "{}", TraceName: fmt.Sprintf("workflow-%d", r.IntN(12)), UserID: fmt.Sprintf("user-%d", r.IntN(benchUsers)),
		SessionID: fmt.Sprintf("session-%d", r.IntN(20_000)), Tags: []string{"bench"}, TraceMetadata: `{"plan":"pro"}`,
		TraceInput: `{"question":"` + words(r, 200) + `"}`, TraceOutput: `{"answer":"` + words(r, 300) + `"}`, IsRoot: true, SampleRate: 1}
	obs := []model.Observation{root}
	for k := 1; k < n; k++ {
		o := model.Observation{ProjectID: project, TraceID: id, ID: fmt.Sprintf("%016x", r.Uint64()), ParentID: root.ID,
			StartTime: start + int64(k)*300_000, EndTime: start + int64(k)*300_000 + 250_000, Level: model.LevelDefault,
			Environment: "production", Metadata: "{}", TraceMetadata: "{}", SampleRate: 1}
		if k%2 == 1 {
			o.Type, o.Name, o.Model = model.TypeGeneration, "llm-call", "gpt-4o-mini"
			o.Input = `[{"role":"user","content":"` + words(r, 1000) + `"}]`
			o.Output = `{"role":"assistant","content":"` + words(r, 500) + `"}`
			o.UsageDetails = map[string]int64{"input": 400, "output": 120, "total": 520}
			o.CostDetails = map[string]float64{"total": 0.00013}
		} else {
			o.Type, o.Name = model.TypeTool, "search"
			o.Input, o.Output = `{"q":"`+words(r, 60)+`"}`, `{"hits":"`+words(r, 200)+`"}`
		}
		obs = append(obs, o)
	}
	return obs
}

// wideTrace is one trace of n observations: 100 agent steps, each with its
// own chain of calls.
func wideTrace(project, id string, start int64, n int) []model.Observation {
	obs := make([]model.Observation, 0, n)
	root := model.Observation{ProjectID: project, TraceID: id, ID: "root", Type: model.TypeAgent, Name: "long-agent", StartTime: start,
		EndTime: start + int64(n)*1000, Level: model.LevelDefault, Environment: "production", Metadata: "{}", TraceMetadata: "{}",
		TraceName: "long-agent", IsRoot: true, SampleRate: 1, Input: `"start"`, Output: `"done"`}
	obs = append(obs, root)
	for i := 1; len(obs) < n; i++ {
		parent := "root"
		if i%100 != 1 {
			parent = fmt.Sprintf("step-%d", i-1)
		}
		o := model.Observation{ProjectID: project, TraceID: id, ID: fmt.Sprintf("step-%d", i), ParentID: parent,
			Type: model.TypeSpan, Name: fmt.Sprintf("step %d", i), StartTime: start + int64(i)*1000, EndTime: start + int64(i)*1000 + 800,
			Level: model.LevelDefault, Environment: "production", Metadata: "{}", TraceMetadata: "{}", SampleRate: 1,
			Input: `{"i":` + fmt.Sprint(i) + `}`, Output: `"ok"`}
		if i%10 == 0 {
			o.Type, o.Model = model.TypeGeneration, "gpt-4o-mini"
			o.UsageDetails, o.CostDetails = map[string]int64{"total": 100}, map[string]float64{"total": 0.0001}
		}
		obs = append(obs, o)
	}
	return obs
}

func BenchmarkPages(b *testing.B) {
	env := uitest.Start(b, uitest.Options{})
	ctx := context.Background()
	ch, err := chstore.Open(ctx, env.ClickHouse)
	require.NoError(b, err)
	defer ch.Close()

	r := rand.New(rand.NewPCG(7, 11))
	end := time.Now().UnixMicro()
	start := end - benchDays*24*time.Hour.Microseconds()
	var ids []string
	var batch []model.Observation
	stored, t0 := 0, time.Now()
	step := (end - start) / (benchObservations / 10)
	for i := 0; stored < benchObservations; i++ {
		// Four of five traces in other projects: the page's project is one
		// tenant among several.
		project := env.ProjectID
		if i%5 != 0 {
			project = fmt.Sprintf("other-%d", i%5)
		}
		obs := benchTrace(r, project, start+int64(i)*step)
		if project == env.ProjectID {
			ids = append(ids, obs[0].TraceID)
		}
		batch = append(batch, obs...)
		if len(batch) >= 20_000 {
			require.NoError(b, ch.InsertObservations(ctx, batch))
			stored += len(batch)
			batch = batch[:0]
		}
	}
	require.NoError(b, ch.InsertObservations(ctx, wideTrace(env.ProjectID, "wide", end-3600e6, bigTrace)))
	b.Logf("stored %d observations (%d traces in the page's project) and a trace of %d in %s", stored, len(ids), bigTrace,
		time.Since(t0).Round(time.Second))

	c := uitest.NewClient(b, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	p := "/project/" + env.ProjectID
	b.ResetTimer()
	for b.Loop() {
		pages := []struct {
			name string
			path func() string
		}{
			{"traces-page", func() string { return p + "/traces" }},
			{"traces-page-user-filter", func() string { return p + fmt.Sprintf("/traces?user=user-%d&range=30d", r.IntN(benchUsers)) }},
			{"trace-page", func() string { return p + "/traces/" + ids[r.IntN(len(ids))] }},
		}
		for _, pg := range pages {
			var times []time.Duration
			for range 200 {
				path := pg.path()
				t := time.Now()
				res := c.Get(path)
				times = append(times, time.Since(t))
				require.Equal(b, http.StatusOK, res.Status, path)
			}
			slices.Sort(times)
			b.ReportMetric(ms(times[len(times)/2]), pg.name+"-p50-ms")
			b.ReportMetric(ms(times[len(times)*95/100]), pg.name+"-p95-ms")
		}

		// The 10,000-observation trace in Chromium: from navigation start to
		// a drawn tree, then a jump to its end.
		tab := uitest.NewTab(b, 2*time.Minute)
		tab.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)
		var opens []float64
		for range 5 {
			tab.Go(env.URL + p + "/traces/wide")
			tab.WaitFor(`document.querySelectorAll("[data-tree] [data-node]").length > 10`)
			opens = append(opens, uitest.Eval[float64](tab, `performance.now()`))
		}
		slices.Sort(opens)
		b.ReportMetric(opens[len(opens)/2], "trace-10k-open-ms")
		rows := uitest.Eval[int](tab, `document.querySelectorAll("[data-tree] [data-node]").length`)
		b.ReportMetric(float64(rows), "trace-10k-rows-in-dom")
		scroll := uitest.Eval[float64](tab, `(() => { const t = performance.now(); const n = document.querySelector("[data-tree]");
			n.scrollTop = n.scrollHeight; n.dispatchEvent(new Event("scroll")); return t; })()`)
		tab.WaitFor(`!!document.querySelector('[data-observation-id="step-9999"]')`)
		b.ReportMetric(uitest.Eval[float64](tab, `performance.now()`)-scroll, "trace-10k-scroll-to-end-ms")
		require.Empty(b, tab.ConsoleErrors())

		for _, pg := range []string{p + "/traces", p + "/traces/wide"} {
			b.ReportMetric(float64(pageWeight(b, env, c, pg))/1024, strings.ReplaceAll(strings.Trim(pg[len(p):], "/"), "/", "-")+"-js-css-gzip-KB")
		}
	}
}

var assetRef = regexp.MustCompile(`(?:src|href)="([^"]+\.(?:js|css))"`)

// pageWeight is the gzipped size of the scripts and stylesheets a page loads.
func pageWeight(b testing.TB, env *uitest.Env, c *uitest.Client, path string) int {
	total := 0
	for _, m := range assetRef.FindAllStringSubmatch(c.Get(path).Body, -1) {
		req, err := http.NewRequest(http.MethodGet, env.URL+m[1], nil)
		require.NoError(b, err)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(b, err)
		n, _ := io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		require.Equal(b, "gzip", res.Header.Get("Content-Encoding"), m[1])
		total += int(n)
	}
	return total
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestPageWeightBudget keeps every page under 150 KB of JS and CSS, gzipped.
func TestPageWeightBudget(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.ChatTrace(t, "t1", "chat", "u", time.Now().Add(-time.Minute))
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	p := "/project/" + env.ProjectID
	for _, path := range []string{p + "/traces", p + "/traces/t1", p + "/sessions", p + "/settings", "/organization/" + env.OrgID} {
		kb := pageWeight(t, env, c, path) / 1024
		require.Less(t, kb, 150, path)
		require.Greater(t, kb, 10, "%s loads its scripts", path)
	}
}
