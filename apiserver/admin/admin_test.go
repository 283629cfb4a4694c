package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/projects"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

const adminKey = "instance-admin-key-0123456789"

var adminAuth = "Bearer " + adminKey

type fixture struct {
	h     http.Handler
	store *controlplane.Store
	a     apitest.Tenant
}

// newFixture serves the admin routes with the admin key, beside the
// project routes (to use the keys the admin API makes), over a store
// holding tenant a.
func newFixture(t *testing.T, key string) fixture {
	t.Helper()
	store := apitest.ControlPlane(t)
	f := fixture{store: store, a: apitest.Seed(t, store, "a")}
	var err error
	f.h, err = httpx.NewRouter(append(Routes(store), projects.Routes(store)...), httpx.Options{Verifier: store, AdminKey: key})
	require.NoError(t, err)
	return f
}

func (f fixture) do(t *testing.T, method, path string, body any) (int, string) {
	t.Helper()
	rec := apitest.Do(t, f.h, method, path, adminAuth, body)
	return rec.Code, rec.Body.String()
}

// Every operation, as a client of the admin API sees it: statuses, field
// names, and a key that works at once.
func TestOrganizationsLifecycle(t *testing.T) {
	f := newFixture(t, adminKey)

	code, body := f.do(t, http.MethodPost, "/api/admin/organizations", map[string]any{"name": " Acme ", "metadata": map[string]any{"tier": "gold"}})
	require.Equal(t, http.StatusCreated, code, body)
	created := decode[Organization](t, body)
	assert.NotEmpty(t, created.ID)
	assert.Equal(t, "Acme", created.Name)
	assert.JSONEq(t, `{"tier":"gold"}`, string(created.Metadata))
	assert.Empty(t, created.Projects)
	for _, field := range []string{`"id":`, `"name":`, `"createdAt":`, `"metadata":`, `"projects":[]`} {
		assert.Contains(t, body, field)
	}

	code, body = f.do(t, http.MethodPost, "/api/admin/organizations", map[string]any{"metadata": map[string]any{}})
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "organization name")
	code, body = f.do(t, http.MethodPost, "/api/admin/organizations", map[string]any{"name": "x", "metadata": []int{1}})
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "metadata")

	code, body = f.do(t, http.MethodGet, "/api/admin/organizations", nil)
	require.Equal(t, http.StatusOK, code, body)
	list := decode[Organizations](t, body)
	require.Len(t, list.Organizations, 2, "Acme and the seeded org")
	i := slices.IndexFunc(list.Organizations, func(o Organization) bool { return o.ID == f.a.OrgID })
	require.GreaterOrEqual(t, i, 0, body)
	require.Len(t, list.Organizations[i].Projects, 1)
	p := list.Organizations[i].Projects[0]
	assert.Equal(t, f.a.ProjectID, p.ID)
	assert.JSONEq(t, `{}`, string(p.Metadata))
	assert.Contains(t, body, `"updatedAt":`)
	assert.JSONEq(t, `{}`, string(list.Organizations[i].Metadata), "no metadata reads as {}")

	code, body = f.do(t, http.MethodGet, "/api/admin/organizations/"+created.ID, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, created.ID, decode[Organization](t, body).ID)

	code, body = f.do(t, http.MethodPut, "/api/admin/organizations/"+created.ID, map[string]any{"name": "Acme Corp"})
	require.Equal(t, http.StatusOK, code, body)
	updated := decode[Organization](t, body)
	assert.Equal(t, "Acme Corp", updated.Name)
	assert.JSONEq(t, `{"tier":"gold"}`, string(updated.Metadata), "omitted metadata is kept")
	code, body = f.do(t, http.MethodPut, "/api/admin/organizations/"+created.ID, map[string]any{"name": "Acme Corp", "metadata": map[string]any{"tier": "free"}})
	require.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"tier":"free"}`, string(decode[Organization](t, body).Metadata))
	code, body = f.do(t, http.MethodPut, "/api/admin/organizations/"+created.ID, map[string]any{"metadata": map[string]any{}})
	assert.Equal(t, http.StatusBadRequest, code, "name is required: %s", body)

	// Keys: created with the secret once, listed without it, usable at once.
	code, body = f.do(t, http.MethodPost, "/api/admin/organizations/"+created.ID+"/apiKeys", map[string]any{"note": "provisioning"})
	require.Equal(t, http.StatusCreated, code, body)
	key := decode[projects.CreatedAPIKey](t, body)
	assert.True(t, strings.HasPrefix(key.PublicKey, "pk-lf-"), key.PublicKey)
	assert.True(t, strings.HasPrefix(key.SecretKey, "sk-lf-"), key.SecretKey)
	assert.Equal(t, "provisioning", key.Note)
	for _, field := range []string{`"id":`, `"createdAt":`, `"publicKey":`, `"secretKey":`, `"displaySecretKey":`, `"note":`} {
		assert.Contains(t, body, field)
	}
	stored, err := f.store.ListAPIKeys(context.Background(), created.ID, "")
	require.NoError(t, err)
	require.Len(t, stored, 1)
	assert.Equal(t, apikey.ScopeOrganization, stored[0].Scope)

	code, body = f.do(t, http.MethodGet, "/api/admin/organizations/"+created.ID+"/apiKeys", nil)
	require.Equal(t, http.StatusOK, code, body)
	keys := decode[projects.APIKeyList](t, body)
	require.Len(t, keys.APIKeys, 1)
	assert.Equal(t, key.ID, keys.APIKeys[0].ID)
	assert.Equal(t, key.DisplaySecretKey, keys.APIKeys[0].DisplaySecretKey)
	assert.NotContains(t, body, key.SecretKey, "the secret is shown once")

	orgAuth := apitest.Basic(key.PublicKey, key.SecretKey)
	rec := apitest.Do(t, f.h, http.MethodPost, "/api/public/projects", orgAuth, map[string]any{"name": "web"})
	require.Equal(t, http.StatusCreated, rec.Code, "the new key manages its organization: %s", rec.Body.String())
	project := apitest.Decode[projects.Project](t, rec)
	assert.Equal(t, created.ID, project.Organization.ID)

	code, body = f.do(t, http.MethodGet, "/api/admin/organizations/"+created.ID, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"name":"web"`, "the organization lists its projects")

	// Deletion needs the projects gone first.
	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+created.ID, nil)
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "existing projects")

	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+created.ID+"/apiKeys/"+key.ID, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"success":true}`, body)
	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/organizations/projects", orgAuth, nil)
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "a revoked key stops working: %s", rec.Body.String())
	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+created.ID+"/apiKeys/"+key.ID, nil)
	assert.Equal(t, http.StatusNotFound, code, body)

	require.NoError(t, f.store.DeleteProject(context.Background(), created.ID, project.ID))
	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+created.ID, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"success":true}`, body)

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/api/admin/organizations/" + created.ID, nil},
		{http.MethodPut, "/api/admin/organizations/" + created.ID, map[string]any{"name": "back"}},
		{http.MethodDelete, "/api/admin/organizations/" + created.ID, nil},
		{http.MethodGet, "/api/admin/organizations/" + created.ID + "/apiKeys", nil},
		{http.MethodPost, "/api/admin/organizations/" + created.ID + "/apiKeys", map[string]any{}},
		{http.MethodDelete, "/api/admin/organizations/" + created.ID + "/apiKeys/" + key.ID, nil},
		{http.MethodGet, "/api/admin/organizations/missing", nil},
	} {
		code, body = f.do(t, req.method, req.path, req.body)
		assert.Equal(t, http.StatusNotFound, code, "%s %s: %s", req.method, req.path, body)
		assert.Contains(t, body, "Organization not found", "%s %s", req.method, req.path)
	}
	code, body = f.do(t, http.MethodGet, "/api/admin/organizations", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, body, created.ID, "a deleted organization is not listed")
}

// Deleting an organization leaves none of its keys working: its own, and
// those of the projects it had.
func TestDeleteOrganizationRevokesKeys(t *testing.T) {
	f := newFixture(t, adminKey)
	ctx := context.Background()
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/projects", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	code, body := f.do(t, http.MethodDelete, "/api/admin/organizations/"+f.a.OrgID, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	rec = apitest.Do(t, f.h, http.MethodGet, "/api/public/projects", f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, "a refused deletion changes nothing: %s", rec.Body.String())

	require.NoError(t, f.store.DeleteProject(ctx, f.a.OrgID, f.a.ProjectID))
	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+f.a.OrgID, nil)
	require.Equal(t, http.StatusOK, code, body)
	for _, auth := range []string{f.a.ProjectAuth, f.a.OrgAuth} {
		for _, path := range []string{"/api/public/projects", "/api/public/organizations/projects"} {
			rec = apitest.Do(t, f.h, http.MethodGet, path, auth, nil)
			assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s: %s", path, rec.Body.String())
		}
	}
}

// A project's key is not the organization's: the admin routes neither list
// nor revoke it.
func TestOrganizationKeysExcludeProjectKeys(t *testing.T) {
	f := newFixture(t, adminKey)
	code, body := f.do(t, http.MethodGet, "/api/admin/organizations/"+f.a.OrgID+"/apiKeys", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, f.a.OrgKeyID)
	assert.NotContains(t, body, f.a.ProjectKeyID)

	code, body = f.do(t, http.MethodDelete, "/api/admin/organizations/"+f.a.OrgID+"/apiKeys/"+f.a.ProjectKeyID, nil)
	assert.Equal(t, http.StatusNotFound, code, body)
	rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/projects", f.a.ProjectAuth, nil)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

// The admin key is off, wrong or right: 404, 401, 200; the tenants' keys
// never open the admin API.
func TestAdminKeyGate(t *testing.T) {
	off := newFixture(t, "")
	on := newFixture(t, adminKey)
	routes := Routes(nil)
	require.Len(t, routes, 8)
	for _, rt := range routes {
		path := strings.NewReplacer("{organizationId}", on.a.OrgID, "{apiKeyId}", on.a.OrgKeyID).Replace(rt.Path)
		var body any
		if rt.Doc.Body != nil {
			body = map[string]any{"name": "x"}
		}
		name := rt.Method + " " + rt.Path
		assert.Equal(t, httpx.AdminKey, rt.Access, name)

		rec := apitest.Do(t, off.h, rt.Method, path, adminAuth, body)
		assert.Equal(t, http.StatusNotFound, rec.Code, "off: %s: %s", name, rec.Body.String())
		assert.Contains(t, rec.Body.String(), "Route not found", name)

		for _, auth := range []string{"", "Bearer wrong-admin-key-0123456789", "Bearer " + adminKey[:len(adminKey)-1],
			on.a.OrgAuth, on.a.ProjectAuth, on.a.ProjectBearer, apitest.Basic("admin", adminKey)} {
			rec = apitest.Do(t, on.h, rt.Method, path, auth, body)
			assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s with %q: %s", name, auth, rec.Body.String())
		}
	}
	// Nothing changed through the refused requests.
	code, body := on.do(t, http.MethodGet, "/api/admin/organizations/"+on.a.OrgID+"/apiKeys", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, on.a.OrgKeyID)
	code, body = on.do(t, http.MethodGet, "/api/admin/organizations", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, decode[Organizations](t, body).Organizations, 1)
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	return v
}
