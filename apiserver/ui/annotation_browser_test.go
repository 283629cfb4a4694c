package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// TestBrowserAnnotationQueue is a reviewer's session in Chromium: an owner
// creates a score config and a queue through the pages, puts three traces
// in it from the traces table and assigns a member; the member signs in,
// opens the queue and scores the three traces from the keyboard (a number
// for the category, C to complete), then finds them completed.
func TestBrowserAnnotationQueue(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	for i, user := range []string{"alice", "bob", "carol"} {
		env.ChatTrace(t, "review-"+string(rune('a'+i)), "support-chat", user, at.Add(time.Duration(i)*time.Minute))
	}
	member := env.AddMember(t, "reviewer@example.com", controlplane.RoleMember)
	p := env.URL + "/project/" + env.ProjectID
	owner := uitest.NewTab(t, 2*time.Minute)
	owner.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	owner.Go(p + "/settings/scores")
	owner.Type(`[data-testid=add-score-config] input[name=name]`, "correct")
	owner.SetValue(`[data-testid=add-score-config] select[name=data_type]`, "CATEGORICAL")
	owner.Type(`[data-testid=add-score-config] input[name=categories]`, "yes=1, partly=0.5, no=0")
	owner.ClickAndWait(`[data-testid=add-score-config] button`)
	assert.Contains(t, owner.Text(`[data-testid=score-configs]`), "partly = 0.5")
	owner.Screenshot("score-configs")

	owner.Go(p + "/annotation-queues")
	owner.Type(`[data-testid=new-queue] input[name=name]`, "Support answers")
	owner.Click(`[data-testid=new-queue] input[name=config]`)
	owner.ClickAndWait(`[data-testid=new-queue] button`)
	assert.Equal(t, "Support answers", owner.Text(`[data-testid=queue-name]`))
	owner.SetValue(`[data-testid=assign] select`, member.ID)
	owner.ClickAndWait(`[data-testid=assign] button`)

	owner.Go(p + "/traces")
	owner.WaitVisible(`[data-testid=traces]`)
	owner.Click(`[data-select-all]`)
	owner.SetValue(`[data-bulk] select[name=queue]`, firstQueueID(t, env))
	owner.ClickAndWait(`[data-bulk] button[formaction$="add-to-queue"]`)
	assert.Contains(t, owner.Text(`[data-testid=notice]`), "3 traces added")

	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, "reviewer@example.com", uitest.MemberPassword)
	b.Go(p + "/annotation-queues")
	assert.Contains(t, b.Text(`[data-queue="Support answers"]`), "3", "three pending")
	b.Screenshot("annotation-queues")
	b.ClickAndWait(`[data-queue="Support answers"] a.button`)
	for i, key := range []string{"1", "2", "3"} {
		b.WaitVisible(`[data-testid=score-form]`)
		assert.Contains(t, b.Text(`[data-testid=position]`), "1 of "+string(rune('3'-i))+" pending")
		assert.Contains(t, b.Text(`[data-testid=io-output]`), "tomorrow")
		b.Key(key)
		assert.True(t, uitest.Eval[bool](b, `document.querySelector('[data-review] input[data-key="`+key+`"]').checked`), "key %s picks its category", key)
		if i == 0 {
			b.Screenshot("annotation-review")
		}
		uitest.Eval[bool](b, `(window.__gbOld = true)`)
		b.Key("c")
		b.WaitFor(`!window.__gbOld && document.readyState === "complete"`)
	}
	assert.Contains(t, b.Text(`[data-testid=notice]`), "Nothing is left to review")
	assert.Contains(t, b.Text(`[data-testid=progress]`), "3 completed, 0 pending")
	assert.Contains(t, b.Text(`[data-reviewer="reviewer@example.com"]`), "3")
	b.Screenshot("annotation-queue")
	assert.Empty(t, b.ConsoleErrors())

	// The reviewer's scores on the project's scores page, with their spread.
	owner.Go(p + "/scores?name=correct")
	owner.WaitVisible(`[data-testid=distribution]`)
	assert.Contains(t, owner.Text(`[data-testid=scores-count]`), "of 3")
	assert.Equal(t, 3, owner.Count(`[data-testid=distribution] .dist-row`), "yes, partly and no")
	owner.Screenshot("scores")
	assert.Empty(t, owner.ConsoleErrors())
}

func firstQueueID(t *testing.T, env *uitest.Env) string {
	t.Helper()
	qs, _, err := env.Store.ListAnnotationQueues(context.Background(), env.ProjectID, 0, 1)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	return qs[0].ID
}
