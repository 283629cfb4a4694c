package automations

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

type apiFixture struct {
	h     http.Handler
	store *controlplane.Store
	box   *secretbox.Box
	a, b  apitest.Tenant
}

func setupAPI(t *testing.T, withKey bool) apiFixture {
	t.Helper()
	store := apitest.ControlPlane(t)
	var box *secretbox.Box
	if withKey {
		var err error
		box, err = secretbox.New([]byte(strings.Repeat("k", 32)))
		require.NoError(t, err)
	}
	webhooks, err := egress.Webhooks([]string{"hooks.example.com"})
	require.NoError(t, err)
	h, err := httpx.NewRouter(Routes(store, box, webhooks), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return apiFixture{h: h, store: store, box: box, a: apitest.Seed(t, store, "a"), b: apitest.Seed(t, store, "b")}
}

func call(t *testing.T, f apiFixture, method, path, auth string, body any, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := apitest.Do(t, f.h, method, path, auth, body)
	require.Equal(t, want, rec.Code, rec.Body.String())
	return rec
}

func TestAutomationRoutes(t *testing.T) {
	f := setupAPI(t, true)
	const base = "/api/public/automations"
	rec := call(t, f, http.MethodPost, base, f.a.ProjectAuth, map[string]any{"name": "deploy", "eventTypes": []string{"updated", "created"},
		"url": "https://hooks.example.com/in", "headers": map[string]string{"Authorization": "Bearer hidden-token"}}, http.StatusCreated)
	created := apitest.Decode[CreatedAutomation](t, rec)
	assert.NotContains(t, rec.Body.String(), "hidden-token")
	require.True(t, strings.HasPrefix(created.SigningSecret, "gb-whsec_"))
	assert.Equal(t, []string{"created", "updated"}, created.EventTypes)
	assert.Equal(t, []string{"Authorization"}, created.HeaderKeys)
	assert.True(t, created.Active)
	assert.True(t, strings.HasSuffix(created.DisplaySecret, created.SigningSecret[len(created.SigningSecret)-4:]))

	// The secret is shown once: reads show its display form only.
	rec = call(t, f, http.MethodGet, base+"/"+created.ID, f.a.ProjectAuth, nil, http.StatusOK)
	assert.NotContains(t, rec.Body.String(), created.SigningSecret)
	assert.NotContains(t, rec.Body.String(), "signingSecret")
	list := apitest.Decode[httpx.List[Automation]](t, call(t, f, http.MethodGet, base, f.a.ProjectAuth, nil, http.StatusOK))
	require.Len(t, list.Data, 1)
	assert.Equal(t, created.Automation, list.Data[0])
	assert.Empty(t, apitest.Decode[httpx.List[Automation]](t, call(t, f, http.MethodGet, base, f.b.ProjectAuth, nil, http.StatusOK)).Data)

	// Bad input names what was wrong.
	for body, want := range map[string]string{
		`{"name":"x","eventTypes":["renamed"],"url":"https://hooks.example.com"}`:                 "eventTypes",
		`{"name":"x","eventTypes":["created"],"url":"http://127.0.0.1:8123/"}`:                    "not listed in evaluation.webhook_allowed_hosts",
		`{"name":"x","eventTypes":["created"],"url":"ftp://hooks.example.com"}`:                   "url",
		`{"name":"","eventTypes":["created"],"url":"https://hooks.example.com"}`:                  "name",
		`{"name":"x","eventTypes":["created"],"url":"https://hooks.example.com","secret":"mine"}`: "secret",
	} {
		rec := call(t, f, http.MethodPost, base, f.a.ProjectAuth, json.RawMessage(body), http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), want, body)
	}
	call(t, f, http.MethodPost, base, f.a.ProjectAuth, map[string]any{"name": "deploy", "eventTypes": []string{"created"},
		"url": "https://hooks.example.com/in"}, http.StatusConflict)

	updated := apitest.Decode[Automation](t, call(t, f, http.MethodPatch, base+"/"+created.ID, f.a.ProjectAuth,
		map[string]any{"active": false, "eventTypes": []string{"deleted"}}, http.StatusOK))
	assert.False(t, updated.Active)
	assert.Equal(t, []string{"deleted"}, updated.EventTypes)
	assert.Equal(t, created.URL, updated.URL)
	call(t, f, http.MethodPatch, base+"/"+created.ID, f.a.ProjectAuth, map[string]any{"url": "https://elsewhere.example"}, http.StatusBadRequest)

	// A test event is queued, active or not, and shows in the log.
	d := apitest.Decode[Delivery](t, call(t, f, http.MethodPost, base+"/"+created.ID+"/test", f.a.ProjectAuth, nil, http.StatusAccepted))
	assert.Equal(t, "test", d.EventType)
	assert.Equal(t, controlplane.DeliveryPending, d.Status)
	assert.NotNil(t, d.NextAttemptAt)
	assert.Nil(t, d.StatusCode)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(d.Payload, &payload))
	assert.Equal(t, "test", payload["action"])
	call(t, f, http.MethodPost, base+"/"+created.ID+"/test", f.a.ProjectAuth, nil, http.StatusAccepted)

	page := apitest.Decode[httpx.List[Delivery]](t, call(t, f, http.MethodGet, base+"/"+created.ID+"/deliveries?limit=1&page=2",
		f.a.ProjectAuth, nil, http.StatusOK))
	assert.Equal(t, int64(2), page.Meta.TotalItems)
	assert.Equal(t, int64(2), page.Meta.TotalPages)
	require.Len(t, page.Data, 1)
	assert.Equal(t, d.ID, page.Data[0].ID, "newest first: the first test is on page 2")
	none := apitest.Decode[httpx.List[Delivery]](t, call(t, f, http.MethodGet, base+"/"+created.ID+"/deliveries?status=DELIVERED",
		f.a.ProjectAuth, nil, http.StatusOK))
	assert.Empty(t, none.Data)
	rec = call(t, f, http.MethodGet, base+"/"+created.ID+"/deliveries?status=LOST", f.a.ProjectAuth, nil, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "status")

	// Tenant b reaches none of it.
	for _, rt := range []struct{ method, path string }{
		{http.MethodGet, base + "/" + created.ID}, {http.MethodPatch, base + "/" + created.ID},
		{http.MethodDelete, base + "/" + created.ID}, {http.MethodGet, base + "/" + created.ID + "/deliveries"},
		{http.MethodPost, base + "/" + created.ID + "/test"},
	} {
		var body any
		if rt.method == http.MethodPatch {
			body = map[string]any{"active": true}
		}
		call(t, f, rt.method, rt.path, f.b.ProjectAuth, body, http.StatusNotFound)
	}
	// Nor does an organization key.
	call(t, f, http.MethodGet, base, f.a.OrgAuth, nil, http.StatusForbidden)

	call(t, f, http.MethodDelete, base+"/"+created.ID, f.a.ProjectAuth, nil, http.StatusOK)
	call(t, f, http.MethodGet, base+"/"+created.ID, f.a.ProjectAuth, nil, http.StatusNotFound)
	_, _, err := f.store.ListAutomationDeliveries(context.Background(), f.a.ProjectID, created.ID, "", 0, 10)
	assert.ErrorIs(t, err, controlplane.ErrNotFound)
}

func TestAutomationsNeedTheEncryptionKey(t *testing.T) {
	f := setupAPI(t, false)
	rec := call(t, f, http.MethodPost, "/api/public/automations", f.a.ProjectAuth, map[string]any{"name": "x",
		"eventTypes": []string{"created"}, "url": "https://hooks.example.com"}, http.StatusServiceUnavailable)
	assert.Contains(t, rec.Body.String(), secretbox.EncryptionKeyEnv)
}
