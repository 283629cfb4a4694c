package settings_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Owners set the organization's retention on its page; admins do not see
// the form and are refused; values below the minimum are shown as errors.
func TestOrganizationRetention(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.AddMember(t, "admin@example.com", controlplane.RoleAdmin)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	page := "/organization/" + env.OrgID

	res := c.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-testid="org-settings"`)
	res = c.Post(page+"/settings", url.Values{"name": {"Renamed"}, "retention_days": {"30"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	org, err := env.Store.GetOrganization(context.Background(), env.OrgID)
	require.NoError(t, err)
	assert.Equal(t, 30, org.RetentionDays)
	assert.Equal(t, "Renamed", org.Name)
	days, err := env.Store.ProjectRetentions(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 30, days[env.ProjectID], "the project without its own retention takes the organization's")

	res = c.Post(page+"/settings", url.Values{"name": {"Renamed"}, "retention_days": {"2"}})
	assert.Contains(t, res.Body, "at least 3 days")
	org, err = env.Store.GetOrganization(context.Background(), env.OrgID)
	require.NoError(t, err)
	assert.Equal(t, 30, org.RetentionDays, "a refused value changes nothing")

	admin := uitest.NewClient(t, env.URL)
	admin.SignIn("admin@example.com", uitest.MemberPassword)
	res = admin.Get(page)
	assert.NotContains(t, res.Body, `data-testid="org-settings"`, "only owners manage the organization")
	res = admin.Post(page+"/settings", url.Values{"name": {"Hijacked"}, "retention_days": {"3"}})
	assert.Equal(t, http.StatusForbidden, res.Status)
}
