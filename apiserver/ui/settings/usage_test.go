package settings_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

func TestUsage(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.ChatTrace(t, "t-1", "chat", "alice", time.Now().Add(-time.Minute))
	env.ChatTrace(t, "t-2", "chat", "bob", time.Now().Add(-time.Minute))
	env.Ingest(t, uitest.Event{Type: "score-create", Body: map[string]any{"id": "s-1", "traceId": "t-1", "name": "q", "value": 1}})
	_, err := env.Store.CreateProject(context.Background(), env.OrgID, controlplane.NewProject{Name: "Empty"})
	require.NoError(t, err)
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	month := time.Now().UTC().Format("2006-01")

	res := c.Get("/organization/" + env.OrgID)
	assert.Contains(t, res.Body, `data-testid="usage-link"`)
	res = c.Get("/organization/" + env.OrgID + "/usage")
	require.Equal(t, http.StatusOK, res.Status)
	row := res.Body[strings.Index(res.Body, `data-month="`+month+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	// Two chat traces of three observations each, and one score.
	assert.Contains(t, row, `<td class="num">2</td><td class="num">6</td><td class="num">1</td><td class="num"><strong>9</strong></td>`)
	assert.Contains(t, res.Body, `data-project="Chatbot"`)
	assert.NotContains(t, res.Body, `data-project="Empty"`, "a project without data has no rows")

	res = c.Get("/project/" + env.ProjectID + "/settings/usage")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "<strong>9</strong>")

	member := uitest.NewClient(t, env.URL)
	member.SignIn("member@example.com", uitest.MemberPassword)
	assert.Equal(t, http.StatusForbidden, member.Get("/organization/"+env.OrgID+"/usage").Status, "usage is for admins and owners")
	assert.Equal(t, http.StatusForbidden, member.Get("/project/"+env.ProjectID+"/settings/usage").Status)
}
