package evalworker // import "github.com/glassbox-dev/glassbox/apiserver/evalworker"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
	"github.com/glassbox-dev/glassbox/internal/llm"
)

// ExperimentEnvironment is the environment of the traces prompt
// experiments write.
const ExperimentEnvironment = "prompt-experiment"

// loadExperiment returns a job's experiment, or a skip when it is gone.
func (w *Worker) loadExperiment(ctx context.Context, job evalqueue.Job) (controlplane.Experiment, error) {
	x, err := w.cp.GetExperiment(ctx, job.ProjectID, job.ExperimentID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return x, skipError{reason: "the experiment was deleted"}
	}
	return x, err
}

// runExperimentItem runs the experiment's prompt on one dataset item,
// records the call as the item's trace in the run, and queues the
// experiment's evaluators on it. A retry writes the same trace ids again.
func (w *Worker) runExperimentItem(ctx context.Context, job evalqueue.Job) (evalqueue.Outcome, error) {
	x, err := w.loadExperiment(ctx, job)
	if err != nil {
		return evalqueue.Outcome{}, err
	}
	item, err := w.cp.GetDatasetItem(ctx, job.ProjectID, job.DatasetItemID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return evalqueue.Outcome{}, skipError{reason: "the dataset item was deleted"}
	}
	if err != nil {
		return evalqueue.Outcome{}, err
	}
	prompt, err := w.cp.ResolvePrompt(ctx, job.ProjectID, x.PromptName, controlplane.PromptSelector{Version: x.PromptVersion})
	if err != nil {
		return evalqueue.Outcome{}, permanent(fmt.Errorf("prompt %q version %d: %w", x.PromptName, x.PromptVersion, err))
	}
	messages, err := compilePrompt(prompt, itemVariables(item))
	if err != nil {
		return evalqueue.Outcome{}, permanent(err)
	}
	creds, err := w.cp.LLMCredentials(ctx, w.box, job.ProjectID, x.ConnectionID)
	if err != nil {
		return evalqueue.Outcome{}, permanent(fmt.Errorf("llm connection: %w", err))
	}
	config := map[string]any{}
	if len(prompt.Config) > 0 {
		_ = json.Unmarshal(prompt.Config, &config)
	}
	promptModel, _ := config["model"].(string)
	delete(config, "model")
	promptParams, _ := json.Marshal(config)
	modelName := cmpOr(x.Model, cmpOr(promptModel, creds.DefaultModel))
	if modelName == "" {
		return evalqueue.Outcome{}, permanent(errors.New("no model: set one on the experiment, in the prompt's config or on the connection"))
	}
	params, err := mergeParams(creds.DefaultParams, promptParams, x.ModelParams)
	if err != nil {
		return evalqueue.Outcome{}, permanent(err)
	}
	_, traceID, err := w.complete(ctx, creds, llm.Request{Model: modelName, Messages: messages, Params: params}, generationInfo{
		key: "experiment:" + x.ID + ":" + item.ID, name: x.RunName, environment: ExperimentEnvironment, projectID: job.ProjectID,
		metadata:   map[string]string{"experimentId": x.ID, "datasetId": x.DatasetID, "datasetItemId": item.ID},
		promptName: prompt.Name, promptVer: prompt.Version,
	})
	if err != nil {
		return evalqueue.Outcome{ExecutionTraceID: traceID}, err
	}
	if traceID == "" {
		return evalqueue.Outcome{}, errors.New("the experiment's trace could not be stored")
	}
	_, spanID := derivedIDs("experiment:" + x.ID + ":" + item.ID)
	meta, _ := json.Marshal(map[string]any{"experimentId": x.ID, "prompt": map[string]any{"name": prompt.Name, "version": prompt.Version}})
	if _, err := w.cp.CreateDatasetRunItem(ctx, job.ProjectID, controlplane.NewDatasetRunItem{
		RunName: x.RunName, RunDescription: x.Description, Metadata: meta,
		DatasetItemID: item.ID, TraceID: traceID, ObservationID: spanID,
	}); err != nil {
		if errors.Is(err, controlplane.ErrNotFound) {
			return evalqueue.Outcome{}, skipError{reason: "the dataset item is no longer active"}
		}
		return evalqueue.Outcome{}, err
	}
	out := evalqueue.Outcome{Status: evalqueue.Succeeded, TraceID: traceID, ExecutionTraceID: traceID}
	for _, id := range x.EvaluatorIDs {
		out.FollowUps = append(out.FollowUps, evalqueue.NewJob{Kind: evalqueue.KindExperimentEval, ExperimentID: x.ID,
			EvaluatorID: id, TraceID: traceID, DatasetItemID: item.ID, Due: w.now()})
	}
	return out, nil
}

// runExperimentEval scores the trace an experiment item produced. Its
// target is the generation: input and output read the call, and
// expected_output the dataset item.
func (w *Worker) runExperimentEval(ctx context.Context, job evalqueue.Job) (evalqueue.Outcome, error) {
	x, err := w.loadExperiment(ctx, job)
	if err != nil {
		return evalqueue.Outcome{}, err
	}
	e, err := w.cp.GetEvaluator(ctx, job.ProjectID, job.EvaluatorID)
	if err != nil {
		return evalqueue.Outcome{}, permanent(fmt.Errorf("evaluator %q: %w", job.EvaluatorID, err))
	}
	vars, err := controlplane.ResolveVariables(e.NeededVariables(), e.Variables)
	if err != nil {
		return evalqueue.Outcome{}, permanent(err)
	}
	trace, err := w.ch.GetTrace(ctx, job.ProjectID, job.TraceID)
	if err != nil {
		return evalqueue.Outcome{}, notStoredYet("trace "+job.TraceID, err)
	}
	ev := evaluation{
		job: job, evaluator: e, variables: vars, data: traceData(trace),
		target:      evaluator.WebhookTarget{ProjectID: job.ProjectID, TraceID: job.TraceID, DatasetItemID: job.DatasetItemID},
		environment: trace.Environment,
		metadata:    map[string]string{"experimentId": x.ID, "datasetItemId": job.DatasetItemID},
	}
	if e.Kind == controlplane.EvaluatorLLM {
		ev.connectionID = x.ConnectionID
	}
	if len(trace.Observations) > 0 {
		gen := objectOf(&trace.Observations[0].Observation)
		ev.data.Observation = &gen
	}
	item, err := w.cp.GetDatasetItem(ctx, job.ProjectID, job.DatasetItemID)
	switch {
	case err == nil:
		ev.data.DatasetItem = itemData(item)
	case !errors.Is(err, controlplane.ErrNotFound):
		return evalqueue.Outcome{}, err
	}
	score, exec, err := w.evaluate(ctx, ev, "experiment", x.ID, e.ID, job.DatasetItemID)
	return evalqueue.Outcome{Status: evalqueue.Succeeded, ScoreID: score, ExecutionTraceID: exec}, err
}

// itemVariables are the prompt variables of a dataset item: the keys of an
// object input, "input" for the whole input, and "expected_output".
func itemVariables(item controlplane.DatasetItem) map[string]any {
	vars := map[string]any{}
	var input any
	if len(item.Input) > 0 && json.Unmarshal(item.Input, &input) == nil {
		if obj, ok := input.(map[string]any); ok {
			for k, v := range obj {
				vars[k] = v
			}
		}
		vars["input"] = input
	}
	var expected any
	if len(item.ExpectedOutput) > 0 && json.Unmarshal(item.ExpectedOutput, &expected) == nil {
		vars["expected_output"] = expected
	}
	return vars
}

// compilePrompt fills a text or chat prompt's variables; chat placeholders
// have nothing to stand for in an experiment and are left out.
func compilePrompt(p controlplane.Prompt, vars map[string]any) ([]llm.Message, error) {
	if p.Type == controlplane.PromptText {
		var text string
		if err := json.Unmarshal(p.Prompt, &text); err != nil {
			return nil, fmt.Errorf("text prompt %q: %w", p.Name, err)
		}
		return []llm.Message{{Role: "user", Content: evaluator.Render(text, vars)}}, nil
	}
	var chat []controlplane.ChatMessage
	if err := json.Unmarshal(p.Prompt, &chat); err != nil {
		return nil, fmt.Errorf("chat prompt %q: %w", p.Name, err)
	}
	out := make([]llm.Message, 0, len(chat))
	for _, m := range chat {
		if m.Type == "placeholder" {
			continue
		}
		out = append(out, llm.Message{Role: m.Role, Content: evaluator.Render(m.Content, vars)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("chat prompt %q has no messages", p.Name)
	}
	return out, nil
}
