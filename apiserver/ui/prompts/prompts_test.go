package prompts_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

const hostile = `<script>alert(1)</script>`

func text(s string) json.RawMessage {
	out, _ := json.Marshal(s)
	return out
}

// seed stores support/greeting (v1 production, v2 latest, both with a
// variable), a chat prompt with a placeholder, and a prompt that includes
// another.
func seed(t *testing.T, env *uitest.Env) {
	t.Helper()
	ctx := context.Background()
	for _, np := range []controlplane.NewPrompt{
		{Name: "support/greeting", Prompt: text("Hello {{name}}!\nHow can I help?"), Labels: []string{"production"},
			Config: json.RawMessage(`{"model":"gpt-4o","temperature":0.2}`), Tags: []string{"support"}, CommitMessage: "first draft"},
		{Name: "support/greeting", Prompt: text("Hello {{name}}!\nHow can I help you today? " + hostile), CommitMessage: "warmer " + hostile},
		{Name: "agent", Type: controlplane.PromptChat, Prompt: json.RawMessage(`[{"role":"system","content":"You help {{customer}}."},
			{"type":"placeholder","name":"history"},{"role":"user","content":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}]`)},
		{Name: "composed", Prompt: text("Start. @@@langfusePrompt:name=support/greeting|label=production@@@ End.")},
	} {
		_, err := env.Store.CreatePrompt(ctx, env.ProjectID, np)
		require.NoError(t, err, np.Name)
	}
}

func TestListByFolderAndSearch(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	seed(t, env)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	list := "/project/" + env.ProjectID + "/prompts"

	res := c.Get(list)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-folder="support"`, "names with a slash sit in a folder")
	assert.NotContains(t, res.Body, `data-prompt="support/greeting"`)
	assert.Contains(t, res.Body, `data-prompt="agent"`)
	assert.Contains(t, res.Body, `data-prompt="composed"`)

	res = c.Get(list + "?folder=support")
	assert.Contains(t, res.Body, `data-prompt="support/greeting"`)
	assert.Contains(t, res.Body, `href="`+list+`/support/greeting"`)
	assert.NotContains(t, res.Body, `data-prompt="agent"`)
	row := res.Body[strings.Index(res.Body, `data-prompt="support/greeting"`):]
	row = row[:strings.Index(row, "</tr>")]
	assert.Contains(t, row, "production")
	assert.Contains(t, row, "latest")
	assert.Contains(t, row, ">support<", "its tag")
	assert.Contains(t, row, `<td class="num">2</td>`, "two versions")

	res = c.Get(list + "?q=GREET")
	assert.Contains(t, res.Body, `data-prompt="support/greeting"`, "a search looks into folders, ignoring case")
	assert.NotContains(t, res.Body, `data-prompt="agent"`)
}

func TestPromptPage(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	seed(t, env)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	page := "/project/" + env.ProjectID + "/prompts/support/greeting"

	res := c.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "Version 1", "without a selector the production version shows")
	assert.Contains(t, res.Body, "How can I help?")
	assert.Contains(t, res.Body, "first draft")
	assert.Contains(t, res.Body, html.EscapeString(`"temperature": 0.2`), "the config, indented")
	assert.Contains(t, res.Body, "<code>{{name}}</code>", "the variables")
	assert.Contains(t, res.Body, `data-version="2"`)

	res = c.Get(page + "?version=2")
	assert.Contains(t, res.Body, "Version 2")
	assert.Contains(t, res.Body, "warmer &lt;script&gt;", "the commit message, escaped")
	assert.NotContains(t, res.Body, hostile)

	res = c.Get(page + "?version=2&compare=1")
	require.Equal(t, http.StatusOK, res.Status)
	diff := res.Body[strings.Index(res.Body, `data-testid="diff"`):]
	diff = diff[:strings.Index(diff, "</pre>")]
	assert.Contains(t, diff, `<span class="">  Hello {{name}}!</span>`, "the unchanged line")
	assert.Contains(t, diff, `<span class="del">- How can I help?</span>`)
	assert.Contains(t, diff, `<span class="add">&#43; How can I help you today? &lt;script&gt;`)
	assert.Contains(t, diff, `<span class="del">- [config]</span>`, "v2 has no config")
	assert.Equal(t, http.StatusNotFound, c.Get(page+"?version=2&compare=9").Status)

	res = c.Get("/project/" + env.ProjectID + "/prompts/agent")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "placeholder <code>history</code>")
	assert.Contains(t, res.Body, `<span class="role">system</span><pre>You help {{customer}}.</pre>`)
	assert.NotContains(t, res.Body, hostile)

	res = c.Get("/project/" + env.ProjectID + "/prompts/composed")
	assert.Contains(t, res.Body, "@@@langfusePrompt:name=support/greeting|label=production@@@", "stored with its reference")
	res = c.Get("/project/" + env.ProjectID + "/prompts/composed?version=1&resolved=1")
	assert.Contains(t, res.Body, "Start. Hello {{name}}!\nHow can I help? End.", "resolved against production")

	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/prompts/no/such/prompt").Status)
	assert.Equal(t, http.StatusNotFound, c.Get(page+"?version=7").Status)
}

func TestUsageByVersion(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	seed(t, env)
	at := time.Now().Add(-time.Hour)
	var events []uitest.Event
	for i, v := range []int{1, 1, 2} {
		id := "trace-" + string(rune('a'+i))
		events = append(events,
			uitest.Event{Type: "trace-create", Body: map[string]any{"id": id, "name": "greet", "timestamp": uitest.Time(at)}},
			uitest.Event{Type: "generation-create", Body: map[string]any{"id": id + "-gen", "traceId": id, "name": "greet", "model": "gpt-4o",
				"promptName": "support/greeting", "promptVersion": v, "startTime": uitest.Time(at), "endTime": uitest.Time(at.Add(time.Duration(i+1) * time.Second)),
				"costDetails": map[string]any{"total": 0.5}}},
			uitest.Event{Type: "score-create", Body: map[string]any{"id": id + "-score", "traceId": id, "observationId": id + "-gen",
				"name": "helpful", "value": float64(i)}})
	}
	env.Ingest(t, events...)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	page := "/project/" + env.ProjectID + "/prompts/support/greeting"
	res := c.Get(page + "?range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `hx-get="`+page+`?part=usage&amp;range=24h"`, "the page loads its usage after it is shown")
	assert.NotContains(t, res.Body, `<tr data-version="1">`)
	res = c.Get(page + "?part=usage&range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(res.Body), `<section class="panel" data-testid="usage">`), "the section alone")
	assert.NotContains(t, res.Body, `name="part"`, "the range form does not keep part=usage")
	inline := c.Get(page + "?usage=1&range=24h")
	assert.Contains(t, inline.Body, `<tr data-version="1">`, "without scripts the page shows it inline")
	usage := res.Body[strings.Index(res.Body, `data-testid="usage"`):]
	assert.Contains(t, usage, "<th class=\"num\">helpful</th>")
	v1 := usage[strings.Index(usage, `<tr data-version="1">`):]
	v1 = v1[:strings.Index(v1, "</tr>")]
	assert.Contains(t, v1, `<td class="num">2</td>`, "two generations used v1")
	assert.Contains(t, v1, "$1.00", "their cost")
	assert.Contains(t, v1, `<td class="num">0.5</td>`, "the average helpful score of v1's generations")
	v2 := usage[strings.Index(usage, `<tr data-version="2">`):]
	v2 = v2[:strings.Index(v2, "</tr>")]
	assert.Contains(t, v2, `<td class="num">1</td>`)
	assert.Contains(t, v2, `<td class="num">2</td>`, "v2's score")
}

func TestEditorPreviewsAndSaves(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	seed(t, env)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	editor := "/project/" + env.ProjectID + "/prompts/new"

	res := c.Get(editor + "?name=support/greeting&version=1")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "New version of support/greeting")
	assert.Contains(t, res.Body, "How can I help?</textarea>", "the form starts from v1")

	form := url.Values{"name": {"support/greeting"}, "type": {"text"}, "existing": {"1"}, "base": {"1"},
		"text": {"Hi {{name}} from {{city}}. @@@langfusePrompt:name=agent-note|label=production@@@"}, "config": {`{"model":"gpt-4o"}`},
		"labels": {"staging"}, "tags": {"support, v2"}, "commit": {"asks for the city"}, "op": {"preview"}}
	res = c.Post(editor, form)
	assert.Equal(t, http.StatusBadRequest, res.Status, "a reference to a prompt that does not exist")
	assert.Contains(t, res.Body, "agent-note")

	_, err := env.Store.CreatePrompt(context.Background(), env.ProjectID, controlplane.NewPrompt{Name: "agent-note",
		Prompt: text("Be brief."), Labels: []string{"production"}})
	require.NoError(t, err)
	res = c.Post(editor, form)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	detected := res.Body[strings.Index(res.Body, `data-testid="detected"`):]
	assert.Contains(t, detected, "<code>{{name}}</code> <code>{{city}}</code>")
	assert.Contains(t, res.Body, "Hi {{name}} from {{city}}. Be brief.</pre>", "the reference resolved")
	_, err = env.Store.GetPrompt(context.Background(), env.ProjectID, "support/greeting", controlplane.PromptSelector{Version: 3})
	assert.ErrorIs(t, err, controlplane.ErrNotFound, "a preview stores nothing")

	bad := cloneWith(form, "config", "{not json")
	bad.Set("op", "save")
	res = c.Post(editor, bad)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "config")
	assert.Contains(t, res.Body, "{not json</textarea>", "the form keeps what was typed")

	form.Set("op", "save")
	res = c.Post(editor, form)
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	assert.True(t, strings.HasSuffix(res.Header.Get("Location"), "/prompts/support/greeting?version=3"), res.Header.Get("Location"))
	p, err := env.Store.GetPrompt(context.Background(), env.ProjectID, "support/greeting", controlplane.PromptSelector{Version: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"latest", "staging"}, p.Labels)
	assert.Equal(t, []string{"support", "v2"}, p.Tags)
	assert.Equal(t, "asks for the city", p.CommitMessage)
	assert.Equal(t, env.OwnerEmail, p.CreatedBy)
	assert.JSONEq(t, `{"model":"gpt-4o"}`, string(p.Config))

	chat := url.Values{"name": {"new/chat"}, "type": {"chat"}, "role": {"system", "placeholder", "user", ""}, "content": {"You are {{persona}}.", "history", "Hi", ""},
		"config": {""}, "op": {"save"}}
	res = c.Post(editor, chat)
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	p, err = env.Store.GetPrompt(context.Background(), env.ProjectID, "new/chat", controlplane.PromptSelector{Version: 1})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"system","content":"You are {{persona}}."},{"type":"placeholder","name":"history"},{"role":"user","content":"Hi"}]`, string(p.Prompt))
}

func cloneWith(v url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	out.Set(key, value)
	return out
}

// Moving labels needs prompts:write, and production needs an admin.
func TestProductionLabelIsProtected(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	seed(t, env)
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	env.AddMember(t, "admin@example.com", controlplane.RoleAdmin)
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	labels := "/project/" + env.ProjectID + "/prompt-labels"
	page := "/project/" + env.ProjectID + "/prompts/support/greeting"
	labelOf := func(label string) int {
		p, err := env.Store.GetPrompt(context.Background(), env.ProjectID, "support/greeting", controlplane.PromptSelector{Label: label})
		if err != nil {
			return 0
		}
		return p.Version
	}
	as := func(email string) *uitest.Client {
		c := uitest.NewClient(t, env.URL)
		c.SignIn(email, uitest.MemberPassword)
		c.NoRedirects().Get(page)
		return c
	}
	set := func(label string) url.Values {
		return url.Values{"name": {"support/greeting"}, "version": {"2"}, "label": {label}}
	}

	member := as("member@example.com")
	res := member.Get(page + "?version=1")
	assert.NotContains(t, res.Body, `aria-label="Remove the label production"`, "a member is not offered to remove production")
	assert.Contains(t, res.Body, `data-testid="add-label"`)
	assert.Equal(t, http.StatusSeeOther, member.Post(labels, set("staging")).Status)
	assert.Equal(t, 2, labelOf("staging"))
	res = member.Post(labels, set("production"))
	assert.Equal(t, http.StatusForbidden, res.Status)
	assert.Contains(t, res.Body, "Only admins and owners move the production label")
	assert.Equal(t, http.StatusForbidden, member.Post(labels+"/remove", set("production")).Status)
	assert.Equal(t, 1, labelOf("production"))
	res = member.Post("/project/"+env.ProjectID+"/prompts/new", url.Values{"name": {"support/greeting"}, "type": {"text"}, "text": {"x"},
		"labels": {"production"}, "op": {"save"}})
	assert.Equal(t, http.StatusForbidden, res.Status, "nor can a member save a version straight into production")
	assert.Equal(t, http.StatusSeeOther, member.Post(labels+"/remove", set("staging")).Status)
	assert.Equal(t, 0, labelOf("staging"))

	viewer := as("viewer@example.com")
	assert.Equal(t, http.StatusForbidden, viewer.Post(labels, set("staging")).Status)
	assert.NotContains(t, viewer.Get(page).Body, `data-testid="add-label"`)

	admin := as("admin@example.com")
	assert.Equal(t, http.StatusSeeOther, admin.Post(labels, set("production")).Status)
	assert.Equal(t, 2, labelOf("production"), "production moved to v2")
	res = admin.Post(labels, set("latest"))
	assert.Equal(t, http.StatusBadRequest, res.Status, "latest moves by itself")
	assert.Equal(t, http.StatusSeeOther, admin.Post(labels+"/remove", set("production")).Status)
	assert.Equal(t, 0, labelOf("production"))
	assert.Equal(t, http.StatusOK, admin.Get(page).Status, "without production the page shows the latest version")
	assert.Equal(t, http.StatusNotFound, admin.Post(labels, url.Values{"name": {"nope"}, "version": {"1"}, "label": {"staging"}}).Status)
}
