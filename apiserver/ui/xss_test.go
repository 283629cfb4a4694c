package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// xss is the hostile corpus: each payload sets window.__xss (or would
// navigate) if it ever ran.
var xss = []string{
	`<script>window.__xss=1</script>`,
	`"><img src=x onerror="window.__xss=2">`,
	`'><svg onload=window.__xss=3>`,
	`javascript:window.__xss=4`,
	`[click me](javascript:window.__xss=5)`,
	`<a href="javascript:window.__xss=6">link</a>`,
	`&lt;script&gt;window.__xss=7&lt;/script&gt;`,
	`<iframe srcdoc="<script>parent.__xss=8</script>">`,
	`{{.R.User.Email}}`,
	`</pre></code><style>body{display:none}</style>`,
	"```\n</code><script>window.__xss=9</script>\n```",
	`<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">`,
}

const promptName = `" onmouseover="window.__xss=12" x="javascript:window.__xss=13`

// unsafe finds any of the payloads' active parts in a page.
var unsafe = regexp.MustCompile(`(?i)<script>window|<img src=x|<svg onload|href="javascript:|<iframe|<style>body|onerror="window|onmouseover="window`)

func hostileTrace(t *testing.T, env *uitest.Env) {
	t.Helper()
	ctx := context.Background()
	all := strings.Join(xss, " ")
	promptText, err := json.Marshal("Answer as " + all)
	require.NoError(t, err)
	// Prompt names refuse < > |; the quote and script-scheme payloads remain.
	_, err = env.Store.CreatePrompt(ctx, env.ProjectID, controlplane.NewPrompt{Name: promptName, Prompt: promptText})
	require.NoError(t, err)
	meta := map[string]any{}
	for i, p := range xss {
		meta[p] = p
		meta["k"+string(rune('a'+i))] = map[string]any{p: []any{p, 1}}
	}
	at := time.Now().Add(-time.Minute)
	env.Ingest(t,
		uitest.Event{Type: "trace-create", Body: map[string]any{"id": "hostile", "name": xss[1], "userId": xss[2], "sessionId": xss[3],
			"tags": xss, "release": xss[4], "version": xss[5], "timestamp": uitest.Time(at),
			"input": all, "output": map[string]any{"role": "assistant", "content": all}, "metadata": meta}},
		uitest.Event{Type: "generation-create", Body: map[string]any{"id": "hostile-gen", "traceId": "hostile", "name": xss[0],
			"model": xss[6], "promptName": promptName, "promptVersion": 1, "statusMessage": all, "level": "ERROR",
			"modelParameters": map[string]any{xss[7]: xss[8]},
			"startTime":       uitest.Time(at), "endTime": uitest.Time(at.Add(time.Second)),
			"input": []map[string]any{{"role": "system", "content": "Answer as " + all}, {"role": xss[1], "name": xss[2], "content": []map[string]any{
				{"type": "text", "text": all}, {"type": "image_url", "image_url": map[string]any{"url": "javascript:window.__xss=10"}},
				{"type": "image_url", "image_url": map[string]any{"url": xss[11]}}}},
				{"role": "assistant", "tool_calls": []map[string]any{{"id": xss[3], "function": map[string]any{"name": xss[0], "arguments": all}}}}},
			"output": all, "metadata": meta}},
	)
}

// hostileEvaluation stores the corpus in the evaluation pages' objects: a
// dataset with an item and a run of the hostile trace, a score config, an
// annotation queue holding the trace, and an automation with a failed
// delivery. It returns the pages that show them.
func hostileEvaluation(t *testing.T, env *uitest.Env) []string {
	t.Helper()
	ctx := context.Background()
	all := strings.Join(xss, " ")
	text, err := json.Marshal(all)
	require.NoError(t, err)
	desc := all
	ds, err := env.Store.UpsertDataset(ctx, env.ProjectID, controlplane.DatasetUpsert{Name: promptName, Description: &desc})
	require.NoError(t, err)
	item, err := env.Store.UpsertDatasetItem(ctx, env.ProjectID, controlplane.DatasetItemUpsert{DatasetName: ds.Name, Input: text,
		ExpectedOutput: text, Metadata: json.RawMessage(`{"k":` + string(text) + `}`)})
	require.NoError(t, err)
	_, err = env.Store.CreateDatasetRunItem(ctx, env.ProjectID, controlplane.NewDatasetRunItem{RunName: xss[0], DatasetItemID: item.ID, TraceID: "hostile"})
	require.NoError(t, err)
	cfg, err := env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: xss[1], DataType: controlplane.ScoreCategorical,
		Description: all, Categories: []controlplane.ScoreCategory{{Label: xss[2], Value: 1}, {Label: xss[5], Value: 0}}})
	require.NoError(t, err)
	q, err := env.Store.CreateAnnotationQueue(ctx, env.ProjectID, controlplane.NewAnnotationQueue{Name: xss[3], Description: all, ScoreConfigIDs: []string{cfg.ID}})
	require.NoError(t, err)
	qi, _, err := env.Store.AddAnnotationQueueItem(ctx, env.ProjectID, q.ID, "hostile", controlplane.ObjectTrace, "")
	require.NoError(t, err)
	// An automation named with the corpus, whose delivery failed with it.
	box, err := secretbox.New(make([]byte, 32))
	require.NoError(t, err)
	a, _, err := env.Store.CreateAutomation(ctx, box, env.ProjectID, controlplane.NewAutomation{Name: xss[1], Events: controlplane.AutomationEvents,
		URL: "https://hooks.example/" + xss[0], Headers: map[string]string{"X-Hostile": xss[2]}})
	require.NoError(t, err)
	_, err = env.Store.EnqueueTestDelivery(ctx, env.ProjectID, a.ID)
	require.NoError(t, err)
	claimed, err := env.Store.ClaimAutomationDeliveries(ctx, "xss", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.NoError(t, env.Store.FinishAutomationDelivery(ctx, claimed[0], controlplane.DeliveryOutcome{Status: controlplane.DeliveryFailed,
		StatusCode: 400, Error: all}))
	p := "/project/" + env.ProjectID
	alert := hostileAlert(t, env)
	return []string{
		p + "/settings/automations",
		p + "/settings/automations/" + a.ID,
		p + "/alerts",
		p + "/alerts/" + alert,
		p + "/prompts",
		p + "/prompts/" + url.PathEscape(promptName),
		p + "/prompts/new?name=" + url.QueryEscape(promptName),
		p + "/datasets",
		p + "/datasets/" + ds.ID,
		p + "/datasets/" + ds.ID + "?tab=items",
		p + "/datasets/" + ds.ID + "/items/" + item.ID,
		p + "/datasets/" + ds.ID + "/compare",
		p + "/settings/scores",
		p + "/scores?name=" + url.QueryEscape(xss[1]),
		p + "/annotation-queues",
		p + "/annotation-queues/" + q.ID,
		p + "/annotation-queues/" + q.ID + "/items/" + qi.ID,
	}
}

// hostileAlert stores an alert with the corpus in its name, filters, webhook
// URL and last error, and a transition in its history; it returns its id.
func hostileAlert(t *testing.T, env *uitest.Env) string {
	t.Helper()
	ctx := context.Background()
	all := strings.Join(xss, " ")
	query, err := json.Marshal(map[string]any{"view": "observations", "metric": map[string]any{"measure": "count", "aggregation": "count"},
		"filters": []any{map[string]any{"column": "name", "operator": "=", "type": "string", "value": all}}})
	require.NoError(t, err)
	a, err := env.Store.CreateAlert(ctx, env.ProjectID, controlplane.AlertRule{Name: xss[0] + xss[1] + xss[2], Query: query,
		Operator: ">", Threshold: 1, Window: time.Hour, Interval: time.Hour, For: 1, TargetFormat: "json",
		TargetURL: "https://hooks.example.com/" + url.PathEscape(xss[1]) + "?q=" + url.QueryEscape(xss[0])})
	require.NoError(t, err)
	value, now := 5.0, time.Now().Add(-3*time.Hour)
	for _, ev := range []controlplane.AlertEvaluation{{At: now, Value: &value}, {At: now.Add(2 * time.Hour), Error: all}} {
		_, err = env.Store.ClaimDueAlerts(ctx, "xss", ev.At, time.Minute, 100)
		require.NoError(t, err)
		_, _, err = env.Store.RecordAlertEvaluation(ctx, "xss", env.ProjectID, a.ID, ev)
		require.NoError(t, err)
	}
	return a.ID
}

// TestXSSCorpusIsEscaped renders every page that shows trace, prompt,
// dataset, score config, queue and automation data with the hostile corpus in every field and checks that no payload survives as
// markup, then opens the pages in Chromium and checks that none ran.
func TestXSSCorpusIsEscaped(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	hostileTrace(t, env)
	p := "/project/" + env.ProjectID
	pages := []string{
		p + "/traces",
		p + "/traces?col=input&col=output&col=name&col=user&col=session&col=tags&col=release&col=version",
		p + "/traces/hostile",
		p + "/traces/hostile?observation=hostile-gen",
		p + "/observations?col=input&col=output&col=name&col=model&col=prompt",
		p + "/traces?q=" + url.QueryEscape(xss[0]) + "&user=" + url.QueryEscape(xss[1]),
		"/auth/sign-in?next=" + url.QueryEscape(`javascript:window.__xss=11`) + "&error=" + url.QueryEscape(xss[0]),
	}
	pages = append(pages, hostileEvaluation(t, env)...)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	for _, page := range pages {
		res := c.Get(page)
		require.Equal(t, http.StatusOK, res.Status, page)
		assert.Empty(t, unsafe.FindAllString(res.Body, -1), "payload rendered as markup on %s", page)
	}
	res := c.Get(p + "/traces/hostile?observation=hostile-gen")
	assert.Contains(t, res.Body, "&lt;script&gt;window.__xss=1&lt;/script&gt;", "the text is shown, escaped")
	assert.Contains(t, res.Body, "Image: javascript:window.__xss=10", "a foreign image is named, not loaded or linked")
	assert.Contains(t, res.Body, "{{.R.User.Email}}", "template syntax in data stays text")
	assert.NotContains(t, res.Body, "{{.R.User.Email}}"+env.OwnerEmail)

	b := uitest.NewTab(t, 60*time.Second)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)
	for _, page := range pages {
		b.Go(env.URL + page)
		b.WaitVisible(`main`)
		assert.True(t, uitest.Eval[bool](b, `window.__xss === undefined && document.body.style.display !== "none"`), "a payload ran on %s", page)
		assert.Equal(t, 0, b.Count(`iframe, script:not([src]), img[onerror]`), page)
	}
	b.Go(env.URL + p + "/traces/hostile?observation=hostile-gen")
	assert.Empty(t, b.ConsoleErrors(), "nothing tried to run (a CSP violation is logged as an error)")
}
