package sessions

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

type fixture struct {
	h    http.Handler
	a, b apitest.Tenant
}

// setup stores in project a session s1 (two traces, at Base and Base+1m,
// environment prod) and session s2 (one trace at Base+1h); in project b a
// session also named s1.
func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	f := fixture{a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}
	span := func(project, trace, id, session, env string, offset time.Duration) {
		o := apitest.Obs(project, trace, id, offset)
		o.SessionID, o.Environment, o.IsRoot, o.TraceName = session, env, true, "trace "+trace[:2]
		apitest.Insert(t, ch, o)
	}
	span(f.a.ProjectID, "01000000000000000000000000000000", "0100000000000000", "s1", "prod", 0)
	span(f.a.ProjectID, "02000000000000000000000000000000", "0200000000000000", "s1", "prod", time.Minute)
	span(f.a.ProjectID, "03000000000000000000000000000000", "0300000000000000", "s2", "default", time.Hour)
	span(f.a.ProjectID, "04000000000000000000000000000000", "0400000000000000", "", "default", 2*time.Hour)
	span(f.b.ProjectID, "05000000000000000000000000000000", "0500000000000000", "s1", "prod", 0)
	var err error
	f.h, err = httpx.NewRouter(Routes(ch), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

func sessionIDs(list httpx.List[Session]) []string {
	out := []string{}
	for _, s := range list.Data {
		out = append(out, s.ID)
	}
	return out
}

func TestList(t *testing.T) {
	f := setup(t)
	for query, want := range map[string][]string{
		"":                                   {"s2", "s1"},
		"environment=prod":                   {"s1"},
		"fromTimestamp=2024-05-01T12:30:00Z": {"s2"},
		"toTimestamp=2024-05-01T12:30:00Z":   {"s1"},
		"limit=1&page=2":                     {"s1"},
	} {
		t.Run(query, func(t *testing.T) {
			rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/sessions?"+query, f.a.ProjectAuth, nil)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.Equal(t, want, sessionIDs(apitest.Decode[httpx.List[Session]](t, rec)))
		})
	}
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/sessions?limit=1", f.a.ProjectAuth, nil)
	list := apitest.Decode[httpx.List[Session]](t, rec)
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 1, TotalItems: 2, TotalPages: 2}, list.Meta)
	assert.JSONEq(t, `{"id":"s2","createdAt":"2024-05-01T13:00:00.000Z","projectId":"project-a","environment":"default"}`,
		string(mustJSON(t, list.Data[0])))

	for _, query := range []string{"page=-1", "limit=0", "fromTimestamp=soon"} {
		assert.Equal(t, http.StatusBadRequest, apitest.Do(t, f.h, http.MethodGet, "/api/public/sessions?"+query, f.a.ProjectAuth, nil).Code, query)
	}
}

func TestGet(t *testing.T) {
	f := setup(t)
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/sessions/s1", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	s := apitest.Decode[WithTraces](t, rec)
	assert.Equal(t, "s1", s.ID)
	assert.Equal(t, "prod", s.Environment)
	require.Len(t, s.Traces, 2, "project b's trace in its own s1 is not included")
	assert.Equal(t, "01000000000000000000000000000000", s.Traces[0].ID, "oldest first")
	assert.Equal(t, "02000000000000000000000000000000", s.Traces[1].ID)
	assert.Equal(t, "s1", *s.Traces[0].SessionID)

	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/sessions/nope", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusNotFound, rec.Code)
	assert.Equal(t, "Session nope not found within authorized project", apitest.Decode[map[string]string](t, rec)["message"])
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
