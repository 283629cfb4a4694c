package comments

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func TestComments(t *testing.T) {
	cp, ch := apitest.ControlPlane(t), chtest.Store(t)
	a, b := apitest.Seed(t, cp, "a"), apitest.Seed(t, cp, "b")
	h, err := httpx.NewRouter(Routes(cp, ch), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	trace := "0123456789abcdef0123456789abcdef"
	obs := apitest.Obs(a.ProjectID, trace, "00000000000000aa", 0)
	obs.SessionID = "session-a"
	apitest.Insert(t, ch, obs)
	prompt, err := cp.CreatePrompt(context.Background(), a.ProjectID, controlplane.NewPrompt{Name: "greeting", Prompt: json.RawMessage(`"hi"`)})
	require.NoError(t, err)

	call := func(method, path, auth string, body any, want int) map[string]any {
		t.Helper()
		rec := apitest.Do(t, h, method, path, auth, body)
		require.Equal(t, want, rec.Code, rec.Body.String())
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return out
	}
	var ids []string
	for _, o := range []struct{ typ, id string }{{"TRACE", trace}, {"OBSERVATION", "00000000000000aa"}, {"SESSION", "session-a"}, {"PROMPT", prompt.ID}} {
		out := call(http.MethodPost, "/api/public/comments", a.ProjectAuth, map[string]any{"objectType": o.typ, "objectId": o.id,
			"content": "on the " + o.typ, "authorUserId": "user-1"}, http.StatusOK)
		ids = append(ids, out["id"].(string))
	}
	for _, bad := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"objectType": "TRACE", "objectId": "no-such-trace", "content": "x"}, http.StatusNotFound},
		{map[string]any{"objectType": "PROMPT", "objectId": "no-such-prompt", "content": "x"}, http.StatusNotFound},
		{map[string]any{"objectType": "DATASET", "objectId": trace, "content": "x"}, http.StatusBadRequest},
		{map[string]any{"objectType": "TRACE", "objectId": trace, "content": ""}, http.StatusBadRequest},
		{map[string]any{"objectType": "TRACE", "objectId": trace, "content": "x", "projectId": b.ProjectID}, http.StatusBadRequest},
	} {
		call(http.MethodPost, "/api/public/comments", a.ProjectAuth, bad.body, bad.want)
	}
	call(http.MethodPost, "/api/public/comments", b.ProjectAuth, map[string]any{"objectType": "TRACE", "objectId": trace, "content": "x"},
		http.StatusNotFound)

	out := call(http.MethodGet, "/api/public/comments?objectType=TRACE&objectId="+trace, a.ProjectAuth, nil, http.StatusOK)
	data := out["data"].([]any)
	require.Len(t, data, 1)
	c := data[0].(map[string]any)
	assert.Equal(t, "on the TRACE", c["content"])
	assert.Equal(t, "user-1", c["authorUserId"])
	assert.Equal(t, a.ProjectID, c["projectId"])
	assert.EqualValues(t, 1, out["meta"].(map[string]any)["totalItems"])
	out = call(http.MethodGet, "/api/public/comments?authorUserId=user-1&limit=2&page=2", a.ProjectAuth, nil, http.StatusOK)
	assert.Len(t, out["data"], 2)
	assert.EqualValues(t, 4, out["meta"].(map[string]any)["totalItems"])
	call(http.MethodGet, "/api/public/comments?objectId="+trace, a.ProjectAuth, nil, http.StatusBadRequest)
	out = call(http.MethodGet, "/api/public/comments", b.ProjectAuth, nil, http.StatusOK)
	assert.Empty(t, out["data"], "another project's key sees none")

	out = call(http.MethodGet, "/api/public/comments/"+ids[3], a.ProjectAuth, nil, http.StatusOK)
	assert.Equal(t, "PROMPT", out["objectType"])
	call(http.MethodGet, "/api/public/comments/"+ids[3], b.ProjectAuth, nil, http.StatusNotFound)
}
