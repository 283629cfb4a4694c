package datasets_test

import (
	"context"
	"encoding/json"
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

const schema = `{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`

func TestDatasetsAndItems(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	list := "/project/" + env.ProjectID + "/datasets"
	c.Get(list)

	res := c.Post(list, url.Values{"name": {"support/hard <cases>"}, "description": {"tricky"}, "input_schema": {schema}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	page := res.Header.Get("Location")
	res = c.Post(list, url.Values{"name": {"support/hard <cases>"}})
	assert.Equal(t, http.StatusConflict, res.Status)
	assert.Contains(t, res.Body, "exists already")
	res = c.Post(list, url.Values{"name": {"bad schema"}, "input_schema": {`{"type": 12}`}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "a schema that is no schema")

	res = c.Get(list)
	assert.Contains(t, res.Body, `data-folder="support"`)
	res = c.Get(list + "?folder=support")
	assert.Contains(t, res.Body, "hard &lt;cases&gt;")

	items := strings.TrimPrefix(page, "") + "/items"
	res = c.Post(items, url.Values{"input": {`what is up`}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "Input is not valid JSON")
	assert.Contains(t, res.Body, "what is up</textarea>", "the editor keeps what was typed")
	res = c.Post(items, url.Values{"input": {`{"q": "no question"}`}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "the dataset's schema applies")
	assert.Contains(t, res.Body, "question")
	assert.Contains(t, res.Body, `class="field invalid"`, "the error is shown at the field")
	res = c.Post(items, url.Values{"id": {"item-1"}, "input": {`{"question": "<script>alert(1)</script>"}`}, "expected_output": {`"an answer"`}, "metadata": {`{"tier": 1}`}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = c.Post(items, url.Values{"id": {"item-1"}, "input": {`{"question": "again"}`}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "a new item cannot take an existing id")

	res = c.Get(page + "?tab=items")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-item="item-1"`)
	assert.Contains(t, res.Body, `question`)
	assert.NotContains(t, res.Body, "<script>alert(1)")

	item := page + "/items/item-1"
	res = c.Get(item)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "&#34;tier&#34;: 1")
	res = c.Post(item, url.Values{"op": {"save"}, "input": {`{"nope": 1}`}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "edits are checked against the schema too")
	require.Equal(t, http.StatusSeeOther, c.Post(item, url.Values{"op": {"save"}, "input": {`{"question": "edited"}`}, "expected_output": {""}}).Status)
	it, err := env.Store.GetDatasetItem(context.Background(), env.ProjectID, "item-1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"question": "edited"}`, string(it.Input))
	assert.Nil(t, it.ExpectedOutput, "an emptied field is cleared")
	require.Equal(t, http.StatusSeeOther, c.Post(item, url.Values{"op": {"archive"}}).Status)
	assert.NotContains(t, c.Get(page+"?tab=items").Body, `data-item="item-1"`, "archived items leave the list")
	assert.Contains(t, c.Get(item).Body, "Archived")
	require.Equal(t, http.StatusSeeOther, c.Post(item, url.Values{"op": {"restore"}}).Status)
	assert.Contains(t, c.Get(page+"?tab=items").Body, `data-item="item-1"`)

	viewer := uitest.NewClient(t, env.URL)
	viewer.SignIn("viewer@example.com", uitest.MemberPassword)
	res = viewer.Get(item)
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, "edit-item")
	assert.Equal(t, http.StatusForbidden, viewer.Post(item, url.Values{"op": {"archive"}}).Status)
	assert.Equal(t, http.StatusForbidden, viewer.Post(items, url.Values{"input": {`{"question": "x"}`}}).Status)
	assert.Equal(t, http.StatusNotFound, c.Get(list+"/no-such-dataset").Status)
	assert.Equal(t, http.StatusNotFound, c.Get(page+"/items/no-such-item").Status)
}

// Two runs over the same items, each item's trace scored: the runs table
// shows each run's figures, and the comparison shows them item by item.
func TestRunsAndComparison(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	ctx := context.Background()
	ds, err := env.Store.UpsertDataset(ctx, env.ProjectID, controlplane.DatasetUpsert{Name: "qa"})
	require.NoError(t, err)
	at := time.Now().Add(-time.Hour)
	var events []uitest.Event
	for i, q := range []string{"first question", "second question"} {
		itemID := "qa-" + string(rune('1'+i))
		_, err := env.Store.UpsertDatasetItem(ctx, env.ProjectID, controlplane.DatasetItemUpsert{DatasetName: "qa", ID: itemID,
			Input: json.RawMessage(`"` + q + `"`), ExpectedOutput: json.RawMessage(`"yes"`)})
		require.NoError(t, err)
		for r, run := range []string{"baseline", "candidate"} {
			trace := run + "-" + itemID
			score := []float64{0.2, 0.4}[i] + 0.5*float64(r) // candidate scores 0.5 higher
			events = append(events,
				uitest.Event{Type: "trace-create", Body: map[string]any{"id": trace, "name": "experiment", "timestamp": uitest.Time(at),
					"input": q, "output": run + " answer to " + q}},
				uitest.Event{Type: "generation-create", Body: map[string]any{"id": trace + "-gen", "traceId": trace, "name": "llm",
					"startTime": uitest.Time(at), "endTime": uitest.Time(at.Add(time.Duration(r+1) * time.Second)), "costDetails": map[string]any{"total": 0.25}}},
				uitest.Event{Type: "score-create", Body: map[string]any{"id": trace + "-score", "traceId": trace, "name": "correctness", "value": score}})
			_, err := env.Store.CreateDatasetRunItem(ctx, env.ProjectID, controlplane.NewDatasetRunItem{RunName: run, DatasetItemID: itemID, TraceID: trace})
			require.NoError(t, err)
		}
	}
	env.Ingest(t, events...)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	page := "/project/" + env.ProjectID + "/datasets/" + ds.ID

	res := c.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	row := func(body, attr string) string {
		i := strings.Index(body, attr)
		require.Positive(t, i, attr)
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	base := row(res.Body, `data-run="baseline"`)
	assert.Contains(t, base, `<td class="num">2</td>`, "two items")
	assert.Contains(t, base, "$0.50", "the cost of its two traces")
	assert.Contains(t, base, `<td class="num">0.3</td>`, "its average correctness")
	assert.Contains(t, row(res.Body, `data-run="candidate"`), `<td class="num">0.8</td>`)

	res = c.Get(page + "/compare")
	require.Equal(t, http.StatusOK, res.Status, "without a choice the two newest runs")
	first := row(res.Body, `<tr data-item="qa-1">`)
	b, cand := strings.Index(first, "baseline answer to first question"), strings.Index(first, "candidate answer to first question")
	assert.True(t, b > 0 && cand > b, "the outputs side by side, older run first")
	assert.Contains(t, first, "correctness: 0.2")
	assert.Contains(t, first, "correctness: 0.7")
	assert.Contains(t, first, `href="/project/`+env.ProjectID+`/traces/candidate-qa-1"`)
	assert.Contains(t, res.Body, `data-score="correctness"`, "a distribution per score")

	res = c.Get(page + "/compare?runs=candidate")
	only := row(res.Body, `<tr data-item="qa-2">`)
	assert.Contains(t, only, "candidate answer to second question")
	assert.NotContains(t, only, "baseline answer")
}
