package ingestion

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

type fixture struct {
	h    http.Handler
	ch   *chstore.Store
	cp   *controlplane.Store
	a, b apitest.Tenant
}

func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	f := fixture{ch: chtest.Store(t), cp: cp, a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}
	var err error
	f.h, err = httpx.NewRouter(Routes(f.ch, cp, zap.NewNop()), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

type ev = map[string]any

func send(t *testing.T, f fixture, auth string, events ...ev) Response {
	t.Helper()
	batch := make([]any, len(events))
	for i, e := range events {
		batch[i] = e
	}
	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/ingestion", auth, map[string]any{"batch": batch})
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	return apitest.Decode[Response](t, rec)
}

func envelopeOf(id, typ, ts string, body ev) ev {
	return ev{"id": id, "type": typ, "timestamp": ts, "body": body}
}

func succeeded(r Response) []string {
	out := []string{}
	for _, s := range r.Successes {
		out = append(out, s.ID)
	}
	return out
}

func failed(r Response) map[string]int {
	out := map[string]int{}
	for _, e := range r.Errors {
		out[e.ID] = e.Status
	}
	return out
}

func TestScoreEvents(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	resp := send(t, f, f.a.ProjectAuth,
		envelopeOf("e1", "score-create", "2025-05-01T10:00:00.000Z", ev{"id": "s-num", "traceId": "t1", "observationId": "o1", "name": "accuracy", "value": 0.5, "comment": "c", "metadata": ev{"k": "v"}, "environment": "staging"}),
		envelopeOf("e2", "score-create", "2025-05-01T10:00:01.000Z", ev{"id": "s-cat", "sessionId": "sess", "name": "tone", "value": "polite"}),
		envelopeOf("e3", "score-create", "2025-05-01T10:00:02.000Z", ev{"id": "s-bool", "datasetRunId": "run", "name": "ok", "value": 0, "dataType": "BOOLEAN", "source": "EVAL"}),
		envelopeOf("e4", "score-create", "2025-05-01T10:00:03.000Z", ev{"name": "no-target", "value": 1}),
		envelopeOf("e5", "score-create", "2025-05-01T10:00:04.000Z", ev{"traceId": "t1", "name": "cfg", "value": 1, "configId": "missing"}),
		envelopeOf("e6", "score-create", "2025-05-01T10:00:05.000Z", ev{"traceId": "t1", "name": "from-envelope", "value": 3}),
	)
	assert.ElementsMatch(t, []string{"e1", "e2", "e3", "e6"}, succeeded(resp))
	assert.Equal(t, map[string]int{"e4": 400, "e5": 404}, failed(resp))
	for _, e := range resp.Errors {
		if e.ID == "e4" {
			assert.Equal(t, "Invalid request data", e.Message)
			assert.Contains(t, e.Error, "traceId")
		}
	}

	sc, err := f.ch.GetScore(ctx, f.a.ProjectID, "s-num")
	require.NoError(t, err)
	assert.Equal(t, "o1", sc.ObservationID)
	assert.Equal(t, "staging", sc.Environment)
	assert.Equal(t, int64(1746093600000000), sc.Timestamp, "the envelope timestamp")
	sc, err = f.ch.GetScore(ctx, f.a.ProjectID, "s-bool")
	require.NoError(t, err)
	assert.Equal(t, "False", sc.StringValue)
	assert.Equal(t, chstore.SourceEval, sc.Source)
	_, err = f.ch.GetScore(ctx, f.a.ProjectID, "e6")
	require.NoError(t, err, "a score without body id takes the envelope id")

	// Retrying the batch stores nothing twice.
	send(t, f, f.a.ProjectAuth,
		envelopeOf("e6", "score-create", "2025-05-01T10:00:05.000Z", ev{"traceId": "t1", "name": "from-envelope", "value": 3}),
		envelopeOf("e1", "score-create", "2025-05-01T10:00:00.000Z", ev{"id": "s-num", "traceId": "t1", "observationId": "o1", "name": "accuracy", "value": 0.5}))
	list, total, err := f.ch.SearchScores(ctx, chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: f.a.ProjectID, TraceID: "t1"}})
	require.NoError(t, err)
	assert.Equal(t, 2, total)
	assert.Len(t, list, 2)

	_, err = f.ch.GetScore(ctx, f.b.ProjectID, "s-num")
	assert.ErrorIs(t, err, chstore.ErrNotFound, "scores land in the key's project only")
}

func TestLegacyTrace(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const trace = "legacy-trace-1"
	resp := send(t, f, f.a.ProjectAuth,
		envelopeOf("ev-trace", "trace-create", "2025-05-01T10:00:00.000Z", ev{"id": trace, "name": "chat", "userId": "u1",
			"sessionId": "s1", "tags": []string{"b", "a"}, "input": ev{"q": "hi"}, "metadata": ev{"team": "x"},
			"release": "r1", "version": "v1", "environment": "Production", "timestamp": "2025-05-01T10:00:00.000Z"}),
		envelopeOf("ev-span", "span-create", "2025-05-01T10:00:00.100Z", ev{"id": "span-1", "traceId": trace, "name": "retrieve",
			"startTime": "2025-05-01T10:00:00.100Z", "input": "plain text", "metadata": ev{"a": ev{"x": 1}}}),
		envelopeOf("ev-gen", "generation-create", "2025-05-01T10:00:00.200Z", ev{"id": "gen-1", "traceId": trace,
			"parentObservationId": "span-1", "name": "llm", "startTime": "2025-05-01T10:00:00.200Z",
			"completionStartTime": "2025-05-01T10:00:00.300Z", "model": "gpt-4o", "modelParameters": ev{"temperature": 0.2},
			"usage": ev{"promptTokens": 10, "completionTokens": 5, "totalTokens": 15}, "costDetails": ev{"total": 0.01, "bad": -1},
			"promptName": "greet", "promptVersion": 2, "input": []ev{{"role": "user", "content": "hi"}}}),
		envelopeOf("ev-span-up", "span-update", "2025-05-01T10:00:01.000Z", ev{"id": "span-1", "traceId": trace,
			"endTime": "2025-05-01T10:00:01.000Z", "output": ev{"docs": 3}, "metadata": ev{"a": ev{"y": 2}}, "level": "WARNING"}),
		envelopeOf("ev-event", "event-create", "2025-05-01T10:00:00.500Z", ev{"id": "event-1", "traceId": trace, "name": "cache-hit",
			"model": "ignored-on-events"}),
		envelopeOf("ev-log", "sdk-log", "2025-05-01T10:00:00.500Z", ev{"log": "hello"}),
	)
	assert.ElementsMatch(t, []string{"ev-trace", "ev-span", "ev-gen", "ev-span-up", "ev-event", "ev-log"}, succeeded(resp))
	assert.Empty(t, resp.Errors)

	got, err := f.ch.GetTrace(ctx, f.a.ProjectID, trace)
	require.NoError(t, err)
	assert.Equal(t, "chat", got.Name)
	assert.Equal(t, "u1", got.UserID)
	assert.Equal(t, "s1", got.SessionID)
	assert.Equal(t, []string{"a", "b"}, got.Tags)
	assert.Equal(t, "production", got.Environment, "environments are normalised")
	assert.JSONEq(t, `{"q":"hi"}`, got.Input)
	assert.JSONEq(t, `{"team":"x"}`, got.Metadata)
	obs := map[string]model.Observation{}
	for _, o := range got.Observations {
		obs[o.ID] = o.Observation
	}
	require.Len(t, obs, 4, "the trace's root row, a span, a generation and an event")
	root := obs[trace]
	assert.Equal(t, model.TypeSpan, root.Type)
	assert.True(t, root.IsRoot)

	span := obs["span-1"]
	assert.Equal(t, "plain text", span.Input)
	assert.JSONEq(t, `{"docs":3}`, span.Output, "the update is merged into the create")
	assert.JSONEq(t, `{"a":{"x":1,"y":2}}`, span.Metadata, "metadata is deep-merged")
	assert.Equal(t, model.LevelWarning, span.Level)
	assert.Equal(t, int64(1746093601000000), span.EndTime)

	gen := obs["gen-1"]
	assert.Equal(t, model.TypeGeneration, gen.Type)
	assert.Equal(t, "span-1", gen.ParentID)
	assert.False(t, gen.IsRoot)
	assert.Equal(t, "gpt-4o", gen.Model)
	assert.JSONEq(t, `{"temperature":0.2}`, gen.ModelParameters)
	assert.Equal(t, map[string]int64{"input": 10, "output": 5, "total": 15}, gen.UsageDetails)
	assert.Equal(t, map[string]float64{"total": 0.01}, gen.CostDetails)
	assert.Equal(t, "greet", gen.PromptName)
	assert.Equal(t, int64(2), gen.PromptVersion)
	assert.Equal(t, int64(1746093600300000), gen.CompletionStartTime)

	assert.Empty(t, obs["event-1"].Model, "events carry no model")
	assert.Equal(t, model.TypeEvent, obs["event-1"].Type)
}

func TestUpdatesAcrossBatches(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	const trace = "trace-2"
	send(t, f, f.a.ProjectAuth,
		envelopeOf("1", "trace-create", "2025-05-01T10:00:00.000Z", ev{"id": trace, "name": "first", "tags": []string{"x"}, "metadata": ev{"a": 1}}),
		envelopeOf("2", "generation-create", "2025-05-01T10:00:00.000Z", ev{"id": "gen", "traceId": trace, "name": "llm",
			"model": "m", "usageDetails": ev{"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}))
	// A later batch: a trace update (trace-create again) and a generation update.
	resp := send(t, f, f.a.ProjectAuth,
		envelopeOf("3", "trace-create", "2025-05-01T10:00:05.000Z", ev{"id": trace, "output": "done", "tags": []string{"y"}, "metadata": ev{"b": 2}}),
		envelopeOf("4", "generation-update", "2025-05-01T10:00:05.000Z", ev{"id": "gen", "traceId": trace,
			"endTime": "2025-05-01T10:00:02.000Z", "output": "answer"}))
	assert.Empty(t, resp.Errors)

	got, err := f.ch.GetTrace(ctx, f.a.ProjectID, trace)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Name, "the name is kept")
	assert.Equal(t, "done", got.Output)
	assert.Equal(t, []string{"x", "y"}, got.Tags, "tags are unioned")
	assert.JSONEq(t, `{"a":1,"b":2}`, got.Metadata)
	require.Len(t, got.Observations, 2, "updates replace rows, never add observations")
	for _, o := range got.Observations {
		if o.ID == "gen" {
			assert.Equal(t, "m", o.Model, "fields of the create are kept")
			assert.Equal(t, "answer", o.Output)
			assert.Equal(t, map[string]int64{"input": 7, "output": 3, "total": 10}, o.UsageDetails)
			assert.Equal(t, int64(1746093602000000), o.EndTime)
		}
	}

	// An update of an observation never created makes one; one without a trace gets a trace of its own id.
	resp = send(t, f, f.a.ProjectAuth, envelopeOf("5", "span-update", "2025-05-01T11:00:00.000Z", ev{"id": "orphan", "name": "late"}))
	assert.Equal(t, []string{"5"}, succeeded(resp))
	orphan, err := f.ch.GetTrace(ctx, f.a.ProjectID, "orphan")
	require.NoError(t, err)
	assert.Equal(t, "late", orphan.Name)
}

func TestInvalidEvents(t *testing.T) {
	f := setup(t)
	resp := send(t, f, f.a.ProjectAuth,
		envelopeOf("unknown-type", "trace-delete", "2025-05-01T10:00:00Z", ev{"id": "x"}),
		envelopeOf("no-body-id", "span-create", "2025-05-01T10:00:00Z", ev{"name": "x"}),
		envelopeOf("bad-ts", "span-create", "yesterday", ev{"id": "x"}),
		envelopeOf("bad-type", "observation-create", "2025-05-01T10:00:00Z", ev{"id": "x", "type": "TOOLBOX"}),
		envelopeOf("bad-level", "span-create", "2025-05-01T10:00:00Z", ev{"id": "y", "level": "LOUD"}),
		envelopeOf("bad-start", "span-create", "2025-05-01T10:00:00Z", ev{"id": "z", "startTime": "noon"}),
		envelopeOf("prompt-half", "generation-create", "2025-05-01T10:00:00Z", ev{"id": "g", "promptName": "p"}),
		envelopeOf("run-item", "dataset-run-item-create", "2025-05-01T10:00:00Z", ev{"id": "r"}),
		ev{"id": 7, "type": "span-create", "timestamp": "2025-05-01T10:00:00Z", "body": ev{"id": "q"}},
		envelopeOf("ok", "observation-create", "2025-05-01T10:00:00Z", ev{"id": "fine", "type": "EVENT"}),
	)
	assert.Equal(t, []string{"ok"}, succeeded(resp))
	want := map[string]int{"unknown-type": 400, "no-body-id": 400, "bad-ts": 400, "bad-type": 400, "bad-level": 400,
		"bad-start": 400, "prompt-half": 400, "run-item": 400, "unknown": 400}
	assert.Equal(t, want, failed(resp))
	for _, e := range resp.Errors {
		switch e.ID {
		case "bad-type":
			assert.Contains(t, e.Error, "body.type")
		case "bad-level":
			assert.Contains(t, e.Error, "body.level")
		case "bad-ts":
			assert.Contains(t, e.Error, "timestamp")
		}
	}

	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/ingestion", f.a.ProjectAuth, map[string]any{"events": []any{}})
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "batch")
	rec = apitest.Do(t, f.h, http.MethodPost, "/api/public/ingestion", f.a.OrgAuth, map[string]any{"batch": []any{}})
	assert.Equal(t, http.StatusForbidden, rec.Code)
	rec = apitest.Do(t, f.h, http.MethodPost, "/api/public/ingestion", "", map[string]any{"batch": []any{}})
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}

func TestIsolation(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	send(t, f, f.a.ProjectAuth,
		envelopeOf("1", "trace-create", "2025-05-01T10:00:00Z", ev{"id": "shared-id", "name": "a's trace", "userId": "alice"}),
		envelopeOf("2", "span-create", "2025-05-01T10:00:00Z", ev{"id": "shared-span", "traceId": "shared-id", "name": "a's span"}))
	// b sends updates for the same ids: they must not merge into a's rows.
	resp := send(t, f, f.b.ProjectAuth,
		envelopeOf("3", "trace-create", "2025-05-01T10:00:01Z", ev{"id": "shared-id", "userId": "mallory"}),
		envelopeOf("4", "span-update", "2025-05-01T10:00:01Z", ev{"id": "shared-span", "traceId": "shared-id", "output": "b's"}))
	assert.Empty(t, resp.Errors)

	a, err := f.ch.GetTrace(ctx, f.a.ProjectID, "shared-id")
	require.NoError(t, err)
	assert.Equal(t, "alice", a.UserID)
	assert.Equal(t, "a's trace", a.Name)
	for _, o := range a.Observations {
		assert.Empty(t, o.Output)
	}
	b, err := f.ch.GetTrace(ctx, f.b.ProjectID, "shared-id")
	require.NoError(t, err)
	assert.Equal(t, "mallory", b.UserID)
	assert.Empty(t, b.Name, "b's trace starts from nothing of a's")
}

// TestOddBodies sends well-formed JSON of unexpected shapes: each gets a 400
// or per-event errors, never a 500.
func TestOddBodies(t *testing.T) {
	f := setup(t)
	for _, body := range []string{`{"batch": null}`, `{"batch": [null, 1, "x", []]}`, `{"batch": [{"id":"e","type":"span-create","timestamp":"2025-05-01T10:00:00Z","body":{"id":"s","usage":"many","metadata":[1]}}]}`} {
		req := httptest.NewRequest(http.MethodPost, "/api/public/ingestion", strings.NewReader(body))
		req.Header.Set("Authorization", f.a.ProjectAuth)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusMultiStatus}, rec.Code, body)
	}
}

// A public key alone stores the batch's scores and nothing else: every other
// event fails on its own with 401, as Langfuse answers it.
func TestPublicKeyAloneWritesOnlyScores(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	resp := send(t, f, f.a.ProjectBearer,
		envelopeOf("e-score", "score-create", "2025-05-01T10:00:00.000Z", ev{"id": "bearer-score", "traceId": "t1", "name": "thumbs", "value": 1}),
		envelopeOf("e-trace", "trace-create", "2025-05-01T10:00:00.000Z", ev{"id": "bearer-trace", "name": "chat"}),
		envelopeOf("e-span", "span-create", "2025-05-01T10:00:00.000Z", ev{"id": "bearer-span", "traceId": "bearer-trace"}),
		envelopeOf("e-log", "sdk-log", "2025-05-01T10:00:00.000Z", ev{"log": "hello"}),
	)
	assert.Equal(t, []string{"e-score"}, succeeded(resp))
	assert.Equal(t, map[string]int{"e-trace": 401, "e-span": 401, "e-log": 401}, failed(resp))
	for _, e := range resp.Errors {
		assert.Equal(t, "Authentication error", e.Message)
		assert.Equal(t, "Access Scope Denied", e.Error)
	}

	_, err := f.ch.GetScore(ctx, f.a.ProjectID, "bearer-score")
	require.NoError(t, err, "the score is stored in the key's project")
	_, err = f.ch.GetTrace(ctx, f.a.ProjectID, "bearer-trace")
	assert.ErrorIs(t, err, chstore.ErrNotFound, "nothing but scores is stored")

	// Existing ids and sources other than API are refused, each event on its own.
	resp = send(t, f, f.a.ProjectAuth,
		envelopeOf("e-eval", "score-create", "2025-05-01T10:00:00.000Z", ev{"id": "s-important", "traceId": "t1", "name": "q", "value": 0.1, "source": "EVAL"}))
	require.Equal(t, []string{"e-eval"}, succeeded(resp))
	resp = send(t, f, f.a.ProjectBearer,
		envelopeOf("e-over", "score-create", "2025-05-01T10:01:00.000Z", ev{"id": "s-important", "traceId": "t1", "name": "q", "value": 0.99}),
		envelopeOf("e-src", "score-create", "2025-05-01T10:01:00.000Z", ev{"traceId": "t1", "name": "q", "value": 1, "source": "EVAL"}),
		envelopeOf("e-new", "score-create", "2025-05-01T10:01:00.000Z", ev{"traceId": "t1", "name": "q", "value": 1}),
	)
	assert.Equal(t, []string{"e-new"}, succeeded(resp))
	assert.Equal(t, map[string]int{"e-over": 403, "e-src": 403}, failed(resp))
	kept, err := f.ch.GetScore(ctx, f.a.ProjectID, "s-important")
	require.NoError(t, err)
	assert.Equal(t, 0.1, kept.Value)
	assert.Equal(t, chstore.SourceEval, kept.Source)
	fresh, err := f.ch.GetScore(ctx, f.a.ProjectID, "e-new")
	require.NoError(t, err)
	assert.Equal(t, chstore.SourceAPI, fresh.Source)

	require.NoError(t, f.cp.RevokeAPIKey(ctx, f.a.OrgID, f.a.ProjectID, f.a.ProjectKeyID))
	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/ingestion", f.a.ProjectBearer, map[string]any{"batch": []any{}})
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "a revoked key's public key is refused: %s", rec.Body.String())
}

// While ClickHouse is down each event answers 503, to be sent again, and
// the batch still answers 207.
func TestClickHouseDownIs503PerEvent(t *testing.T) {
	cp := apitest.ControlPlane(t)
	tenant := apitest.Seed(t, cp, "a")
	down, err := chstore.Connect(context.Background(), chstore.Config{DSN: "clickhouse://127.0.0.1:1", Database: "down"}, false, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	h, err := httpx.NewRouter(Routes(down, cp, zap.NewNop()), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	f := fixture{h: h, cp: cp, a: tenant}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	r := send(t, f, tenant.ProjectAuth,
		envelopeOf("e1", "score-create", now, ev{"id": "s1", "traceId": "t1", "name": "q", "value": 1}),
		envelopeOf("e2", "trace-create", now, ev{"id": "t2", "name": "legacy"}))
	assert.Equal(t, map[string]int{"e1": http.StatusServiceUnavailable, "e2": http.StatusServiceUnavailable}, failed(r))
}
