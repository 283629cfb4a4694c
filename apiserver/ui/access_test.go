package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

var pathParam = regexp.MustCompile(`\{([a-zA-Z]+)(\.\.\.)?\}`)

// TestEveryRouteChecksTheRole runs every registered page and action of the
// UI as each role (and as someone outside the organization) and checks
// that exactly the roles access.Allows lets through get through: a role
// that may not gets 403, an outsider 404. Actions are posted with empty
// forms, so the allowed ones fail validation instead of changing things.
func TestEveryRouteChecksTheRole(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	ctx := context.Background()
	type person struct {
		name              string
		orgRole, projRole controlplane.Role // projRole "" means the org role applies
		client            *uitest.Client
	}
	people := []*person{
		{name: "owner", orgRole: controlplane.RoleOwner},
		{name: "admin", orgRole: controlplane.RoleAdmin},
		{name: "member", orgRole: controlplane.RoleMember},
		{name: "viewer", orgRole: controlplane.RoleViewer},
		// A viewer of the organization who administers this one project.
		{name: "project-admin", orgRole: controlplane.RoleViewer, projRole: controlplane.RoleAdmin},
		// A member of the organization who may only read this project.
		{name: "project-viewer", orgRole: controlplane.RoleMember, projRole: controlplane.RoleViewer},
	}
	for _, p := range people {
		email := p.name + "@example.com"
		if p.orgRole == controlplane.RoleOwner {
			email = env.OwnerEmail
		} else {
			u := env.AddMember(t, email, p.orgRole)
			if p.projRole != "" {
				require.NoError(t, env.Store.SetProjectRole(ctx, env.OrgID, env.ProjectID, u.ID, p.projRole))
			}
		}
		p.client = uitest.NewClient(t, env.URL).NoRedirects()
		password := uitest.MemberPassword
		if p.orgRole == controlplane.RoleOwner {
			password = env.OwnerPassword
		}
		signIn(t, p.client, email, password)
	}
	// Someone who owns another organization, and is no member of this one.
	stranger, err := env.Store.CreateUser(ctx, controlplane.NewUser{Email: "outsider@example.com", Password: uitest.MemberPassword})
	require.NoError(t, err)
	_, err = env.Store.CreateOrganizationWithOwner(ctx, "Elsewhere", stranger.ID)
	require.NoError(t, err)
	outsider := uitest.NewClient(t, env.URL).NoRedirects()
	signIn(t, outsider, stranger.Email, uitest.MemberPassword)

	routes := env.Server.UI().Routes()
	checked := 0
	for _, rt := range routes {
		if rt.Access != web.InProject && rt.Access != web.InOrganization {
			continue
		}
		path := pathParam.ReplaceAllStringFunc(rt.Path, func(m string) string {
			switch m {
			case "{projectId}":
				return env.ProjectID
			case "{orgId}":
				return env.OrgID
			}
			return "missing"
		})
		for _, p := range people {
			role := p.orgRole
			if rt.Access == web.InProject && p.projRole != "" {
				role = p.projRole
			}
			res := send(t, p.client, rt.Method, path)
			if access.Allows(role, rt.Action) {
				assert.NotEqual(t, http.StatusForbidden, res.Status, "%s %s as %s (%s) was refused", rt.Method, rt.Path, p.name, role)
				assert.Less(t, res.Status, 500, "%s %s as %s: %s", rt.Method, rt.Path, p.name, res.Body)
			} else {
				assert.Equal(t, http.StatusForbidden, res.Status, "%s %s as %s (%s) needs %s", rt.Method, rt.Path, p.name, role, rt.Action)
			}
		}
		res := send(t, outsider, rt.Method, path)
		assert.Equal(t, http.StatusNotFound, res.Status, "%s %s as someone outside the organization", rt.Method, rt.Path)
		checked++
	}
	assert.Greater(t, checked, 15, "the routes were found")
}

func signIn(t *testing.T, c *uitest.Client, email, password string) {
	t.Helper()
	c.Get("/auth/sign-in")
	res := c.Post("/auth/sign-in", map[string][]string{"email": {email}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, res.Status, "sign in as %s: %s", email, res.Body)
	c.Get("/setup") // a page with the signed-in CSRF token
}

func send(t *testing.T, c *uitest.Client, method, path string) *uitest.Response {
	t.Helper()
	if method == http.MethodGet {
		return c.Get(path)
	}
	return c.Do(method, path, strings.NewReader("_csrf="+c.CSRF()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-CSRF-Token": {c.CSRF()}})
}
