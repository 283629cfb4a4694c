package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

var envLine = regexp.MustCompile(`(?m)^(LANGFUSE_[A-Z_]+)=(\S+)$`)

// TestNewUserSendsAFirstTraceAndFindsIt is what a new user does after
// `make run`: open the UI of the all-in-one binary, sign in as the initial
// owner, take the SDK settings from the empty project's page, send a trace
// with the official Langfuse JS SDK, watch the page switch to the traces
// table, and open the trace with its tree, input/output and cost.
func TestNewUserSendsAFirstTraceAndFindsIt(t *testing.T) {
	sdkDir := requireEnv(t, "GLASSBOX_SDK_DIR")
	a := startAllInOne(t)
	b := uitest.NewTab(t, 3*time.Minute)

	b.SignIn(a.BaseURL, a.UserEmail, a.UserPassword)
	b.WaitVisible(`[data-testid=waiting]`)
	assert.Equal(t, "/project/proj-e2e", b.Path())
	b.Screenshot("first-trace-1-onboarding")

	b.ClickAndWait(`[data-testid=onboarding-create-key]`)
	settings := map[string]string{}
	for _, m := range envLine.FindAllStringSubmatch(b.Text(`[data-testid=env-snippet]`), -1) {
		settings[m[1]] = m[2]
	}
	require.Equal(t, a.BaseURL, settings["LANGFUSE_BASE_URL"])
	require.True(t, strings.HasPrefix(settings["LANGFUSE_SECRET_KEY"], "sk-lf-"), settings)

	run := runSDKEmitter(t, sdkDir, settings["LANGFUSE_BASE_URL"],
		project{ID: "proj-e2e", PublicKey: settings["LANGFUSE_PUBLIC_KEY"], SecretKey: settings["LANGFUSE_SECRET_KEY"]}, 1)
	traceID := run.Traces[0].TraceID

	// The onboarding page notices the trace by itself and opens the table.
	b.WaitVisible(`[data-testid=traces] tbody tr[data-id="` + traceID + `"]`)
	assert.Equal(t, "/project/proj-e2e/traces", b.Path())
	assert.Contains(t, b.Text(`[data-testid=traces] tbody`), "agent-run")
	b.Screenshot("first-trace-2-table")

	b.ClickAndWait(`[data-testid=traces] tbody tr[data-id="` + traceID + `"] td a`)
	tree := b.Text(`[data-testid=tree]`)
	for _, name := range []string{"agent-run", "llm-call", "search-tool", "parse-results"} {
		assert.Contains(t, tree, name)
	}
	assert.Equal(t, "$0.000190", b.Text(`[data-testid=trace-cost]`))

	// Open the generation and read what a person reads.
	b.ClickText(`[data-node]`, "llm-call")
	b.WaitFor(`document.querySelector("[data-testid=model]") !== null`)
	assert.Equal(t, "gpt-4o-mini", b.Text(`[data-testid=model]`))
	assert.Contains(t, b.Text(`[data-testid=cost]`), "$0.000190")
	assert.Contains(t, b.Text(`[data-testid=io-input]`), "question 0")
	assert.Contains(t, b.Text(`[data-testid=io-output]`), "answer 0")
	b.Screenshot("first-trace-3-trace")
	assert.Empty(t, b.ConsoleErrors())
}
