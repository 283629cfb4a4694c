package projectsettings

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

func status(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func TestSamplingSettings(t *testing.T) {
	store := apitest.ControlPlane(t)
	a, b := apitest.Seed(t, store, "a"), apitest.Seed(t, store, "b")
	h, err := httpx.NewRouter(Routes(store), httpx.Options{Verifier: store})
	require.NoError(t, err)
	path := "/api/public/projects/" + a.ProjectID + "/settings"

	rec := apitest.Do(t, h, http.MethodGet, path, a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"projectId":"project-a","sampling":{"rate":null,"environments":{}}}`, rec.Body.String())

	rec = apitest.Do(t, h, http.MethodPut, path, a.ProjectAuth,
		map[string]any{"sampling": map[string]any{"rate": 0.25, "environments": map[string]any{"Production": 0.1}}})
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"projectId":"project-a","sampling":{"rate":0.25,"environments":{"production":0.1}}}`, rec.Body.String())

	// What the sampling processor reloads.
	all, err := store.ProjectSampling(context.Background())
	require.NoError(t, err)
	require.Contains(t, all, a.ProjectID)
	assert.Equal(t, 0.25, *all[a.ProjectID].Rate)

	status(t, apitest.Do(t, h, http.MethodPut, path, a.ProjectAuth, map[string]any{"sampling": map[string]any{"rate": 2}}),
		http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodGet, path, b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPut, path, b.ProjectAuth, map[string]any{}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, path, a.OrgAuth, nil), http.StatusForbidden)
}
