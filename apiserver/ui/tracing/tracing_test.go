package tracing_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

type ev = map[string]any

func TestTracesTableAndTrace(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-time.Minute)
	env.ChatTrace(t, "trace-a", "support-chat", "alice", now.Add(-2*time.Minute))
	env.ChatTrace(t, "trace-b", "billing-chat", "bob", now.Add(-time.Minute))
	env.ChatTrace(t, "trace-c", "support-chat", "carol", now)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	res := c.Get("/project/" + env.ProjectID + "/traces")
	require.Equal(t, http.StatusOK, res.Status)
	body := res.Body
	assert.Less(t, strings.Index(body, "trace-c"), strings.Index(body, "trace-b"), "newest first")
	assert.Less(t, strings.Index(body, "trace-b"), strings.Index(body, "trace-a"))
	assert.Contains(t, body, "support-chat")
	assert.Contains(t, body, `href="/project/`+env.ProjectID+`/users/alice"`)
	assert.Contains(t, body, `<span class="tag">vip</span>`)
	assert.Contains(t, body, "$0.0012")
	assert.Contains(t, body, "1–3 of 3")

	res = c.Get("/project/" + env.ProjectID + "/traces?user=bob")
	assert.Contains(t, res.Body, "trace-b")
	assert.NotContains(t, res.Body, "trace-a")
	assert.Contains(t, res.Body, `value="bob"`, "the filter stays in the form")

	res = c.Get("/project/" + env.ProjectID + "/traces?sort=name.asc&col=name&col=user")
	assert.Less(t, strings.Index(res.Body, "billing-chat"), strings.Index(res.Body, "support-chat"))
	assert.NotContains(t, res.Body, ">Latency<", "only the chosen columns")

	// The trace: tree, timeline and the trace's own input rendered as chat.
	res = c.Get("/project/" + env.ProjectID + "/traces/trace-b")
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "billing-chat")
	assert.Regexp(t, `class="node d1[^"]*"[^>]*data-observation-id="trace-b-retrieve"`, res.Body)
	assert.Regexp(t, `class="node d2[^"]*"[^>]*data-observation-id="trace-b-llm"`, res.Body, "the generation sits under the span")
	assert.Contains(t, res.Body, "<strong>order</strong>", "markdown in the input")
	assert.Contains(t, res.Body, `<span class="jk">team</span>`, "metadata as a tree")

	res = c.Get("/project/" + env.ProjectID + "/traces/trace-b?observation=trace-b-llm")
	assert.Contains(t, res.Body, `data-selected="trace-b-llm"`)
	assert.Contains(t, res.Body, `<span data-testid="model">gpt-4o</span>`)
	assert.Contains(t, res.Body, "input 120 · output 30 · total 150")
	assert.Contains(t, res.Body, "$0.0012")
	assert.Contains(t, res.Body, "tool call · <strong>lookup_order</strong>")
	assert.Contains(t, res.Body, "You are a helpful support agent.")
	assert.Contains(t, res.Body, "Time to first token")

	// htmx asks for the detail pane alone.
	res = c.Do(http.MethodGet, "/project/"+env.ProjectID+"/traces/trace-b?observation=trace-b-retrieve", nil, http.Header{"HX-Request": {"true"}})
	assert.True(t, strings.HasPrefix(res.Body, `<section id="detail"`), res.Body[:min(80, len(res.Body))])

	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/traces/no-such-trace").Status)
}

func TestPrevNextWalkTheFilteredList(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-time.Minute)
	for i, name := range []string{"support-chat", "billing-chat", "support-chat", "support-chat"} {
		env.ChatTrace(t, fmt.Sprintf("t%d", i), name, "u", now.Add(time.Duration(i)*time.Second))
	}
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	list := url.Values{"name": {"support-chat"}}.Encode()
	res := c.Get("/project/" + env.ProjectID + "/traces/t2?list=" + url.QueryEscape(list))
	assert.Regexp(t, `href="/project/[^/]+/traces/t3\?list=[^"]*" class="button secondary" rel="prev"`, res.Body)
	assert.Regexp(t, `href="/project/[^/]+/traces/t0\?list=[^"]*" class="button secondary" rel="next"`, res.Body, "t1 is not a support chat")
}

func TestDeleteTraces(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.ChatTrace(t, "keep", "a", "u", time.Now().Add(-time.Minute))
	env.ChatTrace(t, "drop", "b", "u", time.Now().Add(-time.Minute))
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	res := c.Get("/project/" + env.ProjectID + "/traces")
	assert.Contains(t, res.Body, `formaction="/project/`+env.ProjectID+`/traces/delete"`)
	res = c.Post("/project/"+env.ProjectID+"/traces/delete", url.Values{"id": {"drop"}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, "/project/"+env.ProjectID+"/traces", res.URL.Path)
	assert.Contains(t, res.Body, "keep")
	assert.NotContains(t, res.Body, `data-id="drop"`)
	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/traces/drop").Status)
}

func TestPublicTraceIsSharedReadOnly(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.ChatTrace(t, "private", "secret-chat", "u", time.Now().Add(-time.Minute))
	env.ChatTrace(t, "shared", "shared-chat", "u", time.Now().Add(-time.Minute))
	env.Ingest(t, uitest.Event{Type: "trace-create", Body: ev{"id": "shared", "public": true}})

	anon := uitest.NewClient(t, env.URL).NoRedirects()
	res := anon.Get("/project/" + env.ProjectID + "/traces/private")
	assert.Equal(t, http.StatusFound, res.Status, "a private trace asks to sign in")
	res = anon.Get("/project/" + env.ProjectID + "/traces/shared")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "shared-chat")
	assert.Contains(t, res.Body, "It ships")
	assert.NotContains(t, res.Body, "← Traces", "no way into the project")
	assert.NotContains(t, res.Body, `href="/project/`+env.ProjectID+`/users/`)
	assert.NotContains(t, res.Body, "sidebar")
	res = anon.Get("/project/" + env.ProjectID + "/traces/no-such-trace")
	assert.Equal(t, http.StatusFound, res.Status, "a missing trace looks like a private one")
}

func TestUserPage(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	first := time.Now().Add(-48 * time.Hour)
	env.ChatTrace(t, "old", "support-chat", "alice", first)
	env.ChatTrace(t, "new", "billing-chat", "alice", time.Now().Add(-time.Minute))
	env.ChatTrace(t, "other", "support-chat", "bob", time.Now().Add(-time.Minute))
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	res := c.Get("/project/" + env.ProjectID + "/users/alice")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-id="old"`)
	assert.Contains(t, res.Body, `data-id="new"`)
	assert.NotContains(t, res.Body, `data-id="other"`)
	assert.Contains(t, res.Body, first.UTC().Format("2006-01-02 15:04"), "first seen")
	assert.Contains(t, res.Body, "1–2 of 2")
	assert.Equal(t, http.StatusNotFound, c.Get("/project/"+env.ProjectID+"/users/nobody").Status)
}

// The traces table's extra filters go through the metrics engine's grammar:
// a metadata key, a score's average, cost and latency ranges, raw filter
// JSON; a value that is not a number or JSON that is not the grammar is a
// 400 that says what to fix.
func TestTracesFilters(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "trace-a", "support-chat", "alice", now)
	env.ChatTrace(t, "trace-b", "billing-chat", "bob", now.Add(time.Minute))
	env.Ingest(t,
		uitest.Event{Type: "trace-create", Body: ev{"id": "trace-c", "name": "free-chat", "timestamp": uitest.Time(now.Add(2 * time.Minute)),
			"metadata": ev{"team": "sales", "nested": ev{"depth": 3}}}},
		uitest.Event{Type: "span-create", Body: ev{"id": "c-fail", "traceId": "trace-c", "name": "lookup", "level": "ERROR",
			"statusMessage": "timeout", "startTime": uitest.Time(now.Add(2 * time.Minute))}},
		uitest.Event{Type: "score-create", Body: ev{"id": "s-a", "traceId": "trace-a", "name": "quality", "value": 0.9}},
		uitest.Event{Type: "score-create", Body: ev{"id": "s-b", "traceId": "trace-b", "name": "quality", "value": 0.2}},
	)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	shown := func(query string) []string {
		t.Helper()
		res := c.Get("/project/" + env.ProjectID + "/traces?range=24h&" + query)
		require.Equal(t, http.StatusOK, res.Status, res.Body)
		var ids []string
		for _, id := range []string{"trace-a", "trace-b", "trace-c"} {
			if strings.Contains(res.Body, `data-id="`+id+`"`) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	assert.Equal(t, []string{"trace-a", "trace-b", "trace-c"}, shown(""))
	assert.Equal(t, []string{"trace-c"}, shown("meta_key=team&meta_value=sales"))
	assert.Equal(t, []string{"trace-a", "trace-b"}, shown("meta_key=team&meta_value=support"))
	assert.Equal(t, []string{"trace-c"}, shown("meta_key=nested.depth&meta_value=3"), "nested keys")
	assert.Equal(t, []string{"trace-a"}, shown("score_name=quality&score_min=0.5"))
	assert.Equal(t, []string{"trace-a", "trace-b"}, shown("cost_min=0.001"), "the chat traces cost $0.0012 each")
	assert.Equal(t, []string{"trace-c"}, shown("cost_max=0.0001"))
	assert.Equal(t, []string{"trace-a", "trace-b"}, shown("text=TOMORROW"), "the chat traces' output, whatever the case")
	assert.Equal(t, []string{"trace-c"}, shown("filter="+url.QueryEscape(`[{"column":"name","type":"string","operator":"starts with","value":"free"}]`)))

	// A column per score name, with each trace's average.
	res := c.Get("/project/" + env.ProjectID + "/traces?range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, ">quality<")
	rowOf := func(id string) string {
		i := strings.Index(res.Body, `data-id="`+id+`"`)
		require.Positive(t, i)
		return res.Body[i : i+strings.Index(res.Body[i:], "</tr>")]
	}
	assert.Contains(t, rowOf("trace-a"), ">0.9<")
	assert.Contains(t, rowOf("trace-a"), ">150<", "the chat trace's tokens")
	assert.Contains(t, rowOf("trace-a"), ">DEFAULT<", "its level")
	assert.Contains(t, rowOf("trace-c"), ">ERROR<", "a trace with a failed observation")
	assert.Contains(t, rowOf("trace-b"), ">0.2<")

	res = c.Get("/project/" + env.ProjectID + "/traces?cost_min=cheap")
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "The minimum cost must be a number")
	res = c.Get("/project/" + env.ProjectID + "/traces?filter=" + url.QueryEscape(`[{"column":"nope","type":"string","operator":"=","value":"x"}]`))
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "nope")
}

// The users list: each user of the window with traces, tokens, cost, first
// and last seen from the metrics engine, sorted by a column, linking to the
// user's page.
func TestUsersList(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "trace-a", "support-chat", "alice", now)
	env.ChatTrace(t, "trace-b", "support-chat", "alice", now.Add(10*time.Minute))
	env.ChatTrace(t, "trace-c", "billing-chat", "<b>bob</b>", now.Add(5*time.Minute))
	env.Ingest(t, uitest.Event{Type: "trace-create", Body: ev{"id": "anon", "name": "no-user", "timestamp": uitest.Time(now)}})
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	res := c.Get("/project/" + env.ProjectID + "/users?range=24h")
	require.Equal(t, http.StatusOK, res.Status)
	alice := strings.Index(res.Body, `data-id="alice"`)
	bob := strings.Index(res.Body, `data-id="&lt;b&gt;bob&lt;/b&gt;"`)
	require.Positive(t, alice)
	require.Positive(t, bob, "user ids are escaped")
	assert.Less(t, alice, bob, "most traces first")
	row := res.Body[alice : alice+strings.Index(res.Body[alice:], "</tr>")]
	assert.Contains(t, row, ">2<", "two traces")
	assert.Contains(t, row, "300", "150 tokens per chat trace")
	assert.Contains(t, row, "$0.0024")
	assert.Contains(t, row, `href="/project/`+env.ProjectID+`/users/alice"`)
	assert.NotContains(t, res.Body, "no-user")

	res = c.Get("/project/" + env.ProjectID + "/users?range=24h&sort=last.desc")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Less(t, strings.Index(res.Body, `data-id="alice"`), strings.Index(res.Body, `data-id="&lt;b&gt;bob&lt;/b&gt;"`), "alice was seen last")
	res = c.Get("/project/" + env.ProjectID + "/users?range=24h&sort=traces.asc")
	assert.Greater(t, strings.Index(res.Body, `data-id="alice"`), strings.Index(res.Body, `data-id="&lt;b&gt;bob&lt;/b&gt;"`), "fewest traces first")
}
