package ui_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// browserSignIn opens the sign-in page in the browser and signs in.
func browserSignIn(t *testing.T, b *uitest.Tab, env *uitest.Env, email, password string) {
	t.Helper()
	b.Go(env.URL + "/")
	b.WaitVisible(`[data-testid=sign-in]`)
	b.Type(`input[name=email]`, email)
	b.Type(`input[name=password]`, password)
	b.Click(`[data-testid=sign-in-submit]`)
}

func TestBrowserSignInToOnboarding(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	b := uitest.NewTab(t, 30*time.Second)
	b.Go(env.URL + "/")
	b.WaitVisible(`[data-testid=sign-in]`)
	b.Screenshot("sign-in")
	browserSignIn(t, b, env, env.OwnerEmail, env.OwnerPassword)
	b.WaitVisible(`[data-testid=waiting]`)
	assert.Equal(t, "/project/"+env.ProjectID, b.Path())
	assert.Contains(t, b.Text(`h1`), "Send your first trace to Chatbot")

	b.Click(`[data-testid=onboarding-create-key]`)
	b.WaitVisible(`[data-testid=onboarding-secret]`)
	env0 := b.Text(`[data-testid=env-snippet]`)
	assert.Contains(t, env0, "LANGFUSE_SECRET_KEY=sk-lf-")
	assert.Contains(t, env0, "LANGFUSE_BASE_URL="+env.URL)
	assert.NotContains(t, env0, "sk-lf-...")
	b.Screenshot("onboarding")
	require.Empty(t, b.ConsoleErrors(), "no script or CSP errors")
}
