package projects

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

func setup(t *testing.T) (http.Handler, apitest.Tenant, apitest.Tenant) {
	store := apitest.ControlPlane(t)
	a, b := apitest.Seed(t, store, "a"), apitest.Seed(t, store, "b")
	h, err := httpx.NewRouter(Routes(store), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return h, a, b
}

func status(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func TestOwnProject(t *testing.T) {
	h, a, _ := setup(t)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/projects", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"data":[{"id":"project-a","name":"Project a","organization":{"id":"org-a","name":"Org a"},"metadata":{}}]}`,
		rec.Body.String())

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/projects", a.OrgAuth, nil), http.StatusForbidden)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/projects", "", nil), http.StatusUnauthorized)
}

func TestProjectLifecycle(t *testing.T) {
	h, a, b := setup(t)

	rec := apitest.Do(t, h, http.MethodPost, "/api/public/projects", a.OrgAuth,
		map[string]any{"name": "New", "metadata": map[string]any{"team": "x"}, "retention": 30})
	status(t, rec, http.StatusCreated)
	created := apitest.Decode[Project](t, rec)
	assert.Equal(t, "New", created.Name)
	assert.Equal(t, Organization{ID: "org-a", Name: "Org a"}, created.Organization)
	assert.JSONEq(t, `{"team":"x"}`, string(created.Metadata))
	assert.Equal(t, 30, created.RetentionDays)

	// Names are unique within the organization, not across organizations.
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/projects", a.OrgAuth, map[string]any{"name": "New"}), http.StatusConflict)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/projects", b.OrgAuth, map[string]any{"name": "New"}), http.StatusCreated)

	rec = apitest.Do(t, h, http.MethodPut, "/api/public/projects/"+created.ID, a.OrgAuth, map[string]any{"name": "Renamed"})
	status(t, rec, http.StatusOK)
	updated := apitest.Decode[Project](t, rec)
	assert.Equal(t, "Renamed", updated.Name)
	assert.JSONEq(t, `{"team":"x"}`, string(updated.Metadata), "omitted metadata is kept")
	assert.Equal(t, 30, updated.RetentionDays, "omitted retention is kept")

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/organizations/projects", a.OrgAuth, nil)
	status(t, rec, http.StatusOK)
	list := apitest.Decode[OrganizationProjects](t, rec)
	require.Len(t, list.Projects, 2)
	assert.Equal(t, []string{"project-a", created.ID}, []string{list.Projects[0].ID, list.Projects[1].ID})

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/projects/"+created.ID, a.OrgAuth, nil)
	status(t, rec, http.StatusOK)
	assert.True(t, apitest.Decode[DeletionResponse](t, rec).Success)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/projects/"+created.ID, a.OrgAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPut, "/api/public/projects/"+created.ID, a.OrgAuth, map[string]any{"name": "x"}), http.StatusNotFound)
}

func TestProjectValidation(t *testing.T) {
	h, a, _ := setup(t)
	for name, body := range map[string]any{
		"empty name":      map[string]any{"name": ""},
		"short retention": map[string]any{"name": "x", "retention": 2},
		"array metadata":  map[string]any{"name": "x", "metadata": []int{1}},
		"not an object":   "project",
	} {
		t.Run(name, func(t *testing.T) {
			rec := apitest.Do(t, h, http.MethodPost, "/api/public/projects", a.OrgAuth, body)
			status(t, rec, http.StatusBadRequest)
			assert.Equal(t, "InvalidRequestError", apitest.Decode[map[string]any](t, rec)["error"])
		})
	}
}

func TestAPIKeys(t *testing.T) {
	h, a, b := setup(t)
	keysPath := "/api/public/projects/project-a/apiKeys"

	rec := apitest.Do(t, h, http.MethodPost, keysPath, a.OrgAuth, map[string]any{"note": "ci"})
	status(t, rec, http.StatusCreated)
	key := apitest.Decode[CreatedAPIKey](t, rec)
	assert.Regexp(t, `^pk-lf-`, key.PublicKey)
	assert.Regexp(t, `^sk-lf-`, key.SecretKey)
	assert.Equal(t, key.SecretKey[:6]+"..."+key.SecretKey[len(key.SecretKey)-4:], key.DisplaySecretKey)

	// The new key works on project routes at once.
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/projects", apitest.Basic(key.PublicKey, key.SecretKey), nil), http.StatusOK)

	rec = apitest.Do(t, h, http.MethodGet, keysPath, a.OrgAuth, nil)
	status(t, rec, http.StatusOK)
	assert.NotContains(t, rec.Body.String(), key.SecretKey, "secrets are never listed")
	list := apitest.Decode[APIKeyList](t, rec)
	require.Len(t, list.APIKeys, 2)
	assert.Equal(t, "ci", list.APIKeys[1].Note)

	chosen := map[string]any{"publicKey": "pk-lf-chosen", "secretKey": "sk-lf-0123456789abcdef-0123456789abcdef0"}
	status(t, apitest.Do(t, h, http.MethodPost, keysPath, a.OrgAuth, chosen), http.StatusCreated)
	status(t, apitest.Do(t, h, http.MethodPost, keysPath, a.OrgAuth, chosen), http.StatusConflict)
	status(t, apitest.Do(t, h, http.MethodPost, keysPath, a.OrgAuth, map[string]any{"publicKey": "pk-lf-half"}), http.StatusBadRequest)

	// Another organization's key sees neither the project nor its keys.
	status(t, apitest.Do(t, h, http.MethodGet, keysPath, b.OrgAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPost, keysPath, b.OrgAuth, map[string]any{}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, keysPath+"/"+key.ID, b.OrgAuth, nil), http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodDelete, keysPath+"/"+key.ID, a.OrgAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"success":true}`, rec.Body.String())
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/projects", apitest.Basic(key.PublicKey, key.SecretKey), nil), http.StatusUnauthorized)
	status(t, apitest.Do(t, h, http.MethodDelete, keysPath+"/"+key.ID, a.OrgAuth, nil), http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/organizations/apiKeys", a.OrgAuth, nil)
	status(t, rec, http.StatusOK)
	orgKeys := apitest.Decode[APIKeyList](t, rec)
	require.Len(t, orgKeys.APIKeys, 1)
	assert.Equal(t, "organization key", orgKeys.APIKeys[0].Note)
}

func TestDeletedProjectKeysStopWorking(t *testing.T) {
	store := apitest.ControlPlane(t)
	a := apitest.Seed(t, store, "a")
	h, err := httpx.NewRouter(Routes(store), httpx.Options{Verifier: store})
	require.NoError(t, err)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/projects/"+a.ProjectID, a.OrgAuth, nil), http.StatusOK)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/projects", a.ProjectAuth, nil), http.StatusUnauthorized)
	_, err = store.GetProject(t.Context(), a.OrgID, a.ProjectID)
	assert.ErrorIs(t, err, controlplane.ErrNotFound)
}
