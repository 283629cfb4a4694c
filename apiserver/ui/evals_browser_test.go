package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// TestBrowserEvaluators copies a judge template in Chromium, previews it on
// a stored trace against a local fake model, saves it, and makes a rule
// that runs it on new traces.
func TestBrowserEvaluators(t *testing.T) {
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", experimentKey)
	fake := llmtest.New(t, func(llmtest.Request) string { return `{"reasoning":"relevant to the order question","score":0.9}` })
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) { c.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} }})
	box, err := secretbox.FromEnv(func(string) string { return experimentKey })
	require.NoError(t, err)
	_, err = env.Store.UpsertLLMConnection(context.Background(), box, env.ProjectID, controlplane.LLMConnectionUpsert{Provider: "local",
		SecretKey: "sk-local-0123456789", BaseURL: fake.URL(), DefaultModel: ptr("judge-model"), Timeout: 5 * time.Second})
	require.NoError(t, err)
	env.ChatTrace(t, "eval-trace", "support-chat", "alice", time.Now().Add(-time.Hour))
	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	b.Go(p + "/evals")
	b.Screenshot("evaluators")
	b.ClickAndWait(`[data-template=relevance]`)
	b.ClickAndWait(`[data-testid=evaluator-form] button[value=preview]`)
	assert.Equal(t, "0.9", b.Text(`[data-testid=preview-score]`))
	assert.Contains(t, b.Text(`[data-testid=preview-prompt]`), "Where is my **order** 42?")
	b.Screenshot("evaluator-preview")
	b.ClickAndWait(`[data-testid=evaluator-form] button[value=save]`)
	assert.Equal(t, 1, b.Count(`[data-evaluator=Relevance]`))

	b.Go(p + "/evals?tab=rules")
	b.Type(`[data-testid=new-rule] input[name=name]`, "all chats")
	b.SetValue(`[data-testid=new-rule] select[name=connection]`, uitest.Eval[string](b, `document.querySelector('[data-testid=new-rule] select[name=connection] option:nth-child(2)').value`))
	b.SetValue(`[data-testid=new-rule] select[name=cond_field]`, "tags")
	b.SetValue(`[data-testid=new-rule] select[name=cond_op]`, "any of")
	b.Type(`[data-testid=new-rule] input[name=cond_value]`, "prod")
	b.ClickAndWait(`[data-testid=new-rule] button[type=submit]`)
	assert.Contains(t, b.Text(`[data-rule="all chats"]`), "tags any of prod")
	b.Screenshot("eval-rules")
	assert.Empty(t, b.ConsoleErrors())
}
