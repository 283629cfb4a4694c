package scorelist_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// Three traces scored by a person (helpful), by a judge (judge_helpful,
// agreeing on two of three) and with a category (tone).
func TestScoresPage(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	human, judge := []float64{1, 0, 1}, []float64{1, 0, 0}
	var events []uitest.Event
	for i := range 3 {
		id := fmt.Sprintf("t-%d", i)
		events = append(events,
			uitest.Event{Type: "trace-create", Body: map[string]any{"id": id, "name": "chat", "timestamp": uitest.Time(at)}},
			uitest.Event{Type: "score-create", Body: map[string]any{"id": id + "-h", "traceId": id, "name": "helpful", "value": human[i], "comment": "<b>ok</b>"}},
			uitest.Event{Type: "score-create", Body: map[string]any{"id": id + "-j", "traceId": id, "name": "judge_helpful", "value": judge[i], "source": "EVAL"}},
			uitest.Event{Type: "score-create", Body: map[string]any{"id": id + "-t", "traceId": id, "name": "tone", "value": []string{"kind", "kind", "curt"}[i]}})
	}
	env.Ingest(t, events...)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	page := "/project/" + env.ProjectID + "/scores?range=24h"

	res := c.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "1–9 of 9")
	assert.Contains(t, res.Body, "&lt;b&gt;ok&lt;/b&gt;", "comments escaped")
	assert.Contains(t, res.Body, `href="/project/`+env.ProjectID+`/traces/t-1"`)

	res = c.Get(page + "&name=helpful&op=%3E%3D&value=1")
	assert.Contains(t, res.Body, "1–2 of 2", "the value filter")
	res = c.Get(page + "&source=EVAL")
	assert.Contains(t, res.Body, "1–3 of 3")
	assert.NotContains(t, res.Body, `data-id="t-0-h"`)
	assert.Equal(t, http.StatusBadRequest, c.Get(page+"&op=~&value=1").Status)

	res = c.Get(page + "&name=helpful&compare=judge_helpful")
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	dist := res.Body[strings.Index(res.Body, `data-testid="distribution"`):]
	dist = dist[:strings.Index(dist, "</section>")]
	assert.Contains(t, dist, `<span class="num">1</span>`, "one 0")
	assert.Contains(t, dist, `<span class="num">2</span>`, "two 1s")
	agree := res.Body[strings.Index(res.Body, `data-testid="agreement"`):]
	assert.Contains(t, agree, "<dd>3</dd>", "three traces have both")
	assert.Contains(t, agree, `<dd data-testid="exact">66.67%</dd>`)
	assert.Contains(t, agree, `<dd data-testid="correlation">0.5</dd>`)

	res = c.Get(page + "&name=tone")
	dist = res.Body[strings.Index(res.Body, `data-testid="distribution"`):]
	assert.Contains(t, dist, `<span class="dist-label">kind</span>`)
	assert.Contains(t, dist, `<span class="dist-label">curt</span>`)
}
