package memberships_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type api struct {
	t          *testing.T
	base, auth string
}

func (a api) call(method, path, body string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	require.NoError(a.t, err)
	req.Header.Set("Authorization", a.auth)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out
}

func orgKey(t *testing.T, env *uitest.Env) api {
	t.Helper()
	k, secret, err := env.Store.CreateAPIKey(context.Background(), env.OrgID, "", controlplane.NewAPIKey{Note: "admin"})
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(k.PublicKey, secret)
	return api{t: t, base: env.URL, auth: req.Header.Get("Authorization")}
}

func TestOrganizationMemberships(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	a := orgKey(t, env)
	ctx := context.Background()
	bob, err := env.Store.CreateUser(ctx, controlplane.NewUser{Email: "bob@example.com", Name: "Bob"})
	require.NoError(t, err)

	status, body := a.call(http.MethodGet, "/api/public/organizations/memberships", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{map[string]any{"userId": env.Owner.ID, "role": "OWNER", "email": env.OwnerEmail, "name": "Olive Owner"}}, body["memberships"])

	status, body = a.call(http.MethodPut, "/api/public/organizations/memberships", `{"userId":"`+bob.ID+`","role":"MEMBER"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, map[string]any{"userId": bob.ID, "role": "MEMBER", "email": "bob@example.com", "name": "Bob"}, body)
	m, err := env.Store.GetMembership(ctx, env.OrgID, bob.ID)
	require.NoError(t, err)
	assert.Equal(t, controlplane.RoleMember, m.Role)

	// The rules of the UI: a key manages members like an admin, not owners.
	status, _ = a.call(http.MethodPut, "/api/public/organizations/memberships", `{"userId":"`+bob.ID+`","role":"OWNER"}`)
	assert.Equal(t, http.StatusForbidden, status, "no new owners")
	status, _ = a.call(http.MethodPut, "/api/public/organizations/memberships", `{"userId":"`+env.Owner.ID+`","role":"VIEWER"}`)
	assert.Equal(t, http.StatusForbidden, status, "no demoting owners")
	status, _ = a.call(http.MethodDelete, "/api/public/organizations/memberships", `{"userId":"`+env.Owner.ID+`"}`)
	assert.Equal(t, http.StatusForbidden, status, "no removing owners")

	for _, bad := range []string{`{"userId":"` + bob.ID + `","role":"ROOT"}`, `{"role":"ADMIN"}`, `not json`} {
		status, _ = a.call(http.MethodPut, "/api/public/organizations/memberships", bad)
		assert.Equal(t, http.StatusBadRequest, status, bad)
	}
	status, _ = a.call(http.MethodPut, "/api/public/organizations/memberships", `{"userId":"nobody","role":"ADMIN"}`)
	assert.Equal(t, http.StatusNotFound, status)

	status, body = a.call(http.MethodDelete, "/api/public/organizations/memberships", `{"userId":"`+bob.ID+`"}`)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, bob.ID, body["userId"])
	_, err = env.Store.GetMembership(ctx, env.OrgID, bob.ID)
	assert.ErrorIs(t, err, controlplane.ErrNotFound)

	// A project key is not an organization key.
	pk := api{t: t, base: env.URL}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(env.PublicKey, env.SecretKey)
	pk.auth = req.Header.Get("Authorization")
	status, _ = pk.call(http.MethodGet, "/api/public/organizations/memberships", "")
	assert.Equal(t, http.StatusForbidden, status)
}

func TestProjectMemberships(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	a := orgKey(t, env)
	ctx := context.Background()
	carol := env.AddMember(t, "carol@example.com", controlplane.RoleViewer)
	stranger, err := env.Store.CreateUser(ctx, controlplane.NewUser{Email: "stranger@example.com"})
	require.NoError(t, err)
	path := "/api/public/projects/" + env.ProjectID + "/memberships"

	status, body := a.call(http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{}, body["memberships"], "no project roles yet")

	status, body = a.call(http.MethodPut, path, `{"userId":"`+carol.ID+`","role":"ADMIN"}`)
	require.Equal(t, http.StatusOK, status, body)
	m, err := env.Store.GetMembership(ctx, env.OrgID, carol.ID)
	require.NoError(t, err)
	assert.Equal(t, controlplane.RoleAdmin, m.RoleIn(env.ProjectID))
	assert.Equal(t, controlplane.RoleViewer, m.Role)

	status, body = a.call(http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, body["memberships"], 1)

	status, _ = a.call(http.MethodPut, path, `{"userId":"`+stranger.ID+`","role":"VIEWER"}`)
	assert.Equal(t, http.StatusNotFound, status, "only organization members get project roles")
	status, _ = a.call(http.MethodPut, path, `{"userId":"`+carol.ID+`","role":"OWNER"}`)
	assert.Equal(t, http.StatusForbidden, status)
	status, _ = a.call(http.MethodGet, "/api/public/projects/elsewhere/memberships", "")
	assert.Equal(t, http.StatusNotFound, status)

	status, _ = a.call(http.MethodDelete, path, `{"userId":"`+carol.ID+`"}`)
	require.Equal(t, http.StatusOK, status)
	m, err = env.Store.GetMembership(ctx, env.OrgID, carol.ID)
	require.NoError(t, err)
	assert.Equal(t, controlplane.RoleViewer, m.RoleIn(env.ProjectID), "the organization role applies again")
	status, _ = a.call(http.MethodDelete, path, `{"userId":"`+carol.ID+`"}`)
	assert.Equal(t, http.StatusNotFound, status)
}
