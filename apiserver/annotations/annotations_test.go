package annotations

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func ptr[T any](v T) *T { return &v }

type fixture struct {
	h     http.Handler
	cp    *controlplane.Store
	ch    *chstore.Store
	a, b  apitest.Tenant
	confs map[string]controlplane.ScoreConfig
}

func setup(t *testing.T) fixture {
	t.Helper()
	cp, ch := apitest.ControlPlane(t), chtest.Store(t)
	f := fixture{cp: cp, ch: ch, a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b"), confs: map[string]controlplane.ScoreConfig{}}
	ctx := context.Background()
	for _, n := range []controlplane.NewScoreConfig{
		{Name: "correct", DataType: controlplane.ScoreBoolean},
		{Name: "quality", DataType: controlplane.ScoreNumeric, MinValue: ptr(1.0), MaxValue: ptr(5.0)},
		{Name: "tone", DataType: controlplane.ScoreCategorical, Categories: []controlplane.ScoreCategory{{Value: 0, Label: "bad"}, {Value: 1, Label: "good"}}},
		{Name: "elsewhere", DataType: controlplane.ScoreBoolean},
	} {
		cfg, err := cp.CreateScoreConfig(ctx, f.a.ProjectID, n)
		require.NoError(t, err)
		f.confs[n.Name] = cfg
	}
	var err error
	f.h, err = httpx.NewRouter(Routes(cp, ch), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

func call(t *testing.T, f fixture, method, path, auth string, body any, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := apitest.Do(t, f.h, method, path, auth, body)
	require.Equal(t, want, rec.Code, rec.Body.String())
	return rec
}

func TestAnnotationQueueFlow(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	obs := apitest.Obs(f.a.ProjectID, "0123456789abcdef0123456789abcdef", "00000000000000aa", 0)
	obs.Environment = "production"
	apitest.Insert(t, f.ch, obs)

	configIDs := []string{f.confs["correct"].ID, f.confs["quality"].ID, f.confs["tone"].ID}
	q := apitest.Decode[Queue](t, call(t, f, http.MethodPost, "/api/public/annotation-queues", f.a.ProjectAuth,
		map[string]any{"name": "review", "description": "daily review", "scoreConfigIds": configIDs}, http.StatusOK))
	assert.Equal(t, configIDs, q.ScoreConfigIDs)
	assert.Equal(t, "daily review", *q.Description)
	call(t, f, http.MethodPost, "/api/public/annotation-queues", f.b.ProjectAuth,
		map[string]any{"name": "steal", "scoreConfigIds": configIDs}, http.StatusNotFound)
	call(t, f, http.MethodPost, "/api/public/annotation-queues", f.a.ProjectAuth,
		map[string]any{"name": "", "scoreConfigIds": []string{}}, http.StatusBadRequest)

	base := "/api/public/annotation-queues/" + q.ID
	traceItem := apitest.Decode[Item](t, call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth,
		map[string]any{"objectId": "trace-1", "objectType": "TRACE"}, http.StatusOK))
	assert.Equal(t, "PENDING", traceItem.Status)
	assert.Nil(t, traceItem.CompletedAt)
	again := apitest.Decode[Item](t, call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth,
		map[string]any{"objectId": "trace-1", "objectType": "TRACE"}, http.StatusOK))
	assert.Equal(t, traceItem.ID, again.ID, "an object is queued once")
	obsItem := apitest.Decode[Item](t, call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth,
		map[string]any{"objectId": obs.ID, "objectType": "OBSERVATION"}, http.StatusOK))
	call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth, map[string]any{"objectId": "s-1", "objectType": "SESSION"}, http.StatusOK)
	call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth, map[string]any{"objectId": "x", "objectType": "DATASET"}, http.StatusBadRequest)

	pending := apitest.Decode[httpx.List[Item]](t, call(t, f, http.MethodGet, base+"/items?status=PENDING", f.a.ProjectAuth, nil, http.StatusOK))
	assert.EqualValues(t, 3, pending.Meta.TotalItems)
	call(t, f, http.MethodGet, base+"/items?status=DONE", f.a.ProjectAuth, nil, http.StatusBadRequest)

	// Completing the trace item records the reviewer's scores.
	for name, body := range map[string]map[string]any{
		"config not of the queue": {"scores": []map[string]any{{"configId": f.confs["elsewhere"].ID, "value": 1}}},
		"out of range":            {"scores": []map[string]any{{"configId": f.confs["quality"].ID, "value": 9}}},
		"unknown category":        {"scores": []map[string]any{{"configId": f.confs["tone"].ID, "value": "meh"}}},
		"nothing to do":           {},
		"bad status":              {"status": "DONE"},
	} {
		rec := call(t, f, http.MethodPatch, base+"/items/"+traceItem.ID, f.a.ProjectAuth, body, http.StatusBadRequest)
		assert.NotEmpty(t, rec.Body.String(), name)
	}
	scoresBody := map[string]any{"userId": "reviewer-1", "scores": []map[string]any{
		{"configId": f.confs["correct"].ID, "value": 1, "comment": "right"},
		{"configId": f.confs["quality"].ID, "value": 4},
		{"configId": f.confs["tone"].ID, "value": "good"},
	}}
	done := apitest.Decode[Item](t, call(t, f, http.MethodPatch, base+"/items/"+traceItem.ID, f.a.ProjectAuth, scoresBody, http.StatusOK))
	assert.Equal(t, "COMPLETED", done.Status)
	require.NotNil(t, done.CompletedAt)
	// Scoring again replaces the scores rather than adding more.
	call(t, f, http.MethodPatch, base+"/items/"+traceItem.ID, f.a.ProjectAuth, scoresBody, http.StatusOK)
	scores, total, err := f.ch.ListScores(ctx, chstore.ScoreFilter{ProjectID: f.a.ProjectID, TraceID: "trace-1"})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	byName := map[string]chstore.Score{}
	for _, sc := range scores {
		byName[sc.Name] = sc
		assert.Equal(t, chstore.SourceAnnotation, sc.Source)
		assert.Equal(t, q.ID, sc.QueueID)
		assert.Equal(t, "reviewer-1", sc.AuthorUserID)
	}
	assert.Equal(t, "True", byName["correct"].StringValue)
	assert.Equal(t, "right", byName["correct"].Comment)
	assert.Equal(t, 4.0, byName["quality"].Value)
	assert.Equal(t, "good", byName["tone"].StringValue)
	assert.Equal(t, 1.0, byName["tone"].Value, "the category's value")
	assert.Equal(t, f.confs["tone"].ID, byName["tone"].ConfigID)

	call(t, f, http.MethodPatch, base+"/items/"+obsItem.ID, f.a.ProjectAuth,
		map[string]any{"scores": []map[string]any{{"configId": f.confs["correct"].ID, "value": 0}}}, http.StatusOK)
	obsScores, _, err := f.ch.ListScores(ctx, chstore.ScoreFilter{ProjectID: f.a.ProjectID, ObservationID: obs.ID})
	require.NoError(t, err)
	require.Len(t, obsScores, 1)
	assert.Equal(t, obs.TraceID, obsScores[0].TraceID)
	assert.Equal(t, "production", obsScores[0].Environment)

	reopened := apitest.Decode[Item](t, call(t, f, http.MethodPatch, base+"/items/"+traceItem.ID, f.a.ProjectAuth,
		map[string]any{"status": "PENDING"}, http.StatusOK))
	assert.Nil(t, reopened.CompletedAt)
	completed := apitest.Decode[httpx.List[Item]](t, call(t, f, http.MethodGet, base+"/items?status=COMPLETED", f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, completed.Data, 1)
	assert.Equal(t, obsItem.ID, completed.Data[0].ID)

	got := apitest.Decode[Item](t, call(t, f, http.MethodGet, base+"/items/"+obsItem.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, "COMPLETED", got.Status)
	call(t, f, http.MethodDelete, base+"/items/"+traceItem.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodGet, base+"/items/"+traceItem.ID, f.a.ProjectAuth, nil, http.StatusNotFound)

	list := apitest.Decode[httpx.List[Queue]](t, call(t, f, http.MethodGet, "/api/public/annotation-queues", f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, list.Data, 1)
	got2 := apitest.Decode[Queue](t, call(t, f, http.MethodGet, base, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, q, got2)
}

func TestAnnotationQueueIsolation(t *testing.T) {
	f := setup(t)
	q := apitest.Decode[Queue](t, call(t, f, http.MethodPost, "/api/public/annotation-queues", f.a.ProjectAuth,
		map[string]any{"name": "review", "scoreConfigIds": []string{f.confs["correct"].ID}}, http.StatusOK))
	base := "/api/public/annotation-queues/" + q.ID
	it := apitest.Decode[Item](t, call(t, f, http.MethodPost, base+"/items", f.a.ProjectAuth,
		map[string]any{"objectId": "t", "objectType": "TRACE"}, http.StatusOK))
	b := f.b.ProjectAuth
	call(t, f, http.MethodGet, base, b, nil, http.StatusNotFound)
	call(t, f, http.MethodGet, base+"/items", b, nil, http.StatusNotFound)
	call(t, f, http.MethodPost, base+"/items", b, map[string]any{"objectId": "t2", "objectType": "TRACE"}, http.StatusNotFound)
	call(t, f, http.MethodGet, base+"/items/"+it.ID, b, nil, http.StatusNotFound)
	call(t, f, http.MethodPatch, base+"/items/"+it.ID, b, map[string]any{"status": "COMPLETED"}, http.StatusNotFound)
	call(t, f, http.MethodDelete, base+"/items/"+it.ID, b, nil, http.StatusNotFound)
	call(t, f, http.MethodGet, base+"/assignments", b, nil, http.StatusNotFound)
	list := apitest.Decode[httpx.List[Queue]](t, call(t, f, http.MethodGet, "/api/public/annotation-queues", b, nil, http.StatusOK))
	assert.Empty(t, list.Data)
	got := apitest.Decode[Item](t, call(t, f, http.MethodGet, base+"/items/"+it.ID, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, "PENDING", got.Status)
}

func TestAssignments(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	q := apitest.Decode[Queue](t, call(t, f, http.MethodPost, "/api/public/annotation-queues", f.a.ProjectAuth,
		map[string]any{"name": "review", "scoreConfigIds": []string{}}, http.StatusOK))
	member, err := f.cp.CreateUser(ctx, controlplane.NewUser{Email: "rev@example.com", Name: "Rev"})
	require.NoError(t, err)
	require.NoError(t, f.cp.SetMembership(ctx, f.a.OrgID, member.ID, controlplane.RoleMember))
	outsider, err := f.cp.CreateUser(ctx, controlplane.NewUser{Email: "out@example.com", Name: "Out"})
	require.NoError(t, err)
	require.NoError(t, f.cp.SetMembership(ctx, f.b.OrgID, outsider.ID, controlplane.RoleMember))

	path := "/api/public/annotation-queues/" + q.ID + "/assignments"
	a := apitest.Decode[Assignment](t, call(t, f, http.MethodPost, path, f.a.ProjectAuth, map[string]any{"userId": member.ID}, http.StatusOK))
	assert.Equal(t, Assignment{UserID: member.ID, QueueID: q.ID, ProjectID: f.a.ProjectID}, a)
	call(t, f, http.MethodPost, path, f.a.ProjectAuth, map[string]any{"userId": outsider.ID}, http.StatusNotFound)
	call(t, f, http.MethodPost, path, f.a.ProjectAuth, map[string]any{}, http.StatusBadRequest)
	call(t, f, http.MethodPost, path, f.b.ProjectAuth, map[string]any{"userId": outsider.ID}, http.StatusNotFound)
	list := apitest.Decode[Assignments](t, call(t, f, http.MethodGet, path, f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, []Assignment{a}, list.Data)
	call(t, f, http.MethodDelete, path, f.b.ProjectAuth, map[string]any{"userId": member.ID}, http.StatusNotFound)
	call(t, f, http.MethodDelete, path, f.a.ProjectAuth, map[string]any{"userId": member.ID}, http.StatusOK)
	call(t, f, http.MethodDelete, path, f.a.ProjectAuth, map[string]any{"userId": member.ID}, http.StatusNotFound)
}
