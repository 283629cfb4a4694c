package settings_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

var shownSecret = regexp.MustCompile(`gb-whsec_[0-9a-f]{64}`)

func TestAutomationsPage(t *testing.T) {
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) { c.Evaluation.WebhookAllowedHosts = []string{"hooks.example.com"} }})
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	page := "/project/" + env.ProjectID + "/settings/automations"
	res := c.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-testid="add-automation"`)
	assert.Contains(t, c.Get("/project/"+env.ProjectID+"/settings").Body, `href="`+page+`"`, "the settings tabs link the page")

	// The signing secret is in the answer to the post, and nowhere after.
	res = c.Post(page, url.Values{"name": {"deploy"}, "url": {"https://hooks.example.com/in"}, "events": {"created", "updated"},
		"headers": {"Authorization: Bearer hidden-token\nX-Team: prompts"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	secret := shownSecret.FindString(res.Body)
	require.NotEmpty(t, secret, "the secret is shown once")
	assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	res = c.Get(page)
	assert.Contains(t, res.Body, `data-automation="deploy"`)
	assert.NotContains(t, res.Body, secret)
	assert.NotContains(t, res.Body, "hidden-token", "header values are never shown")
	assert.Contains(t, res.Body, "Authorization, X-Team")

	as, _, err := env.Store.ListAutomations(t.Context(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, as, 1)
	a := as[0]
	assert.Equal(t, []string{"created", "updated"}, a.Events)

	for name, form := range map[string]url.Values{
		"evaluation.webhook_allowed_hosts": {"name": {"x"}, "url": {"http://169.254.169.254/latest"}, "events": {"created"}},
		"name at least one of created":     {"name": {"x"}, "url": {"https://hooks.example.com/in"}},
		"is not a &#34;Name: value&#34; line": {"name": {"x"}, "url": {"https://hooks.example.com/in"}, "events": {"created"},
			"headers": {"no colon here"}},
		"exists": {"name": {"deploy"}, "url": {"https://hooks.example.com/in"}, "events": {"created"}},
	} {
		res := c.Post(page, form)
		assert.Equal(t, http.StatusBadRequest, res.Status, name)
		assert.Contains(t, res.Body, name)
	}

	require.Equal(t, http.StatusSeeOther, c.Post(page+"/"+a.ID+"/toggle", url.Values{}).Status)
	got, err := env.Store.GetAutomation(t.Context(), env.ProjectID, a.ID)
	require.NoError(t, err)
	assert.False(t, got.Active)
	assert.Contains(t, c.Get(page).Body, "Switch on")

	// A test event shows in the log, pending while no worker runs here.
	res = c.Post(page+"/"+a.ID+"/test", url.Values{})
	require.Equal(t, http.StatusSeeOther, res.Status)
	assert.Equal(t, page+"/"+a.ID, res.Header.Get("Location"))
	_, err = env.Store.CreatePrompt(t.Context(), env.ProjectID, controlplane.NewPrompt{Name: "greet", Prompt: json.RawMessage(`"hi"`)})
	require.NoError(t, err)
	res = c.Get(page + "/" + a.ID)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-status="PENDING"`)
	assert.Contains(t, res.Body, "glassbox-test-event v1")
	assert.NotContains(t, res.Body, "greet v1", "a switched-off automation gets no events")

	member := uitest.NewClient(t, env.URL)
	member.SignIn("member@example.com", uitest.MemberPassword)
	assert.Equal(t, http.StatusForbidden, member.Get(page).Status)
	assert.Equal(t, http.StatusForbidden, member.Get(page+"/"+a.ID).Status)
	assert.Equal(t, http.StatusForbidden, member.Post(page+"/"+a.ID+"/delete", url.Values{}).Status)
	assert.NotContains(t, member.Get("/project/"+env.ProjectID+"/settings").Body, `href="`+page+`"`, "nor a tab for a member")

	require.Equal(t, http.StatusSeeOther, c.Post(page+"/"+a.ID+"/delete", url.Values{}).Status)
	assert.Equal(t, http.StatusNotFound, c.Get(page+"/"+a.ID).Status)
	assert.Equal(t, http.StatusNotFound, c.Post(page+"/"+a.ID+"/test", url.Values{}).Status)
}
