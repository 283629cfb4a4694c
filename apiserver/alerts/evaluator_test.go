package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// receiver is a local webhook that records the bodies it accepted and
// answers each request with the next status of its script (then 200).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	script   []int
	requests atomic.Int32
}

func newReceiver(t *testing.T, script ...int) *receiver {
	rc := &receiver{script: script}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		status := http.StatusOK
		if len(rc.script) > 0 {
			status, rc.script = rc.script[0], rc.script[1:]
		}
		if status == http.StatusOK {
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			rc.bodies = append(rc.bodies, body)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) payloads(t *testing.T) []Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := []Payload{}
	for _, b := range rc.bodies {
		var p Payload
		require.NoError(t, json.Unmarshal(b, &p), string(b))
		out = append(out, p)
	}
	return out
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	cp       *controlplane.Store
	ch       *chstore.Store
	a, b     apitest.Tenant
	clock    *clock
	svc      Service
	webhooks egress.Policy
}

// t0 is when the tests' evaluations start.
var t0 = apitest.Base.Add(10 * time.Minute)

func setup(t *testing.T) env {
	cp := apitest.ControlPlane(t)
	e := env{cp: cp, ch: chtest.Store(t), a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b"), clock: &clock{now: t0}}
	var err error
	e.webhooks, err = egress.Webhooks([]string{"127.0.0.1"})
	require.NoError(t, err)
	e.svc = Service{Store: cp, Metrics: e.ch, Webhooks: e.webhooks, Now: e.clock.Now}
	return e
}

func (e env) evaluator(t *testing.T, publicURL string) *Evaluator {
	cfg := NewDefaultConfig()
	cfg.NotifyBackoff = 10 * time.Millisecond
	ev, err := NewEvaluator(cfg, e.cp, e.ch, e.webhooks, publicURL, zap.NewNop())
	require.NoError(t, err)
	ev.Now = e.clock.Now
	t.Cleanup(ev.Stop)
	return ev
}

// generation is an observation of project named name starting at at,
// lasting latency.
func generation(projectID, id, name string, at time.Time, latency time.Duration) model.Observation {
	o := apitest.Obs(projectID, "trace-"+id, id, at.Sub(apitest.Base))
	o.Type, o.Name = model.TypeGeneration, name
	o.EndTime = o.StartTime + latency.Microseconds()
	return o
}

func str(s string) *string      { return &s }
func num(f float64) *float64    { return &f }
func raw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func p95Latency(url, format string, forCount int) AlertRequest {
	return AlertRequest{
		Name: str("slow llm"),
		Query: &Query{View: "observations", Metric: Metric{Measure: "latency", Aggregation: "p95"}, Filters: []chstore.Filter{
			{Column: "name", Operator: "=", Type: "string", Value: "llm"}}},
		Operator: str(">"), Threshold: num(1000), Window: raw("5m"), Interval: raw("1m"), For: &forCount,
		Target: &TargetRequest{URL: url, Format: format},
	}
}

func TestEvaluatorFiresOnceAfterForAndResolves(t *testing.T) {
	e := setup(t)
	rc := newReceiver(t)
	ev := e.evaluator(t, "https://glassbox.example.com/gb/")
	ctx := context.Background()
	a, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(rc.URL+"/hook", "json", 2))
	require.NoError(t, err)

	// Slow generations two minutes before t0; another project's fast ones
	// and a differently named fast one do not count.
	apitest.Insert(t, e.ch,
		generation(e.a.ProjectID, "s1", "llm", t0.Add(-2*time.Minute), 3*time.Second),
		generation(e.a.ProjectID, "s2", "llm", t0.Add(-2*time.Minute), 2*time.Second),
		generation(e.a.ProjectID, "other", "embed", t0.Add(-2*time.Minute), 10*time.Millisecond),
		generation(e.b.ProjectID, "theirs", "llm", t0.Add(-2*time.Minute), 10*time.Millisecond),
	)
	state := func() controlplane.Alert {
		got, err := e.cp.GetAlert(ctx, e.a.ProjectID, a.ID)
		require.NoError(t, err)
		return got
	}

	assert.Equal(t, 1, ev.RunDue(ctx))
	assert.Equal(t, controlplane.AlertPending, state().State, "one breach of the two that fire it")
	assert.Empty(t, rc.payloads(t))
	assert.Equal(t, 0, ev.RunDue(ctx), "not due again before its interval")

	e.clock.Advance(time.Minute)
	assert.Equal(t, 1, ev.RunDue(ctx))
	got := state()
	assert.Equal(t, controlplane.AlertFiring, got.State)
	require.NotNil(t, got.LastValue)
	assert.InDelta(t, 3000, *got.LastValue, 1e-6, "exact p95 of 2 s and 3 s")
	payloads := rc.payloads(t)
	require.Len(t, payloads, 1)
	p := payloads[0]
	assert.Equal(t, EventFiring, p.Event)
	assert.Equal(t, controlplane.AlertFiring, p.State)
	assert.Equal(t, controlplane.AlertPending, p.PreviousState)
	assert.Equal(t, PayloadAlert{ID: a.ID, Name: "slow llm"}, p.Alert)
	assert.Equal(t, PayloadProject{ID: e.a.ProjectID, Name: "Project a"}, p.Project)
	assert.InDelta(t, 3000, *p.Value, 1e-6)
	assert.Equal(t, 1000.0, p.Threshold)
	assert.Equal(t, ">", p.Operator)
	assert.Equal(t, "5m", p.Window)
	assert.Equal(t, t0.Add(time.Minute).Format(time.RFC3339Nano), p.Time)
	assert.Equal(t, "https://glassbox.example.com/gb/project/"+e.a.ProjectID+"/alerts/"+a.ID, p.Link)

	// Still breaching: no second notification.
	e.clock.Advance(time.Minute)
	assert.Equal(t, 1, ev.RunDue(ctx))
	assert.Equal(t, controlplane.AlertFiring, state().State)
	assert.Len(t, rc.payloads(t), 1)

	// Fast generations only in the window: resolved.
	apitest.Insert(t, e.ch, generation(e.a.ProjectID, "f1", "llm", t0.Add(7*time.Minute), 200*time.Millisecond))
	e.clock.Advance(6 * time.Minute)
	assert.Equal(t, 1, ev.RunDue(ctx))
	got = state()
	assert.Equal(t, controlplane.AlertOK, got.State)
	assert.InDelta(t, 200, *got.LastValue, 1e-6)
	payloads = rc.payloads(t)
	require.Len(t, payloads, 2)
	assert.Equal(t, EventResolved, payloads[1].Event)
	assert.Equal(t, controlplane.AlertOK, payloads[1].State)
	assert.Equal(t, controlplane.AlertFiring, payloads[1].PreviousState)

	// Nothing in the window: no data, which an ok alert does not announce.
	e.clock.Advance(10 * time.Minute)
	assert.Equal(t, 1, ev.RunDue(ctx))
	assert.Equal(t, controlplane.AlertNoData, state().State)
	assert.Len(t, rc.payloads(t), 2)

	history, total, err := e.cp.ListAlertHistory(ctx, e.a.ProjectID, a.ID, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 4, total)
	var steps []string
	for _, h := range history {
		steps = append(steps, h.From+">"+h.To+" "+h.Notification)
	}
	assert.Equal(t, []string{"ok>no_data ", "firing>ok sent", "pending>firing sent", "no_data>pending "}, steps)
}

func TestEvaluatorErrorRateRatioWithSlackPayload(t *testing.T) {
	e := setup(t)
	rc := newReceiver(t)
	ev := e.evaluator(t, "")
	ctx := context.Background()
	count := Query{View: "observations", Metric: Metric{Measure: "count", Aggregation: "count"}}
	errors := count
	errors.Filters = []chstore.Filter{{Column: "level", Operator: "any of", Type: "stringOptions", Value: []any{"ERROR"}}}
	req := AlertRequest{Name: str("error rate <b>"), Query: &errors, Denominator: raw(count), Operator: str(">="), Threshold: num(0.5),
		Window: raw(3600), Target: &TargetRequest{URL: rc.URL, Format: "slack"}}
	a, err := e.svc.Create(ctx, e.a.ProjectID, req)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, a.Window)
	assert.Equal(t, DefaultInterval, a.Interval)

	// No observations: the denominator is zero, which is no data.
	assert.Equal(t, 1, ev.RunDue(ctx))
	got, err := e.cp.GetAlert(ctx, e.a.ProjectID, a.ID)
	require.NoError(t, err)
	assert.Equal(t, controlplane.AlertNoData, got.State)
	assert.Nil(t, got.LastValue)

	var obs []model.Observation
	for i, level := range []string{model.LevelError, model.LevelError, model.LevelError, model.LevelDefault} {
		o := generation(e.a.ProjectID, "g"+string(rune('0'+i)), "llm", t0.Add(-10*time.Minute), time.Second)
		o.Level = level
		obs = append(obs, o)
	}
	apitest.Insert(t, e.ch, obs...)
	e.clock.Advance(time.Minute)
	assert.Equal(t, 1, ev.RunDue(ctx))
	got, err = e.cp.GetAlert(ctx, e.a.ProjectID, a.ID)
	require.NoError(t, err)
	assert.Equal(t, controlplane.AlertFiring, got.State)
	assert.InDelta(t, 0.75, *got.LastValue, 1e-9)

	rc.mu.Lock()
	require.Len(t, rc.bodies, 1)
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
			Elements []map[string]any `json:"elements"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(rc.bodies[0], &msg), string(rc.bodies[0]))
	rc.mu.Unlock()
	assert.Contains(t, msg.Text, "Alert firing: error rate <b>")
	assert.Contains(t, msg.Text, "Value *0.75*")
	require.Len(t, msg.Blocks, 2)
	assert.Equal(t, "section", msg.Blocks[0].Type)
	require.NotNil(t, msg.Blocks[0].Text)
	assert.Equal(t, "mrkdwn", msg.Blocks[0].Text.Type)
	assert.Contains(t, msg.Blocks[0].Text.Text, "error rate &lt;b&gt;", "Slack markup escaped")
	assert.NotContains(t, msg.Blocks[0].Text.Text, "Open in Glassbox", "no absolute link without a public URL")
	assert.Equal(t, "context", msg.Blocks[1].Type)
	assert.Len(t, msg.Blocks[1].Elements, 1)
}

func TestEvaluatorValues(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	g1 := generation(e.a.ProjectID, "c1", "llm", t0.Add(-30*time.Minute), time.Second)
	g1.CostDetails = map[string]float64{"total": 0.25}
	g2 := generation(e.a.ProjectID, "c2", "llm", t0.Add(-90*time.Minute), time.Second)
	g2.CostDetails = map[string]float64{"total": 4}
	apitest.Insert(t, e.ch, g1, g2)
	score := func(id string, v float64) chstore.Score {
		return chstore.Score{ProjectID: e.a.ProjectID, ID: id, TraceID: "trace-c1", Name: "quality", Value: v, DataType: chstore.ScoreNumeric,
			Source: chstore.SourceAPI, Environment: "default", Timestamp: t0.Add(-time.Minute).UnixMicro(), Metadata: "{}"}
	}
	apitest.InsertScores(t, e.ch, score("q1", 0.2), score("q2", 0.6))
	ev := e.evaluator(t, "")
	for name, tc := range map[string]struct {
		q      Query
		window time.Duration
		want   *float64
	}{
		"cost per hour": {Query{View: "observations", Metric: Metric{Measure: "totalCost", Aggregation: "sum"}}, time.Hour, num(0.25)},
		"average score": {Query{View: "scores-numeric", Metric: Metric{Measure: "value", Aggregation: "avg"},
			Filters: []chstore.Filter{{Column: "name", Operator: "=", Type: "string", Value: "quality"}}}, time.Hour, num(0.4)},
		"count of nothing": {Query{View: "observations", Metric: Metric{Measure: "count", Aggregation: "count"},
			Filters: []chstore.Filter{{Column: "name", Operator: "=", Type: "string", Value: "none"}}}, time.Hour, num(0)},
		"average of nothing": {Query{View: "observations", Metric: Metric{Measure: "latency", Aggregation: "avg"}}, 5 * time.Minute, nil},
	} {
		a := controlplane.Alert{ProjectID: e.a.ProjectID, Query: encodeQuery(tc.q), Window: tc.window}
		got, err := ev.value(ctx, a, t0)
		require.NoError(t, err, name)
		if tc.want == nil {
			assert.Nil(t, got, name)
			continue
		}
		require.NotNil(t, got, name)
		assert.InDelta(t, *tc.want, *got, 1e-9, name)
	}
}

func TestEvaluatorRetriesServerErrorsOnly(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	ev := e.evaluator(t, "")
	apitest.Insert(t, e.ch, generation(e.a.ProjectID, "s1", "llm", t0.Add(-time.Minute), 3*time.Second))

	flaky := newReceiver(t, http.StatusServiceUnavailable, http.StatusBadGateway)
	refusing := newReceiver(t, http.StatusBadRequest)
	a1, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(flaky.URL, "json", 1))
	require.NoError(t, err)
	a2, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(refusing.URL, "json", 1))
	require.NoError(t, err)
	assert.Equal(t, 2, ev.RunDue(ctx))

	assert.EqualValues(t, 3, flaky.requests.Load(), "two 5xx retried")
	assert.Len(t, flaky.payloads(t), 1)
	assert.EqualValues(t, 1, refusing.requests.Load(), "a 4xx is not retried")
	h1, _, err := e.cp.ListAlertHistory(ctx, e.a.ProjectID, a1.ID, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, "sent", h1[0].Notification)
	h2, _, err := e.cp.ListAlertHistory(ctx, e.a.ProjectID, a2.ID, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, "failed: webhook answered 400 Bad Request", h2[0].Notification)
}

func TestEvaluatorChecksEgressOnEveryCall(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	a, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(rc.URL, "json", 1))
	require.NoError(t, err)
	apitest.Insert(t, e.ch, generation(e.a.ProjectID, "s1", "llm", t0.Add(-time.Minute), 3*time.Second))
	// The operator has since removed the host from the list.
	e.webhooks, err = egress.Webhooks([]string{"hooks.example.com"})
	require.NoError(t, err)
	ev := e.evaluator(t, "")
	assert.Equal(t, 1, ev.RunDue(ctx))
	assert.Zero(t, rc.requests.Load())
	h, _, err := e.cp.ListAlertHistory(ctx, e.a.ProjectID, a.ID, 0, 1)
	require.NoError(t, err)
	assert.Contains(t, h[0].Notification, "failed: URL not allowed")
}

func TestEvaluatorsShareAlertsByLease(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	rc := newReceiver(t)
	for range 5 {
		_, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(rc.URL, "json", 1))
		require.NoError(t, err)
	}
	apitest.Insert(t, e.ch, generation(e.a.ProjectID, "s1", "llm", t0.Add(-time.Minute), 3*time.Second))
	evs := []*Evaluator{e.evaluator(t, ""), e.evaluator(t, ""), e.evaluator(t, "")}
	var total atomic.Int32
	var wg sync.WaitGroup
	for _, ev := range evs {
		ev.cfg.BatchSize = 1
		wg.Go(func() { total.Add(int32(ev.RunDue(ctx))) })
	}
	wg.Wait()
	assert.EqualValues(t, 5, total.Load(), "each alert evaluated once")
	assert.Len(t, rc.payloads(t), 5, "one notification per alert")
}

func TestEvaluatorStartStop(t *testing.T) {
	e := setup(t)
	rc := newReceiver(t)
	ctx := context.Background()
	a, err := e.svc.Create(ctx, e.a.ProjectID, p95Latency(rc.URL, "json", 1))
	require.NoError(t, err)
	ev := e.evaluator(t, "")
	ev.cfg.PollInterval = 20 * time.Millisecond
	ev.Start()
	require.Eventually(t, func() bool {
		got, err := e.cp.GetAlert(ctx, e.a.ProjectID, a.ID)
		return err == nil && !got.LastEvaluatedAt.IsZero()
	}, 10*time.Second, 20*time.Millisecond)
	ev.Stop()
	ev.Stop()
}
