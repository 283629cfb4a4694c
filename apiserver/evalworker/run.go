package evalworker // import "github.com/glassbox-dev/glassbox/apiserver/evalworker"

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

// JudgeEnvironment is the environment of the traces that record judge
// calls, so that they can be told apart from the application's traces and
// are never evaluated themselves.
const JudgeEnvironment = "llm-as-a-judge"

// scoreNamespace derives score ids from what they score, so that a retried
// or repeated evaluation replaces its score instead of adding one.
var scoreNamespace = uuid.MustParse("6f1d7e0a-6a52-4f0e-9a55-2d8f3c1b7e21")

func scoreID(parts ...string) string {
	return uuid.NewSHA1(scoreNamespace, []byte(strings.Join(parts, "\x00"))).String()
}

// derivedIDs are a trace id (32 hex) and a span id (16 hex) derived from
// key, so that a retried job writes the same trace again.
func derivedIDs(key string) (traceID, spanID string) {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]), hex.EncodeToString(sum[16:24])
}

// evaluation is one evaluator run over one target.
type evaluation struct {
	job          evalqueue.Job
	evaluator    controlplane.Evaluator
	connectionID string
	variables    []controlplane.VariableMapping
	data         evaluator.Data
	target       evaluator.WebhookTarget
	// environment is the target's, which the score takes.
	environment string
	// metadata links the score to what produced it.
	metadata map[string]string
}

// evaluate runs the evaluator and writes its score. It returns the score
// id and, for LLM judges, the trace id of the recorded judge call.
func (w *Worker) evaluate(ctx context.Context, ev evaluation, ids ...string) (scoreIDOut, execTrace string, err error) {
	values, err := evaluator.Values(ev.variables, ev.data)
	if err != nil {
		return "", "", permanent(err)
	}
	var result evaluator.Result
	switch ev.evaluator.Kind {
	case controlplane.EvaluatorLLM:
		result, execTrace, err = w.judge(ctx, ev, values)
	case controlplane.EvaluatorCEL:
		result, err = w.cel(ctx, ev, values)
	case controlplane.EvaluatorWebhook:
		result, err = w.webhook(ctx, ev, values)
	default:
		err = permanent(fmt.Errorf("unknown evaluator kind %q", ev.evaluator.Kind))
	}
	if err != nil {
		return "", execTrace, err
	}
	metadata := maps.Clone(ev.metadata)
	metadata["evaluatorId"], metadata["jobId"] = ev.evaluator.ID, ev.job.ID
	if execTrace != "" {
		metadata["executionTraceId"] = execTrace
	}
	meta, _ := json.Marshal(metadata)
	sc := chstore.Score{
		ProjectID: ev.job.ProjectID, ID: scoreID(ids...), Timestamp: w.now().UnixMicro(), Name: ev.evaluator.ScoreName,
		Value: result.Value, StringValue: result.StringValue, DataType: ev.evaluator.Output.DataType,
		Source: chstore.SourceEval, Comment: result.Comment, Metadata: string(meta), Environment: ev.environment,
		TraceID: ev.target.TraceID, ObservationID: ev.target.ObservationID,
	}
	if err := w.ch.InsertScores(ctx, []chstore.Score{sc}); err != nil {
		return "", execTrace, fmt.Errorf("write score: %w", err)
	}
	return sc.ID, execTrace, nil
}

// judge asks the LLM connection's model and records the call as a
// generation of its own trace in the project.
func (w *Worker) judge(ctx context.Context, ev evaluation, values map[string]any) (evaluator.Result, string, error) {
	creds, err := w.cp.LLMCredentials(ctx, w.box, ev.job.ProjectID, ev.connectionID)
	if err != nil {
		return evaluator.Result{}, "", permanent(fmt.Errorf("llm connection: %w", err))
	}
	req, err := judgeRequest(creds, ev.evaluator, values)
	if err != nil {
		return evaluator.Result{}, "", permanent(err)
	}
	resp, execTrace, err := w.complete(ctx, creds, req, generationInfo{
		key: "judge:" + ev.job.ID, name: "Evaluation: " + ev.evaluator.Name, environment: JudgeEnvironment,
		projectID: ev.job.ProjectID, metadata: ev.metadata,
	})
	if err != nil {
		return evaluator.Result{}, execTrace, err
	}
	result, err := evaluator.ParseJudge(resp.Content, ev.evaluator.Output)
	// A judge's bad answer may be fine the next time; it is retried.
	return result, execTrace, err
}

// judgeRequest is the call an LLM judge makes: its prompt rendered with the
// values, the evaluator's model (else the connection's default) and the
// connection's parameters beneath the evaluator's.
func judgeRequest(creds controlplane.LLMCredentials, e controlplane.Evaluator, values map[string]any) (llm.Request, error) {
	modelName := cmpOr(e.Model, creds.DefaultModel)
	if modelName == "" {
		return llm.Request{}, fmt.Errorf("no model: set one on evaluator %q or on connection %q", e.Name, creds.Provider)
	}
	params, err := mergeParams(creds.DefaultParams, e.ModelParams)
	if err != nil {
		return llm.Request{}, err
	}
	return evaluator.JudgeRequest(evaluator.Render(e.Prompt, values), e.Output, modelName, params), nil
}

// generationInfo names the trace that records an LLM call.
type generationInfo struct {
	key         string // derives the trace and span ids
	name        string
	environment string
	projectID   string
	metadata    map[string]string
	promptName  string
	promptVer   int
}

// complete makes one LLM call under the connection's concurrency limit and
// timeout, and records it as a generation: its input, output, model, usage
// and cost, or its error. It returns the trace id written.
func (w *Worker) complete(ctx context.Context, creds controlplane.LLMCredentials, req llm.Request, g generationInfo) (llm.Response, string, error) {
	release, err := w.acquire(ctx, creds)
	if err != nil {
		return llm.Response{}, "", err
	}
	defer release()
	callCtx, cancel := context.WithTimeout(ctx, creds.Timeout)
	start := w.now()
	resp, callErr := w.llm.Complete(callCtx, creds.Endpoint(), req)
	cancel()
	traceID, spanID := derivedIDs(g.key)
	obs := w.generation(ctx, g, traceID, spanID, req, resp, callErr, start)
	// Recording the call is best effort: the answer it paid for still counts.
	if err := w.ch.InsertObservations(ctx, []model.Observation{obs}); err != nil {
		w.logger.Warn("Recording an LLM call as a generation failed", zap.String("name", g.name), zap.Error(err))
		traceID = ""
	}
	if callErr != nil {
		if retry, _ := llm.Retryable(callErr); !retry || errors.Is(callErr, egress.ErrDenied) {
			callErr = permanent(callErr)
		}
		return llm.Response{}, traceID, callErr
	}
	return resp, traceID, nil
}

func (w *Worker) generation(ctx context.Context, g generationInfo, traceID, spanID string, req llm.Request, resp llm.Response, callErr error, start time.Time) model.Observation {
	input, _ := json.Marshal(req.Messages)
	params, _ := json.Marshal(req.Params)
	meta, _ := json.Marshal(g.metadata)
	end := w.now()
	o := model.Observation{
		ProjectID: g.projectID, TraceID: traceID, ID: spanID, Type: model.TypeGeneration, Name: g.name,
		StartTime: start.UnixMicro(), EndTime: end.UnixMicro(), Level: model.LevelDefault,
		Input: string(input), Output: resp.Content, Metadata: string(meta),
		Model: cmpOr(resp.Model, req.Model), ModelParameters: string(params),
		PromptName: g.promptName, PromptVersion: int64(g.promptVer),
		Environment: g.environment, TraceName: g.name, Tags: []string{}, TraceMetadata: string(meta),
		TraceInput: string(input), TraceOutput: resp.Content, IsRoot: true, SampleRate: 1,
		ServiceName: "glassbox-evaluation",
	}
	if callErr != nil {
		o.Level, o.StatusMessage = model.LevelError, callErr.Error()
		return o
	}
	if resp.Usage.Total > 0 || resp.Usage.Input > 0 {
		o.UsageDetails = map[string]int64{"input": resp.Usage.Input, "output": resp.Usage.Output, "total": resp.Usage.Total}
	}
	// The judge call is priced by the same rule as any generation, with the
	// project's own model prices first.
	if err := w.pricer.LoadProject(ctx, w.cp, g.projectID); err != nil {
		w.logger.Warn("Project model definitions did not all load; the valid and earlier ones apply",
			zap.String("project", g.projectID), zap.Error(err))
	}
	if _, err := costing.Apply(w.pricer, g.projectID, &o, end, costing.DefaultEstimation, nil); err != nil {
		w.logger.Debug("The judge call's usage could not be estimated", zap.Error(err))
	}
	return o
}

// cel evaluates the evaluator's expression within its time limit. A CEL
// failure is deterministic, so it is never retried.
func (w *Worker) cel(ctx context.Context, ev evaluation, values map[string]any) (evaluator.Result, error) {
	result, err := celResult(ctx, ev.evaluator, values)
	if err != nil {
		return evaluator.Result{}, permanent(err)
	}
	return result, nil
}

// celResult evaluates a code evaluator's expression over the values within
// its time limit and reads the score from the result.
func celResult(ctx context.Context, e controlplane.Evaluator, values map[string]any) (evaluator.Result, error) {
	prg, err := evaluator.CompileCEL(e.Expression, slices.Sorted(maps.Keys(values)))
	if err != nil {
		return evaluator.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	value, comment, err := prg.Eval(ctx, values)
	if err != nil {
		return evaluator.Result{}, err
	}
	result, err := evaluator.Coerce(value, e.Output)
	if err != nil {
		return evaluator.Result{}, err
	}
	result.Comment = comment
	return result, nil
}

// webhook POSTs the variables within the evaluator's time limit, to a URL
// the egress policy allows now (it may have changed since the evaluator
// was saved). A refusal is final.
func (w *Worker) webhook(ctx context.Context, ev evaluation, values map[string]any) (evaluator.Result, error) {
	if err := w.webhooks.CheckURL(ev.evaluator.URL); err != nil {
		return evaluator.Result{}, permanent(err)
	}
	ctx, cancel := context.WithTimeout(ctx, ev.evaluator.Timeout)
	defer cancel()
	out := ev.evaluator.Output
	value, comment, err := evaluator.CallWebhook(ctx, w.http, ev.evaluator.URL, evaluator.WebhookRequest{
		Variables: values, Target: ev.target,
		Score: evaluator.WebhookScore{Name: ev.evaluator.ScoreName, DataType: out.DataType, Min: out.Min, Max: out.Max,
			Categories: out.Categories},
	})
	if err == nil {
		var result evaluator.Result
		if result, err = evaluator.Coerce(value, out); err == nil {
			result.Comment = comment
			return result, nil
		}
	}
	if evaluator.Permanent(err) || errors.Is(err, egress.ErrDenied) {
		return evaluator.Result{}, permanent(err)
	}
	return evaluator.Result{}, err
}

// mergeParams layers JSON objects of model parameters, later ones winning.
func mergeParams(layers ...json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	for _, raw := range layers {
		if len(raw) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("model parameters %s: %w", raw, err)
		}
		maps.Copy(out, m)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// notStoredYet wraps a missing target: the exporter may not have written
// it when the job came due, so the job is retried.
func notStoredYet(what string, err error) error {
	if errors.Is(err, chstore.ErrNotFound) {
		return fmt.Errorf("%s is not stored yet: %w", what, err)
	}
	return fmt.Errorf("read %s: %w", what, err)
}

// objectOf is the part of an observation that variables read.
func objectOf(o *model.Observation) evaluator.Object {
	return evaluator.Object{Name: o.Name, Input: o.Input, Output: o.Output, Metadata: o.Metadata}
}

// traceData is what variables read of a stored trace.
func traceData(t chstore.TraceWithObservations) evaluator.Data {
	d := evaluator.Data{
		Trace:        &evaluator.Object{Name: t.Name, Input: t.Input, Output: t.Output, Metadata: t.Metadata},
		Observations: make([]evaluator.Object, 0, len(t.Observations)),
	}
	for i := range t.Observations {
		d.Observations = append(d.Observations, objectOf(&t.Observations[i].Observation))
	}
	return d
}

// itemData is what variables read of a dataset item.
func itemData(it controlplane.DatasetItem) *evaluator.Item {
	return &evaluator.Item{Input: string(it.Input), ExpectedOutput: string(it.ExpectedOutput), Metadata: string(it.Metadata)}
}

// needsDatasetItem reports whether any variable reads a dataset item.
func needsDatasetItem(vars []controlplane.VariableMapping) bool {
	return slices.ContainsFunc(vars, func(v controlplane.VariableMapping) bool { return v.Source == controlplane.SourceDatasetItem })
}
