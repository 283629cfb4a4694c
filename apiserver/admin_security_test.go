package apiserver

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

// testAdminKey is the admin API key newServer's router takes.
const testAdminKey = "test-admin-key-0123456789abcdef"

// adminRefused asserts that a tenant's key got a 401 from an admin route
// and learned nothing of tenant b.
func adminRefused(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	t.Helper()
	assert.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
	for _, v := range []string{s.b.OrgID, s.b.ProjectID, s.b.OrgKeyID, s.b.ProjectKeyID, "Org b"} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

func bOrg(suffix string) func(server) string {
	return func(s server) string { return "/api/admin/organizations/" + s.b.OrgID + suffix }
}

// adminAttacks aim tenant a's organization key, which manages its own
// organization through the public API, at the instance admin API.
var adminAttacks = map[string]attack{
	"GET /api/admin/organizations": {auth: orgKey, target: fixed("/api/admin/organizations"), check: adminRefused},
	"POST /api/admin/organizations": {auth: orgKey, target: fixed("/api/admin/organizations"),
		body: func(server) any { return map[string]any{"name": "made by a"} }, check: adminRefused},
	"GET /api/admin/organizations/{organizationId}": {auth: orgKey, target: bOrg(""), check: adminRefused},
	"PUT /api/admin/organizations/{organizationId}": {auth: orgKey, target: bOrg(""),
		body: func(server) any { return map[string]any{"name": "hijacked"} }, check: adminRefused},
	"DELETE /api/admin/organizations/{organizationId}":       {auth: orgKey, target: bOrg(""), check: adminRefused},
	"GET /api/admin/organizations/{organizationId}/apiKeys":  {auth: orgKey, target: bOrg("/apiKeys"), check: adminRefused},
	"POST /api/admin/organizations/{organizationId}/apiKeys": {auth: orgKey, target: bOrg("/apiKeys"), body: func(server) any { return map[string]any{} }, check: adminRefused},
	"DELETE /api/admin/organizations/{organizationId}/apiKeys/{apiKeyId}": {auth: orgKey,
		target: func(s server) string { return "/api/admin/organizations/" + s.b.OrgID + "/apiKeys/" + s.b.OrgKeyID }, check: adminRefused},
}

func init() {
	maps.Copy(attacks, adminAttacks)
}

// After tenant a's attempts, and with a project key too, tenant b's
// organization, keys and data are whole; the admin key itself sees b.
func TestAdminAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, adminAttacks)
	projectAttacks := map[string]attack{}
	for name, a := range adminAttacks {
		a.auth = projectKey
		projectAttacks[name] = a
	}
	runAttacks(t, s, projectAttacks)

	rec := apitest.Do(t, s.h, http.MethodGet, "/api/admin/organizations/"+s.b.OrgID+"/apiKeys", "Bearer "+testAdminKey, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), s.b.OrgKeyID)
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/admin/organizations/"+s.b.OrgID, "Bearer "+testAdminKey, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"name":"Org b"`)
	assert.Contains(t, rec.Body.String(), s.b.ProjectID)
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/admin/organizations", "Bearer "+testAdminKey, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.NotContains(t, rec.Body.String(), "made by a")
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/organizations/projects", s.b.OrgAuth, nil)
	assert.Equal(t, http.StatusOK, rec.Code, "b's organization key still works: %s", rec.Body.String())
	assertDataOfBWhole(t, s)
}
