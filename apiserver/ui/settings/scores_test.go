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

func TestScoreConfigs(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	page := "/project/" + env.ProjectID + "/settings/scores"
	c.Get(page)

	res := c.Post(page, url.Values{"name": {"accuracy"}, "data_type": {"NUMERIC"}, "min": {"0"}, "max": {"1"}, "description": {"<b>how right</b>"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = c.Post(page, url.Values{"name": {"tone"}, "data_type": {"CATEGORICAL"}, "categories": {"kind=1, rude=0"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = c.Post(page, url.Values{"name": {"labels only"}, "data_type": {"CATEGORICAL"}, "categories": {"low, mid, high"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)

	res = c.Post(page, url.Values{"name": {"broken"}, "data_type": {"NUMERIC"}, "min": {"one"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "The minimum must be a number")
	assert.Contains(t, res.Body, `value="broken"`, "the form keeps what was typed")
	res = c.Post(page, url.Values{"name": {"inverted"}, "data_type": {"NUMERIC"}, "min": {"5"}, "max": {"1"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)

	cs, _, err := env.Store.ListScoreConfigs(context.Background(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	byName := map[string]controlplane.ScoreConfig{}
	for _, sc := range cs {
		byName[sc.Name] = sc
	}
	assert.Equal(t, []controlplane.ScoreCategory{{Label: "kind", Value: 1}, {Label: "rude", Value: 0}}, byName["tone"].Categories)
	assert.Equal(t, []controlplane.ScoreCategory{{Label: "low", Value: 0}, {Label: "mid", Value: 1}, {Label: "high", Value: 2}}, byName["labels only"].Categories)

	res = c.Get(page)
	assert.Contains(t, res.Body, "0 … 1")
	assert.Contains(t, res.Body, "kind = 1, rude = 0")
	assert.Contains(t, res.Body, "&lt;b&gt;how right&lt;/b&gt;")

	archive := page + "/" + byName["tone"].ID + "/archive"
	require.Equal(t, http.StatusSeeOther, c.Post(archive, url.Values{"archived": {"true"}}).Status)
	got, err := env.Store.GetScoreConfig(context.Background(), env.ProjectID, byName["tone"].ID)
	require.NoError(t, err)
	assert.True(t, got.IsArchived)
	require.Equal(t, http.StatusSeeOther, c.Post(archive, url.Values{"archived": {"false"}}).Status)
	got, err = env.Store.GetScoreConfig(context.Background(), env.ProjectID, byName["tone"].ID)
	require.NoError(t, err)
	assert.False(t, got.IsArchived)
	assert.Equal(t, http.StatusNotFound, c.Post(page+"/nope/archive", url.Values{"archived": {"true"}}).Status)

	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	res = viewer.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, "add-score-config", "no form for a viewer")
	assert.Equal(t, http.StatusForbidden, viewer.Post(page, url.Values{"name": {"x"}, "data_type": {"BOOLEAN"}}).Status)
	assert.Equal(t, http.StatusForbidden, viewer.Post(archive, url.Values{"archived": {"true"}}).Status)
}
