package ui_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

func TestBrowserSignInToOnboarding(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	b := uitest.NewTab(t, 30*time.Second)
	b.Go(env.URL + "/")
	b.WaitVisible(`[data-testid=sign-in]`)
	b.Screenshot("sign-in")
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)
	b.WaitVisible(`[data-testid=waiting]`)
	assert.Equal(t, "/project/"+env.ProjectID, b.Path())
	assert.Contains(t, b.Text(`h1`), "Send your first trace to Chatbot")

	b.ClickAndWait(`[data-testid=onboarding-create-key]`)
	env0 := b.Text(`[data-testid=env-snippet]`)
	assert.Contains(t, env0, "LANGFUSE_SECRET_KEY=sk-lf-")
	assert.Contains(t, env0, "LANGFUSE_BASE_URL="+env.URL)
	assert.NotContains(t, env0, "sk-lf-...")
	b.Screenshot("onboarding")
	require.Empty(t, b.ConsoleErrors(), "no script or CSP errors")
}
