package ui_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

const experimentKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// TestBrowserPromptExperiment is the evaluation loop without code: a user
// edits a prompt in the playground and saves version 2, runs an experiment over a
// dataset with version 1 and one with version 2 (the model and the LLM
// judge a local fake), watches each finish, and compares the two runs.
func TestBrowserPromptExperiment(t *testing.T) {
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", experimentKey)
	fake := llmtest.New(t, func(r llmtest.Request) string {
		if r.Schema { // the judge: an answer that names the receipt is correct
			if _, got, _ := strings.Cut(r.Prompt, "got "); strings.Contains(got, "receipt") {
				return `{"reasoning":"names the receipt","score":1}`
			}
			return `{"reasoning":"misses the receipt","score":0}`
		}
		if body, _ := json.Marshal(r.Body); strings.Contains(string(body), "mention the receipt") {
			return "Yes, with the receipt, within 60 days."
		}
		return "Yes."
	})
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) {
		c.Evaluation.Enabled = true
		c.Evaluation.PollInterval = 50 * time.Millisecond
		c.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"}
	}})
	ctx := context.Background()
	box, err := secretbox.FromEnv(func(string) string { return experimentKey })
	require.NoError(t, err)
	_, err = env.Store.UpsertLLMConnection(ctx, box, env.ProjectID, controlplane.LLMConnectionUpsert{Provider: "local", SecretKey: "sk-local-0123456789",
		BaseURL: fake.URL(), DefaultModel: ptr("gpt-4o-mini"), Timeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = env.Store.CreateEvaluator(ctx, env.ProjectID, controlplane.NewEvaluator{Name: "refund judge", Kind: controlplane.EvaluatorLLM,
		ScoreName: "correct", Output: controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric, Min: ptr(0.0), Max: ptr(1.0), Description: "correctness"},
		Prompt: "Expected {{expected_output}}, got {{output}}"})
	require.NoError(t, err)
	ds, err := env.Store.UpsertDataset(ctx, env.ProjectID, controlplane.DatasetUpsert{Name: "refunds"})
	require.NoError(t, err)
	for _, q := range []string{"Can I return shoes?", "Can I return a phone?"} {
		_, err := env.Store.UpsertDatasetItem(ctx, env.ProjectID, controlplane.DatasetItemUpsert{DatasetName: "refunds",
			Input: json.RawMessage(`{"question":"` + q + `"}`), ExpectedOutput: json.RawMessage(`"Yes, with the receipt."`)})
		require.NoError(t, err)
	}
	_, err = env.Store.CreatePrompt(ctx, env.ProjectID, controlplane.NewPrompt{Name: "refund-answer", Type: controlplane.PromptChat,
		Prompt: json.RawMessage(`[{"role":"system","content":"Answer in one line."},{"role":"user","content":"{{question}}"}]`),
		Labels: []string{controlplane.LabelProduction}})
	require.NoError(t, err)

	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 3*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	// Version 2 is made in the playground: the system message asks for the
	// receipt, a run streams the new answer, and it is saved.
	b.Go(p + "/prompts/refund-answer")
	b.ClickAndWait(`[data-testid=open-in-playground]`)
	b.SetValue(`[data-testid=playground] textarea[aria-label="Message 1 of variant 1"]`, "Answer in one line and mention the receipt.")
	b.Type(`[data-testid=variables] input[aria-label="Value of question"]`, "Can I return a lamp?")
	b.Click(`[data-testid=run]`)
	b.WaitFor(`document.querySelector("[data-testid=output-0]").dataset.done === "true"`)
	assert.Equal(t, "Yes, with the receipt, within 60 days.", b.Text(`[data-testid=output-0]`), "the answer streamed in")
	uitest.Eval[bool](b, `(window.scrollTo(0, 0), true)`)
	b.Screenshot("playground")
	b.Type(`[data-testid=playground] input[name=commit]`, "mention the receipt")
	b.ClickAndWait(`[data-testid=save-0]`)
	assert.Contains(t, b.Text(`[data-testid=version]`), "Version 2")
	assert.Contains(t, b.Text(`[data-testid=commit]`), "mention the receipt")

	run := func(prompt, name string) {
		b.Go(p + "/datasets/" + ds.ID)
		b.ClickAndWait(`[data-testid=new-experiment-link]`)
		b.SetValue(`[data-testid=new-experiment] select[name=prompt]`, "refund-answer@"+prompt)
		b.Click(`[data-testid=new-experiment] input[name=evaluator]`)
		b.SetValue(`[data-testid=new-experiment] input[name=run_name]`, name)
		if name == "v1" {
			b.Screenshot("experiment-new")
		}
		b.ClickAndWait(`[data-testid=new-experiment] button`)
		assert.Equal(t, name, b.Text(`[data-testid=run-name]`))
		b.WaitFor(`document.querySelector("[data-testid=finished]") !== null`)
	}
	run("1", "v1")
	run("2", "v2")
	assert.Contains(t, b.Text(`[data-testid=experiment-progress]`), "4 of 4 jobs done", "per run: an answer and a judgement for each of the two items")
	b.Screenshot("experiment")
	b.ClickAndWait(`[data-testid=compare-link]`)
	summary := b.Text(`[data-testid=run-summary]`)
	assert.Contains(t, summary, "v1")
	assert.Contains(t, summary, "v2")
	compare := b.Text(`[data-testid=compare]`)
	assert.Contains(t, compare, "Yes, with the receipt, within 60 days.")
	assert.Contains(t, compare, "correct: 1")
	assert.Contains(t, compare, "correct: 0")
	assert.Empty(t, b.ConsoleErrors())
}

func ptr[T any](v T) *T { return &v }
