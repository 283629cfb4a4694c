package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/automations"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// TestBrowserAutomations creates an automation in Chromium, moves a prompt
// label, and sees the signed delivery arrive at a local receiver and show
// as delivered in the log.
func TestBrowserAutomations(t *testing.T) {
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", experimentKey)
	var (
		mu     sync.Mutex
		bodies [][]byte
		sigs   []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies, sigs = append(bodies, body), append(sigs, r.Header.Get(automations.SignatureHeader))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) {
		c.Evaluation.WebhookAllowedHosts = []string{"127.0.0.1"}
		c.Automations.Enabled = true
		c.Automations.PollInterval = 50 * time.Millisecond
	}})
	_, err := env.Store.CreatePrompt(context.Background(), env.ProjectID, controlplane.NewPrompt{Name: "greet",
		Prompt: json.RawMessage(`"Hello {{name}}"`)})
	require.NoError(t, err)
	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	b.Go(p + "/settings/automations")
	b.Type(`[data-testid=add-automation] input[name=name]`, "label watcher")
	b.Type(`[data-testid=add-automation] input[name=url]`, receiver.URL+"/hook")
	b.Click(`[data-testid=add-automation] input[value=created]`) // updated and deleted stay checked
	b.ClickAndWait(`[data-testid=add-automation] button[type=submit]`)
	secret := regexp.MustCompile(`gb-whsec_[0-9a-f]{64}`).FindString(b.Text(`[data-testid=new-secret]`))
	require.NotEmpty(t, secret, "the signing secret is shown once")
	assert.Contains(t, b.Text(`[data-automation="label watcher"]`), "deleted, updated")
	b.Screenshot("automations")

	b.Go(p + "/prompts/greet")
	b.Type(`[data-testid=add-label] input[name=label]`, "staging")
	b.ClickAndWait(`[data-testid=add-label] button[type=submit]`)

	b.Go(p + "/settings/automations")
	log := uitest.Eval[string](b, `document.querySelector('[data-automation="label watcher"] a').href`)
	deadline := time.Now().Add(15 * time.Second)
	for {
		b.Go(log)
		if b.Count(`[data-status=DELIVERED]`) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, 1, b.Count(`[data-status=DELIVERED]`), b.Text(`[data-testid=deliveries]`))
	row := b.Text(`[data-status=DELIVERED]`)
	assert.Contains(t, row, "updated")
	assert.Contains(t, row, "greet v1")
	assert.Contains(t, row, "204")
	b.Screenshot("automation-deliveries")
	assert.Empty(t, b.ConsoleErrors())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 1)
	var ev struct {
		Action string
		Prompt struct {
			Name   string
			Labels []string
		}
	}
	require.NoError(t, json.Unmarshal(bodies[0], &ev))
	assert.Equal(t, "updated", ev.Action)
	assert.Equal(t, []string{"latest", "staging"}, ev.Prompt.Labels)
	ts := regexp.MustCompile(`^t=(\d+),`).FindStringSubmatch(sigs[0])
	require.Len(t, ts, 2)
	assert.Equal(t, sigs[0], automations.Sign(secret, unixOf(t, ts[1]), bodies[0]), "signed with the secret the page showed")
}

func unixOf(t *testing.T, s string) time.Time {
	t.Helper()
	sec, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return time.Unix(sec, 0)
}
