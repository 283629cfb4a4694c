package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// TestBrowserTour clicks through the pages a person uses, as that person:
// from the traces table into a trace and one of its generations, the
// observations table, the sessions and a session's replay, then the
// settings (an API key created and its secret shown once, a member invited,
// a project role, a model price), checking what each page shows. With
// GLASSBOX_UI_SCREENSHOTS=docs/ui it refreshes the pictures in docs/ui.
func TestBrowserTour(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-30 * time.Minute)
	for i, user := range []string{"alice", "bob", "alice", "carol"} {
		env.ChatTrace(t, "trace-"+string(rune('a'+i)), []string{"support-chat", "billing-chat"}[i%2], user, now.Add(time.Duration(i)*7*time.Minute))
	}
	ctx := context.Background()
	lo, hi := 0.0, 1.0
	_, err := env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: "helpfulness", DataType: "NUMERIC", MinValue: &lo, MaxValue: &hi})
	require.NoError(t, err)
	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 3*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	// Traces: the table, then its filters through the form.
	b.Go(p + "/traces")
	b.WaitVisible(`[data-testid=traces]`)
	assert.Contains(t, b.Text(`[data-testid=traces-count]`), "1–4 of 4")
	b.Screenshot("traces")
	b.Click(`input[name=user]`)
	b.WaitFor(`document.querySelectorAll("#opts-user option").length === 3`) // alice, bob, carol with their counts
	assert.Equal(t, "2 traces", uitest.Eval[string](b, `document.querySelector('#opts-user option[value=alice]').textContent`))
	b.Type(`input[name=user]`, "alice")
	b.ClickAndWait(`[data-testid=trace-filters] button[type=submit]`)
	assert.Contains(t, b.URL().RawQuery, "user=alice", "filters live in the URL")
	b.WaitVisible(`[data-testid=traces]`)
	assert.Equal(t, 2, b.Count(`[data-testid=traces] tbody tr[data-id]`))

	// A trace from the filtered list: tree, the generation, J to the next.
	b.ClickAndWait(`[data-testid=traces] tbody tr[data-id] td a`)
	b.ClickText(`[data-node]`, "answer")
	b.WaitFor(`document.querySelector("[data-testid=model]") !== null`)
	assert.Equal(t, "gpt-4o", b.Text(`[data-testid=model]`))
	assert.Contains(t, b.Text(`[data-testid=io-input]`), "You are a helpful support agent.")
	assert.Contains(t, strings.ToLower(b.Text(`[data-testid=io-input]`)), "tool call · lookup_order")
	b.Screenshot("trace")
	b.Click(`[data-testid=io-output] [data-raw-toggle]`)
	assert.True(t, uitest.Eval[bool](b, `!document.querySelector("[data-testid=io-output] .io-raw").hidden`), "raw JSON shown")
	uitest.Eval[bool](b, `(document.activeElement.blur(), true)`) // keys go to the page, not the checkbox
	b.Key("k")
	b.WaitFor(`document.querySelector("[data-testid=detail]").dataset.selected.endsWith("-retrieve")`)
	first := b.Path()
	uitest.Eval[bool](b, `(window.__gbOld = true)`)
	b.Key("J")
	b.WaitFor(`!window.__gbOld && document.readyState === "complete"`)
	assert.NotEqual(t, first, b.Path())
	assert.Contains(t, b.Text(`[data-testid=trace-name]`), "support-chat", "J walks the filtered list: alice's traces are support chats")

	// Score the trace through its config.
	b.Click(`[data-testid=add-score] summary`)
	b.Type(`[data-testid=add-score] input[name=value]`, "0.9")
	b.ClickAndWait(`[data-testid=add-score] button[type=submit]`)
	assert.Contains(t, b.Text(`[data-testid=scores]`), "helpfulness: 0.9")

	b.Go(p + "/observations?type=GENERATION")
	b.WaitVisible(`[data-testid=observations]`)
	assert.Contains(t, b.Text(`[data-testid=observations] tbody`), "gpt-4o")
	b.Screenshot("observations")

	b.Go(p + "/sessions")
	b.WaitVisible(`[data-testid=sessions]`)
	b.Screenshot("sessions")
	b.ClickAndWait(`[data-testid=sessions] tbody tr[data-id=session-alice] a`)
	assert.Equal(t, 2, b.Count(`.replay-turn`))
	b.Screenshot("session")

	b.Go(p + "/users")
	b.WaitVisible(`[data-testid=users]`)
	assert.Equal(t, "alice", uitest.Eval[string](b, `document.querySelector("[data-testid=users] tbody tr[data-id]").dataset.id`), "the most active user first")
	b.Screenshot("users")
	b.ClickAndWait(`[data-testid=users] tbody tr[data-id=alice] a`)
	assert.Contains(t, b.Text(`[data-testid=user-facts]`), "2")

	// Prompts: a new prompt in the editor, previewed, saved, labelled, then
	// a second version compared with the first.
	b.Go(p + "/prompts")
	b.ClickAndWait(`[data-testid=new-prompt]`)
	b.Type(`[data-testid=editor] input[name=name]`, "support/greeting")
	b.Type(`[data-testid=editor] textarea[name=text]`, "Hello {{name}}, how can I help?")
	b.SetValue(`[data-testid=editor] textarea[name=config]`, `{"model": "gpt-4o", "temperature": 0.2}`)
	b.Type(`[data-testid=editor] input[name=commit]`, "first draft")
	b.ClickAndWait(`[data-testid=editor] button[value=preview]`)
	assert.Contains(t, b.Text(`[data-testid=detected]`), "{{name}}", "the editor finds the variables")
	b.Screenshot("prompt-editor")
	b.ClickAndWait(`[data-testid=editor] button[value=save]`)
	assert.Equal(t, "support/greeting", b.Text(`[data-testid=prompt-name]`))
	b.Type(`[data-testid=add-label] input[name=label]`, "production")
	b.ClickAndWait(`[data-testid=add-label] button`)
	assert.Contains(t, b.Text(`[data-testid=version]`), "production")
	b.ClickAndWait(`[data-testid=new-version]`)
	b.SetValue(`[data-testid=editor] textarea[name=text]`, "Hello {{name}}, what can I do for you today?")
	b.ClickAndWait(`[data-testid=editor] button[value=save]`)
	b.ClickAndWait(`[data-testid=compare] button`)
	assert.Contains(t, b.Text(`[data-testid=diff]`), "+ Hello {{name}}, what can I do for you today?")
	b.Screenshot("prompt")
	b.Go(p + "/prompts")
	b.ClickAndWait(`[data-folder=support] a`)
	assert.Equal(t, 1, b.Count(`[data-prompt="support/greeting"]`))
	b.Screenshot("prompts")

	// Settings: a key whose secret shows once.
	b.Go(p + "/settings/api-keys")
	b.Type(`[data-testid=create-key] input[name=note]`, "tour")
	b.ClickAndWait(`[data-testid=create-key] button`)
	secret := b.Text(`[data-testid=new-secret]`)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(secret), "sk-lf-"))
	assert.Contains(t, b.Text(`[data-testid=env-snippet]`), "LANGFUSE_BASE_URL="+env.URL)
	b.Screenshot("api-keys")
	b.Go(p + "/settings/api-keys")
	assert.NotContains(t, b.Text(`main`), strings.TrimSpace(secret), "never shown again")

	// The owner sets the organization's retention, which its projects
	// without one take.
	b.Go(env.URL + "/organization/" + env.OrgID)
	b.SetValue(`[data-testid=org-settings] input[name=retention_days]`, "45")
	b.ClickAndWait(`[data-testid=org-settings] button`)
	org, err := env.Store.GetOrganization(ctx, env.OrgID)
	require.NoError(t, err)
	assert.Equal(t, 45, org.RetentionDays)

	// A member invited; the link to choose a password is shown once.
	b.Type(`[data-testid=invite] input[name=email]`, "newcomer@example.com")
	b.ClickAndWait(`[data-testid=invite] button`)
	assert.Contains(t, b.Text(`[data-testid=invited]`), "/auth/invite/")
	b.Screenshot("organization")
	b.ClickAndWait(`[data-testid=usage-link]`)
	assert.Contains(t, b.Text(`[data-testid=usage-totals]`), "Units")
	b.Screenshot("usage")

	b.Go(p + "/settings/members")
	b.WaitVisible(`[data-testid=project-members]`)
	b.SetValue(`tr[data-member="newcomer@example.com"] select`, "VIEWER")
	b.ClickAndWait(`tr[data-member="newcomer@example.com"] button`)
	assert.Equal(t, "VIEWER", uitest.Eval[string](b, `document.querySelector('tr[data-member="newcomer@example.com"] select').value`))
	b.Screenshot("members")

	b.Go(p + "/settings/models")
	b.Type(`[data-testid=add-model] input[name=name]`, "my-finetune")
	b.Type(`[data-testid=add-model] input[name=input]`, "2.5")
	b.Type(`[data-testid=add-model] input[name=output]`, "10")
	b.ClickAndWait(`[data-testid=add-model] button`)
	assert.Contains(t, b.Text(`[data-testid=custom-models]`), "$2.5")
	b.Go(p + "/settings/models?q=gpt-4o")
	assert.Contains(t, b.Text(`[data-testid=builtin-models]`), "gpt-4o", "the built-in catalogue is visible")
	b.Screenshot("models")

	b.Go(p + "/settings")
	b.WaitVisible(`[data-testid=general]`)
	b.Screenshot("settings")
	assert.Empty(t, b.ConsoleErrors())
}
