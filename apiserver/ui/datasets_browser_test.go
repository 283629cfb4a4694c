package ui_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// TestBrowserDatasets creates a dataset and an item through the pages in
// Chromium, sees a schema error at its field, then compares two runs an
// experiment made over the dataset.
func TestBrowserDatasets(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	b.Go(p + "/datasets")
	b.Type(`[data-testid=new-dataset] input[name=name]`, "support/refunds")
	b.Click(`[data-testid=new-dataset] details summary`)
	b.SetValue(`[data-testid=new-dataset] textarea[name=input_schema]`, `{"type":"object","required":["question"]}`)
	b.ClickAndWait(`[data-testid=new-dataset] button`)
	assert.Equal(t, "support/refunds", b.Text(`[data-testid=dataset-name]`))
	b.ClickAndWait(`nav.tabs a[href$="tab=items"]`)
	b.SetValue(`[data-testid=new-item] textarea[name=input]`, `{"q": "missing the question"}`)
	b.ClickAndWait(`[data-testid=new-item] button`)
	assert.Contains(t, b.Text(`[data-testid=form-error]`), "question")
	assert.Equal(t, 1, b.Count(`[data-testid=new-item] label.invalid`), "the field at fault is marked")
	b.SetValue(`[data-testid=new-item] textarea[name=input]`, `{"question": "Can I get a refund after 30 days?"}`)
	b.SetValue(`[data-testid=new-item] textarea[name=expected_output]`, `"Yes, within 60 days with a receipt."`)
	b.ClickAndWait(`[data-testid=new-item] button`)
	assert.Equal(t, 1, b.Count(`[data-testid=items] tbody tr[data-item]`))
	b.Screenshot("dataset-items")

	// Two experiment runs over the item, scored by a judge.
	ctx := context.Background()
	ds, err := env.Store.GetDataset(ctx, env.ProjectID, "support/refunds")
	require.NoError(t, err)
	items, _, err := env.Store.ListDatasetItems(ctx, env.ProjectID, controlplane.DatasetItemFilter{DatasetName: ds.Name, Limit: 1})
	require.NoError(t, err)
	at := time.Now().Add(-time.Hour)
	for i, run := range []string{"prompt-v1", "prompt-v2"} {
		trace := run + "-trace"
		env.Ingest(t,
			uitest.Event{Type: "trace-create", Body: map[string]any{"id": trace, "name": "experiment", "timestamp": uitest.Time(at),
				"input": json.RawMessage(items[0].Input), "output": []string{"Refunds take 30 days.", "Yes: within 60 days, with the receipt."}[i]}},
			uitest.Event{Type: "score-create", Body: map[string]any{"id": trace + "-judge", "traceId": trace, "name": "correctness", "value": []float64{0.2, 0.9}[i]}})
		_, err := env.Store.CreateDatasetRunItem(ctx, env.ProjectID, controlplane.NewDatasetRunItem{RunName: run, DatasetItemID: items[0].ID, TraceID: trace})
		require.NoError(t, err)
	}
	b.Go(p + "/datasets/" + ds.ID)
	b.WaitVisible(`[data-testid=runs]`)
	assert.Equal(t, 2, b.Count(`[data-testid=runs] tbody tr[data-run]`))
	b.Screenshot("dataset-runs")
	b.ClickAndWait(`[data-testid=runs-form] button[type=submit]`)
	assert.Contains(t, b.Text(`[data-testid=compare]`), "Refunds take 30 days.")
	assert.Contains(t, b.Text(`[data-testid=compare]`), "within 60 days, with the receipt")
	assert.Equal(t, 2, b.Count(`[data-testid=distributions] .dist-run`))
	b.Screenshot("dataset-compare")
	// The refused item answered 400, which the browser logs; nothing else.
	assert.Equal(t, []string{"error: Failed to load resource: the server responded with a status of 400 (Bad Request)"}, b.ConsoleErrors())
}
