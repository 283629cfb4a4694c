package comments_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

func TestCommentsWhereTheirObjectsAre(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.ChatTrace(t, "t-1", "chat", "alice", time.Now().Add(-time.Hour))
	p, err := env.Store.CreatePrompt(context.Background(), env.ProjectID, controlplane.NewPrompt{Name: "greeting", Prompt: json.RawMessage(`"hi"`)})
	require.NoError(t, err)
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	owner := uitest.NewClient(t, env.URL)
	owner.SignIn(env.OwnerEmail, env.OwnerPassword)
	owner.NoRedirects()
	proj := "/project/" + env.ProjectID
	post := "/project/" + env.ProjectID + "/comments"

	for _, c := range []struct{ page, typ, id, back string }{
		{proj + "/traces/t-1", "TRACE", "t-1", proj + "/traces/t-1"},
		{proj + "/traces/t-1?observation=t-1-llm", "OBSERVATION", "t-1-llm", proj + "/traces/t-1?observation=t-1-llm"},
		{proj + "/sessions/session-alice", "SESSION", "session-alice", proj + "/sessions/session-alice"},
		{proj + "/prompts/greeting?version=1", "PROMPT", p.ID, proj + "/prompts/greeting?version=1"},
	} {
		res := owner.Get(c.page)
		require.Equal(t, http.StatusOK, res.Status, c.page)
		assert.Contains(t, res.Body, `data-testid="add-comment-`+strings.ToLower(c.typ)+`"`, c.page)
		res = owner.Post(post, url.Values{"object_type": {c.typ}, "object_id": {c.id}, "content": {"<script>alert(1)</script> on " + c.typ}, "back": {c.back}})
		require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
		assert.Equal(t, c.back, res.Header.Get("Location"), "back to the page")
		res = owner.Get(c.page)
		assert.Contains(t, res.Body, "&lt;script&gt;alert(1)&lt;/script&gt; on "+c.typ, c.page)
		assert.Contains(t, res.Body, "owner@example.com ·")
	}
	res := owner.Get(proj + "/traces/t-1")
	assert.NotContains(t, res.Body, "on OBSERVATION", "the trace shows its own thread")

	res = owner.Post(post, url.Values{"object_type": {"TRACE"}, "object_id": {"t-1"}, "content": {"x"}, "back": {"https://evil.example/"}})
	assert.Equal(t, proj, res.Header.Get("Location"), "a form cannot send people elsewhere")
	res = owner.Post(post, url.Values{"object_type": {"DATASET"}, "object_id": {"t-1"}, "content": {"x"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)

	list, _, err := env.Store.ListComments(context.Background(), env.ProjectID, controlplane.CommentFilter{ObjectType: "TRACE", ObjectID: "t-1", Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, list)
	mine := list[0].ID

	member := uitest.NewClient(t, env.URL)
	member.SignIn("member@example.com", uitest.MemberPassword)
	member.NoRedirects()
	member.Get(proj + "/traces/t-1")
	assert.Equal(t, http.StatusNotFound, member.Post(post+"/"+mine+"/delete", url.Values{}).Status, "only the author deletes a comment")
	require.Equal(t, http.StatusSeeOther, member.Post(post, url.Values{"object_type": {"TRACE"}, "object_id": {"t-1"}, "content": {"me too"}}).Status)

	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	res = viewer.Get(proj + "/traces/t-1")
	assert.Contains(t, res.Body, "me too", "viewers read comments")
	assert.NotContains(t, res.Body, `data-testid="add-comment-trace"`)
	assert.Equal(t, http.StatusForbidden, viewer.Post(post, url.Values{"object_type": {"TRACE"}, "object_id": {"t-1"}, "content": {"x"}}).Status)

	require.Equal(t, http.StatusSeeOther, owner.Post(post+"/"+mine+"/delete", url.Values{"back": {proj + "/traces/t-1"}}).Status)
	_, err = env.Store.GetComment(context.Background(), env.ProjectID, mine)
	assert.ErrorIs(t, err, controlplane.ErrNotFound)
}
