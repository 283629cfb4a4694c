package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// TestBrowserAlerts creates an alert through the alerts page in Chromium:
// p95 latency of the generation "answer" above 50 ms over 15 minutes,
// posted to a local receiver. The server's evaluator fires it; the page
// shows it firing, the receiver got the notification, and the alert's page
// shows the history; then it is paused.
func TestBrowserAlerts(t *testing.T) {
	var (
		mu       sync.Mutex
		received []map[string]any
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		if json.Unmarshal(body, &p) == nil {
			mu.Lock()
			received = append(received, p)
			mu.Unlock()
		}
	}))
	t.Cleanup(receiver.Close)
	env := uitest.Start(t, uitest.Options{Configure: func(cfg *apiserver.Config) {
		cfg.Evaluation.Enabled = true
		cfg.Evaluation.WebhookAllowedHosts = []string{"127.0.0.1"}
		cfg.Alerts.PollInterval = 100 * time.Millisecond
	}})
	env.ChatTrace(t, "alert-a", "support-chat", "alice", time.Now().Add(-2*time.Minute))

	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)
	b.Go(p + "/alerts")
	form := `[data-testid=new-alert] `
	b.Type(form+`input[name=name]`, "Slow answers")
	b.SetValue(form+`select[name=agg]`, "p95")
	b.SetValue(form+`select[name=measure]`, "latency")
	b.SetValue(form+`select[name=filter_column]`, "name")
	b.SetValue(form+`select[name=filter_operator]`, "=")
	b.Type(form+`input[name=filter_value]`, "answer")
	b.SetValue(form+`select[name=operator]`, ">")
	b.Type(form+`input[name=threshold]`, "50")
	b.SetValue(form+`input[name=window]`, "15m")
	b.Type(form+`input[name=url]`, receiver.URL+"/hook")
	b.ClickAndWait(form + `button[type=submit]`)
	require.Equal(t, 0, b.Count(`[data-testid=form-error]`), b.Text(`main`))
	require.Equal(t, 1, b.Count(`[data-alert="Slow answers"]`))
	assert.Contains(t, b.Text(`[data-alert="Slow answers"]`), "p95 latency of observations where name = answer > 50 over 15m")

	require.Eventually(t, func() bool {
		b.Go(p + "/alerts")
		return b.Text(`[data-alert="Slow answers"] [data-testid=alert-state]`) == "firing"
	}, 30*time.Second, 200*time.Millisecond)
	assert.Contains(t, b.Text(`[data-alert="Slow answers"]`), "80", "p95 of the 80 ms generation")
	mu.Lock()
	require.Len(t, received, 1)
	assert.Equal(t, "firing", received[0]["event"])
	assert.Equal(t, 80.0, received[0]["value"])
	mu.Unlock()
	b.Screenshot("alerts")

	b.ClickAndWait(`[data-alert="Slow answers"] a`)
	assert.Equal(t, "Slow answers", b.Text(`[data-testid=alert-name]`))
	require.Eventually(t, func() bool {
		b.Go(b.URL().String())
		return strings.Contains(b.Text(`[data-testid=alert-history]`), "sent")
	}, 10*time.Second, 200*time.Millisecond, "the notification is recorded")
	assert.Equal(t, 1, b.Count(`[data-testid=alert-history] tbody tr`))
	history := b.Text(`[data-testid=alert-history]`)
	assert.Contains(t, history, "firing")
	assert.Contains(t, history, "sent")
	b.ClickAndWait(`button:not([data-confirm]).secondary`)
	assert.Contains(t, b.Text(`.page-head`), "paused")
	assert.Empty(t, b.ConsoleErrors())
}
