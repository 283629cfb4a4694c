package dashboards_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// The home dashboard of a project with data draws its figures from the
// metrics engine: the counts, the cost and the charts of the chat traces.
func TestHomeDashboard(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "t1", "support-chat", "alice", at)
	env.ChatTrace(t, "t2", "support-chat", "bob", at.Add(time.Minute))
	env.ChatTrace(t, "t3", "billing-chat", "alice", at.Add(2*time.Minute))
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	res := c.Get("/project/" + env.ProjectID + "?range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	tile := func(name string) string {
		i := strings.Index(res.Body, `data-widget="`+name+`"`)
		require.Positive(t, i, "tile %s", name)
		end := strings.Index(res.Body[i:], "</section>")
		return res.Body[i : i+end]
	}
	assert.Contains(t, tile("Traces"), ">3<")
	assert.Contains(t, tile("Observations"), ">9<")
	assert.Contains(t, tile("Total cost"), "$0.0036")
	assert.Contains(t, tile("Users"), ">2<")
	assert.Contains(t, tile("Cost by model"), "gpt-4o")
	assert.Contains(t, tile("Traces by name"), "support-chat")
	assert.Contains(t, tile("Traces over time"), "<polygon", "an area chart")
	assert.Contains(t, tile("Generation latency by name"), "answer")
	assert.Contains(t, tile("Errors over time"), "No data in this time range.")

	// An empty window says so rather than showing zeros as data.
	res = c.Get("/project/" + env.ProjectID + "?from=2020-01-01T00:00&to=2020-01-02T00:00")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "No data in this time range.")
}

var csrf = regexp.MustCompile(`action="([^"]+/widgets/([a-z0-9-]+)/delete)"`)

// A custom dashboard: created, widgets added (one refused with the
// engine's reason), drawn, moved and removed; escaped; and invisible from
// another project.
func TestCustomDashboard(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "t1", "support-chat", "alice", at)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	base := "/project/" + env.ProjectID + "/dashboards"

	c.Get(base)
	res := c.Post(base, url.Values{"name": {`Quality <script>alert(1)</script>`}, "description": {"what reviewers watch"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	dash := res.Header.Get("Location")
	require.True(t, strings.HasPrefix(dash, base+"/"))

	res = c.Get(dash)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "Quality &lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, res.Body, "<script>alert(1)")
	assert.Contains(t, res.Body, "No widgets yet.")

	add := func(form url.Values) *uitest.Response {
		c.Get(dash)
		return c.Post(dash+"/widgets", form)
	}
	res = add(url.Values{"name": {"Cost by model"}, "view": {"observations"}, "measure": {"totalCost"}, "agg": {"sum"},
		"dimension": {"providedModelName"}, "chart": {"HORIZONTAL_BAR"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = add(url.Values{"name": {"Generation latency"}, "view": {"observations"}, "measure": {"latency"}, "agg": {"p95"},
		"chart": {"LINE_TIME_SERIES"}, "filter_column": {"type"}, "filter_operator": {"="}, "filter_value": {"GENERATION"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = add(url.Values{"name": {"By user"}, "view": {"observations"}, "measure": {"count"}, "agg": {"p95"}, "chart": {"NUMBER"}})
	assert.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "count can only be counted", "a refused widget says why, with the form kept")
	assert.Contains(t, res.Body, `value="By user"`)

	res = c.Get(dash + "?range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	costTile := res.Body[strings.Index(res.Body, `data-widget="Cost by model"`):]
	assert.Contains(t, costTile[:strings.Index(costTile, "</section>")], "gpt-4o")
	latency := strings.Index(res.Body, `data-widget="Generation latency"`)
	assert.Greater(t, latency, strings.Index(res.Body, `data-widget="Cost by model"`), "added in order")
	assert.Contains(t, res.Body[latency:], "<polyline")

	// Move the latency chart first, then remove the cost chart.
	m := csrf.FindAllStringSubmatch(res.Body, -1)
	require.Len(t, m, 2)
	latencyID := m[1][2]
	res = c.Post(dash+"/widgets/"+latencyID+"/move", url.Values{"dir": {"up"}})
	require.Equal(t, http.StatusSeeOther, res.Status)
	res = c.Get(dash)
	assert.Less(t, strings.Index(res.Body, `data-widget="Generation latency"`), strings.Index(res.Body, `data-widget="Cost by model"`))
	res = c.Post(dash+"/widgets/"+m[0][2]+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, res.Status)
	res = c.Get(dash)
	assert.NotContains(t, res.Body, `data-widget="Cost by model"`)

	// A viewer reads but may not change it.
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	viewer.NoRedirects()
	res = viewer.Get(dash)
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, "Add a widget")
	assert.Equal(t, http.StatusForbidden, viewer.Post(dash+"/delete", nil).Status)

	// Without the CSRF token nothing changes.
	res = c.Do(http.MethodPost, dash+"/delete", strings.NewReader(""), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	assert.Equal(t, http.StatusForbidden, res.Status)

	// Another project's URL for it is a 404.
	other, err := env.Store.CreateProject(t.Context(), env.OrgID, controlplane.NewProject{Name: "other"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, c.Get(strings.Replace(dash, env.ProjectID, other.ID, 1)).Status)

	c.Get(dash)
	res = c.Post(dash+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, res.Status)
	assert.Equal(t, http.StatusNotFound, c.Get(dash).Status)
}
