package tracing_test

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

func TestAddTracesToDatasetAndQueue(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	ctx := context.Background()
	env.ChatTrace(t, "t1", "support-chat", "alice", time.Now().Add(-time.Minute))
	env.ChatTrace(t, "t2", "support-chat", "bob", time.Now().Add(-time.Minute))
	_, err := env.Store.UpsertDataset(ctx, env.ProjectID, controlplane.DatasetUpsert{Name: "regressions"})
	require.NoError(t, err)
	q, err := env.Store.CreateAnnotationQueue(ctx, env.ProjectID, controlplane.NewAnnotationQueue{Name: "review"})
	require.NoError(t, err)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)

	res := c.Get("/project/" + env.ProjectID + "/traces?user=alice")
	assert.Contains(t, res.Body, `<option value="regressions">regressions</option>`)
	assert.Contains(t, res.Body, `<option value="`+q.ID+`">review</option>`)

	res = c.Post("/project/"+env.ProjectID+"/traces/add-to-dataset", url.Values{"id": {"t1", "t2"}, "dataset": {"regressions"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "2 traces added to dataset regressions.")
	items, total, err := env.Store.ListDatasetItems(ctx, env.ProjectID, controlplane.DatasetItemFilter{DatasetName: "regressions", SourceTraceID: "t1", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.JSONEq(t, `"It ships *tomorrow*."`, string(items[0].ExpectedOutput))
	var in map[string]any
	require.NoError(t, json.Unmarshal(items[0].Input, &in))
	assert.Contains(t, in, "messages")

	res = c.Post("/project/"+env.ProjectID+"/traces/add-to-queue", url.Values{"id": {"t1"}, "queue": {q.ID}})
	assert.Contains(t, res.Body, "1 traces added to the annotation queue (0 were in it already).")
	res = c.Post("/project/"+env.ProjectID+"/traces/add-to-queue", url.Values{"id": {"t1", "t2"}, "queue": {q.ID}})
	assert.Contains(t, res.Body, "1 traces added to the annotation queue (1 were in it already).")

	res = c.Post("/project/"+env.ProjectID+"/traces/add-to-dataset", url.Values{"id": {"t1"}, "dataset": {"missing"}})
	assert.Equal(t, http.StatusBadRequest, res.Status)
	res = c.Post("/project/"+env.ProjectID+"/traces/add-to-queue", url.Values{"id": {"no-such-trace"}, "queue": {q.ID}})
	assert.Equal(t, http.StatusNotFound, res.Status)

	// Observations go to datasets and queues from their table, sessions to
	// queues from theirs.
	res = c.Get("/project/" + env.ProjectID + "/observations")
	assert.Contains(t, res.Body, `formaction="/project/`+env.ProjectID+`/observations/add-to-queue"`)
	res = c.Post("/project/"+env.ProjectID+"/observations/add-to-dataset", url.Values{"id": {"t2-llm"}, "dataset": {"regressions"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "1 observations added to dataset regressions.")
	items, _, err = env.Store.ListDatasetItems(ctx, env.ProjectID, controlplane.DatasetItemFilter{DatasetName: "regressions", SourceObservationID: "t2-llm", Limit: 10})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "t2", items[0].SourceTraceID)
	assert.JSONEq(t, `{"role":"assistant","content":"It ships tomorrow."}`, string(items[0].ExpectedOutput))
	res = c.Post("/project/"+env.ProjectID+"/observations/add-to-queue", url.Values{"id": {"t2-llm"}, "queue": {q.ID}})
	assert.Contains(t, res.Body, "1 observations added to the annotation queue")
	res = c.Get("/project/" + env.ProjectID + "/sessions")
	assert.Contains(t, res.Body, `formaction="/project/`+env.ProjectID+`/sessions/add-to-queue"`)
	assert.NotContains(t, res.Body, "sessions/add-to-dataset")
	res = c.Post("/project/"+env.ProjectID+"/sessions/add-to-queue", url.Values{"id": {"session-alice"}, "queue": {q.ID}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "1 sessions added to the annotation queue")
	queued, _, err := env.Store.ListAnnotationQueueItems(ctx, env.ProjectID, q.ID, "", 0, 10)
	require.NoError(t, err)
	types := map[string]string{}
	for _, it := range queued {
		types[it.ObjectID] = it.ObjectType
	}
	assert.Equal(t, map[string]string{"t1": "TRACE", "t2": "TRACE", "t2-llm": "OBSERVATION", "session-alice": "SESSION"}, types)
	assert.Equal(t, http.StatusNotFound, c.Post("/project/"+env.ProjectID+"/sessions/add-to-queue", url.Values{"id": {"no-session"}, "queue": {q.ID}}).Status)
}

func TestAddScoreThroughAConfig(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	ctx := context.Background()
	env.ChatTrace(t, "t1", "support-chat", "alice", time.Now().Add(-time.Minute))
	lo, hi := 0.0, 1.0
	helpful, err := env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: "helpfulness", DataType: "NUMERIC", MinValue: &lo, MaxValue: &hi})
	require.NoError(t, err)
	tone, err := env.Store.CreateScoreConfig(ctx, env.ProjectID, controlplane.NewScoreConfig{Name: "tone", DataType: "CATEGORICAL",
		Categories: []controlplane.ScoreCategory{{Value: 0, Label: "rude"}, {Value: 1, Label: "kind"}}})
	require.NoError(t, err)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	page := "/project/" + env.ProjectID + "/traces/t1"

	res := c.Get(page)
	assert.Contains(t, res.Body, "helpfulness (numeric: 0–1)")
	res = c.Post(page+"/scores", url.Values{"config": {helpful.ID}, "value": {"0.8"}, "comment": {"good answer"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "helpfulness: <strong>0.8</strong>")
	res = c.Post(page+"/scores", url.Values{"config": {tone.ID}, "value": {"kind"}, "observation": {"t1-llm"}})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Equal(t, "t1-llm", res.URL.Query().Get("observation"))
	assert.Contains(t, res.Body, "tone: <strong>kind</strong>")

	res = c.Post(page+"/scores", url.Values{"config": {helpful.ID}, "value": {"7"}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "outside the config's range")
	res = c.Post(page+"/scores", url.Values{"config": {tone.ID}, "value": {"sarcastic"}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "not a category")

	// A viewer sees the scores but no form.
	env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	v := uitest.NewClient(t, env.URL)
	v.SignIn("viewer@example.com", uitest.MemberPassword)
	res = v.Get(page)
	assert.Contains(t, res.Body, "helpfulness")
	assert.NotContains(t, res.Body, `data-testid="add-score"`)
}

// A filter input's first focus fetches its values in the time range with
// their trace counts, most frequent first.
func TestFilterOptionsWithCounts(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	at := time.Now().Add(-time.Hour)
	env.ChatTrace(t, "t1", "support-chat", "alice", at)
	env.ChatTrace(t, "t2", "support-chat", "alice", at)
	env.ChatTrace(t, "t3", "billing-chat", "bob", at)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	base := "/project/" + env.ProjectID + "/traces"

	res := c.Get(base)
	assert.Contains(t, res.Body, `hx-get="/project/`+env.ProjectID+`/traces/filter-options?field=user"`)
	res = c.Get(base + "?range=24h")
	assert.Contains(t, res.Body, `hx-get="/project/`+env.ProjectID+`/traces/filter-options?range=24h&amp;field=user"`, "the input asks with the page's range")
	res = c.Get(base + "/filter-options?range=24h&field=user")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, `<datalist id="opts-user"><option value="alice">2 traces</option><option value="bob">1 traces</option></datalist>`, strings.TrimSpace(res.Body))
	res = c.Get(base + "/filter-options?range=24h&field=name")
	assert.Contains(t, res.Body, `<option value="support-chat">2 traces</option><option value="billing-chat">1 traces</option>`)
	res = c.Get(base + "/filter-options?range=5m&field=env")
	assert.Equal(t, `<datalist id="opts-env"></datalist>`, strings.TrimSpace(res.Body), "nothing in the last five minutes")
	assert.Equal(t, http.StatusBadRequest, c.Get(base+"/filter-options?field=input").Status)
}
