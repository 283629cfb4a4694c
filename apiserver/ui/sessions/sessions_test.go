package sessions_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

func TestSessionsListAndReplay(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	start := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "turn-1", "first turn", "alice", start)
	env.ChatTrace(t, "turn-2", "second turn", "alice", start.Add(10*time.Minute))
	env.ChatTrace(t, "other", "someone else", "bob", start)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	res := c.Get("/project/" + env.ProjectID + "/sessions")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `href="/project/`+env.ProjectID+`/sessions/session-alice"`)
	assert.Contains(t, res.Body, "session-bob")

	res = c.Get("/project/" + env.ProjectID + "/sessions/session-alice")
	require.Equal(t, http.StatusOK, res.Status)
	body := res.Body
	first, second := strings.Index(body, "first turn"), strings.Index(body, "second turn")
	assert.True(t, first > 0 && first < second, "turns in time order")
	assert.NotContains(t, body, "someone else")
	assert.Contains(t, body, "idle …", "the 10-minute pause is marked")
	assert.Contains(t, body, "It ships <em>tomorrow</em>.", "outputs rendered")
	assert.Contains(t, body, "$0.0024", "cost of both turns")
	assert.Contains(t, body, `href="/project/`+env.ProjectID+`/users/alice"`)

	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/sessions/no-such-session").Status)
}
