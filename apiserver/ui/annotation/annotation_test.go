package annotation_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type fixture struct {
	env             *uitest.Env
	queue           controlplane.AnnotationQueue
	quality, rating controlplane.ScoreConfig
	items           map[string]controlplane.AnnotationQueueItem // by object id
	queuePath       string
}

// setup queues two traces and a session for review with a categorical
// and a numeric config.
func setup(t *testing.T) *fixture {
	t.Helper()
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "t-1", "first <b>chat</b>", "alice", at)
	env.ChatTrace(t, "t-2", "second chat", "bob", at.Add(time.Minute))
	ctx := context.Background()
	lo, hi := 0.0, 10.0
	f := &fixture{env: env, items: map[string]controlplane.AnnotationQueueItem{}}
	var err error
	f.quality, err = env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: "quality", DataType: controlplane.ScoreCategorical,
		Categories: []controlplane.ScoreCategory{{Label: "good", Value: 1}, {Label: "bad", Value: 0}}})
	require.NoError(t, err)
	f.rating, err = env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: "rating", DataType: controlplane.ScoreNumeric, MinValue: &lo, MaxValue: &hi})
	require.NoError(t, err)
	f.queue, err = env.Store.CreateAnnotationQueue(ctx, env.ProjectID, controlplane.NewAnnotationQueue{Name: "Support review <i>",
		ScoreConfigIDs: []string{f.quality.ID, f.rating.ID}})
	require.NoError(t, err)
	for _, o := range []struct{ id, typ string }{{"t-1", controlplane.ObjectTrace}, {"t-2", controlplane.ObjectTrace}, {"session-alice", controlplane.ObjectSession}} {
		it, _, err := env.Store.AddAnnotationQueueItem(ctx, env.ProjectID, f.queue.ID, o.id, o.typ, "")
		require.NoError(t, err)
		f.items[o.id] = it
	}
	f.queuePath = "/project/" + env.ProjectID + "/annotation-queues/" + f.queue.ID
	return f
}

func TestReviewScoresAndCompletes(t *testing.T) {
	f := setup(t)
	env := f.env
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()

	res := c.Get("/project/" + env.ProjectID + "/annotation-queues")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "Support review &lt;i&gt;")
	assert.Contains(t, res.Body, "quality, rating")

	res = c.Get(f.queuePath + "/next")
	require.Equal(t, http.StatusFound, res.Status)
	first := f.queuePath + "/items/" + f.items["t-1"].ID
	assert.True(t, strings.HasSuffix(res.Header.Get("Location"), first), "the oldest pending item first")

	res = c.Get(first)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "first &lt;b&gt;chat&lt;/b&gt;", "the trace, escaped")
	assert.Contains(t, res.Body, "Where is my")
	assert.Contains(t, res.Body, "1 of 3 pending")
	assert.Contains(t, res.Body, `value="good" data-key="1"`)
	assert.Contains(t, res.Body, `value="bad" data-key="2"`)
	assert.Contains(t, res.Body, `name="score-`+f.rating.ID+`"`)

	res = c.Post(first, url.Values{"score-" + f.quality.ID: {"good"}, "score-" + f.rating.ID: {"42"}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "out of the config's range")
	assert.Contains(t, res.Body, "rating:")

	form := url.Values{"score-" + f.quality.ID: {"good"}, "score-" + f.rating.ID: {"7"}, "comment-" + f.quality.ID: {"clear answer"}}
	res = c.Post(first, form)
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	assert.Contains(t, res.Header.Get("Location"), "/next?after="+f.items["t-1"].ID)
	res = c.Post(first, form)
	require.Equal(t, http.StatusSeeOther, res.Status, "a second submission updates the same scores")

	ch := env.OpenClickHouse(t)
	scores, _, err := ch.ListScores(context.Background(), chstore.ScoreFilter{ProjectID: env.ProjectID, TraceID: "t-1"})
	require.NoError(t, err)
	byName := map[string]chstore.Score{}
	for _, s := range scores {
		if s.QueueID == f.queue.ID {
			assert.NotContains(t, byName, s.Name, "one score per config, however often the form was sent")
			byName[s.Name] = s
		}
	}
	assert.Equal(t, "good", byName["quality"].StringValue)
	assert.Equal(t, 1.0, byName["quality"].Value)
	assert.Equal(t, "clear answer", byName["quality"].Comment)
	assert.Equal(t, 7.0, byName["rating"].Value)
	assert.Equal(t, env.Owner.ID, byName["rating"].AuthorUserID)
	assert.Equal(t, chstore.SourceAnnotation, byName["rating"].Source)

	res = c.Get(f.queuePath + "/next?after=" + f.items["t-1"].ID)
	assert.True(t, strings.HasSuffix(res.Header.Get("Location"), "/items/"+f.items["t-2"].ID))
	res = c.Get(first)
	assert.Contains(t, res.Body, `value="good" data-key="1" checked`, "a completed item opens with the reviewer's scores")
	assert.Contains(t, res.Body, "Update and next")

	session := f.queuePath + "/items/" + f.items["session-alice"].ID
	res = c.Get(session)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "first &lt;b&gt;chat&lt;/b&gt;", "the session's traces")
	require.Equal(t, http.StatusSeeOther, c.Post(session, url.Values{"score-" + f.quality.ID: {"bad"}}).Status)
	sessionScores, _, err := ch.ListScores(context.Background(), chstore.ScoreFilter{ProjectID: env.ProjectID, SessionID: "session-alice"})
	require.NoError(t, err)
	require.Len(t, sessionScores, 1)
	assert.Equal(t, "bad", sessionScores[0].StringValue)

	res = c.Get(f.queuePath)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "<strong>2</strong> completed, <strong>1</strong> pending")
	assert.Contains(t, res.Body, `data-reviewer="owner@example.com"`)
	res = c.Get(f.queuePath + "/next?after=" + f.items["t-2"].ID)
	assert.True(t, strings.HasSuffix(res.Header.Get("Location"), "/items/"+f.items["t-2"].ID), "skipping the last pending item keeps it")
	require.Equal(t, http.StatusSeeOther, c.Post(f.queuePath+"/items/"+f.items["t-2"].ID, url.Values{}).Status, "completing without scores")
	res = c.Get(f.queuePath + "/next")
	assert.True(t, strings.HasSuffix(res.Header.Get("Location"), f.queuePath+"?done=1"), "nothing pending")

	assert.Equal(t, http.StatusNotFound, c.Get(f.queuePath+"/items/nope").Status)
	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/annotation-queues/nope").Status)
}

func TestQueuesCreateAssignAndRoles(t *testing.T) {
	f := setup(t)
	env := f.env
	member := env.AddMember(t, "reviewer@example.com", controlplane.RoleMember)
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	owner := uitest.NewClient(t, env.URL)
	owner.SignIn(env.OwnerEmail, env.OwnerPassword)
	owner.NoRedirects()
	list := "/project/" + env.ProjectID + "/annotation-queues"

	owner.Get(list)
	res := owner.Post(list, url.Values{"name": {"Second"}, "config": {f.rating.ID}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = owner.Post(list, url.Values{"name": {"Second"}, "config": {f.rating.ID}})
	assert.Equal(t, http.StatusConflict, res.Status, "names are unique; a refusal takes the API's status")
	res = owner.Post(list, url.Values{"name": {"Third"}, "config": {"no-such-config"}})
	assert.Equal(t, http.StatusNotFound, res.Status)

	owner.Get(f.queuePath)
	require.Equal(t, http.StatusSeeOther, owner.Post(f.queuePath+"/assignees", url.Values{"user": {member.ID}}).Status)
	assignees, err := env.Store.AnnotationQueueAssignees(context.Background(), env.ProjectID, f.queue.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{member.ID}, assignees)
	assert.Contains(t, owner.Get(f.queuePath).Body, `data-reviewer="reviewer@example.com"`)

	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	viewer.NoRedirects()
	item := f.queuePath + "/items/" + f.items["t-1"].ID
	res = viewer.Get(item)
	require.Equal(t, http.StatusOK, res.Status, "a viewer may look")
	assert.Contains(t, res.Body, "can read this queue but not score it")
	assert.Equal(t, http.StatusForbidden, viewer.Post(item, url.Values{"score-" + f.quality.ID: {"good"}}).Status)
	assert.Equal(t, http.StatusForbidden, viewer.Post(f.queuePath+"/assignees", url.Values{"user": {member.ID}}).Status)
	assert.Equal(t, http.StatusForbidden, viewer.Post(list, url.Values{"name": {"x"}, "config": {f.rating.ID}}).Status)

	reviewer := uitest.NewClient(t, env.URL)
	reviewer.SignIn("reviewer@example.com", uitest.MemberPassword)
	reviewer.NoRedirects()
	reviewer.Get(item)
	require.Equal(t, http.StatusSeeOther, reviewer.Post(item, url.Values{"score-" + f.quality.ID: {"bad"}}).Status)
	res = owner.Get(f.queuePath + "?status=COMPLETED")
	assert.Contains(t, res.Body, "reviewer@example.com ·", "who completed the item")

	require.Equal(t, http.StatusSeeOther, owner.Post(f.queuePath+"/items/"+f.items["t-2"].ID+"/remove", url.Values{}).Status)
	_, total, err := env.Store.ListAnnotationQueueItems(context.Background(), env.ProjectID, f.queue.ID, "", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 2, total)
	require.Equal(t, http.StatusSeeOther, owner.Post(f.queuePath+"/assignees/"+member.ID+"/remove", url.Values{}).Status)
}
