package ui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// TestAlertForm posts the alert form: what the metrics engine or the rules
// refuse comes back with the form and the reason, kept as typed; a valid
// alert is listed, paused and deleted. Members see alerts but no form.
func TestAlertForm(t *testing.T) {
	env := uitest.Start(t, uitest.Options{Configure: func(cfg *apiserver.Config) {
		cfg.Evaluation.WebhookAllowedHosts = []string{"hooks.example.com"}
	}})
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	base := "/project/" + env.ProjectID + "/alerts"
	c.Get(base)
	form := func(edit func(url.Values)) url.Values {
		v := url.Values{"name": {"Errors"}, "view": {"observations"}, "agg": {"count"}, "measure": {"count"},
			"filter_column": {"level", "", ""}, "filter_operator": {"any of", "=", "="}, "filter_value": {"ERROR, WARNING", "", ""},
			"den_agg": {"count"}, "den_measure": {"count"}, "operator": {">="}, "threshold": {"0.25"}, "window": {"1h"},
			"interval": {"5m"}, "for": {"2"}, "url": {"https://hooks.example.com/T000/B000/secret"}, "format": {"slack"}}
		if edit != nil {
			edit(v)
		}
		return v
	}
	for name, tc := range map[string]struct {
		edit func(url.Values)
		want string
	}{
		"measure":   {func(v url.Values) { v.Set("measure", "speed") }, "query: "},
		"histogram": {func(v url.Values) { v.Set("agg", "histogram") }, "an alert compares one"},
		"threshold": {func(v url.Values) { v.Set("threshold", "high") }, "threshold &#34;high&#34; is not a number"},
		"number":    {func(v url.Values) { v["filter_operator"][0] = ">"; v["filter_value"][0] = "x" }, "is not a number"},
		"egress":    {func(v url.Values) { v.Set("url", "https://evil.example.org/") }, "Invalid target url"},
		"window":    {func(v url.Values) { v.Set("window", "3d") }, "not a duration"},
	} {
		res := c.Post(base, form(tc.edit))
		assert.Equal(t, http.StatusBadRequest, res.Status, name)
		assert.Contains(t, res.Body, tc.want, name)
		assert.Contains(t, res.Body, `value="Errors"`, "%s: the form keeps what was typed", name)
	}

	res := c.Post(base, form(nil))
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "(count count of observations where level any of [ERROR WARNING]) / (count count of observations) &gt;= 0.25 over 1h")
	assert.Contains(t, res.Body, "hooks.example.com (slack)")
	assert.NotContains(t, res.Body, "secret", "the webhook's path is not shown")
	alerts, _, err := env.Store.ListAlerts(t.Context(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	a := alerts[0]
	assert.Equal(t, 2, a.For)
	assert.JSONEq(t, `{"view":"observations","metric":{"measure":"count","aggregation":"count"},"filters":[]}`, string(a.Denominator))

	res = c.Post(base+"/"+a.ID+"/pause", url.Values{"paused": {"true"}, "from": {"alert"}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-testid="alert-name">Errors<`)
	got, err := env.Store.GetAlert(t.Context(), env.ProjectID, a.ID)
	require.NoError(t, err)
	assert.True(t, got.Paused)

	member := uitest.NewClient(t, env.URL)
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	member.SignIn("member@example.com", uitest.MemberPassword)
	res = member.Get(base)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "Errors")
	assert.NotContains(t, res.Body, `data-testid="new-alert"`)
	res = member.Post(base+"/"+a.ID+"/delete", nil)
	assert.Equal(t, http.StatusForbidden, res.Status)

	res = c.Post(base+"/"+a.ID+"/delete", nil)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "No alerts yet.")
}
