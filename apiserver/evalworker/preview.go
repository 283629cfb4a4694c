package evalworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Preview is what an evaluator makes of one stored trace, or one of its
// observations, as a rule would run it: the variables it reads, the prompt
// an LLM judge would send and the judge's answer, and the score. Nothing
// is stored.
type Preview struct {
	Values   map[string]any
	Rendered string // the judge's prompt; empty for other kinds
	Answer   string // the judge's raw answer
	Result   evaluator.Result
	// Ran is false when the evaluator was not run (webhooks are called by
	// rules only), and Values are all there is.
	Ran bool
}

// PreviewStores are what a preview reads.
type PreviewStores interface {
	LLMCredentials(ctx context.Context, box *secretbox.Box, projectID, id string) (controlplane.LLMCredentials, error)
	DatasetItemOfTrace(ctx context.Context, projectID, traceID string) (controlplane.DatasetItem, error)
}

// PreviewTraces reads the trace a preview runs on.
type PreviewTraces interface {
	GetTrace(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
}

// Previewer runs evaluators on demand, for the evaluator editor's live
// preview, with the same variable reading, judge request and score rules
// as the workers; it needs no worker to be running.
type Previewer struct {
	cp  PreviewStores
	ch  PreviewTraces
	box *secretbox.Box
	llm *llm.Client
}

// NewPreviewer calls LLMs only where llmHosts allows.
func NewPreviewer(cp PreviewStores, ch PreviewTraces, box *secretbox.Box, llmHosts egress.Policy) *Previewer {
	return &Previewer{cp: cp, ch: ch, box: box, llm: &llm.Client{HTTP: llmHosts.Client()}}
}

// Run previews e on the trace (observationID empty) or on one of its
// observations, with the rule-level variables layered over e's, and the
// connection for LLM judges.
func (p *Previewer) Run(ctx context.Context, projectID string, e controlplane.Evaluator, ruleVars []controlplane.VariableMapping,
	connectionID, traceID, observationID string,
) (Preview, error) {
	vars, err := controlplane.ResolveVariables(e.NeededVariables(), e.Variables, ruleVars)
	if err != nil {
		return Preview{}, err
	}
	trace, err := p.ch.GetTrace(ctx, projectID, traceID)
	if err != nil {
		return Preview{}, fmt.Errorf("trace %s: %w", traceID, err)
	}
	data := traceData(trace)
	if observationID != "" {
		for i := range trace.Observations {
			if o := &trace.Observations[i].Observation; o.ID == observationID {
				obj := objectOf(o)
				data.Observation = &obj
			}
		}
		if data.Observation == nil {
			return Preview{}, fmt.Errorf("observation %s of trace %s: %w", observationID, traceID, chstore.ErrNotFound)
		}
	}
	if needsDatasetItem(vars) {
		item, err := p.cp.DatasetItemOfTrace(ctx, projectID, traceID)
		switch {
		case err == nil:
			data.DatasetItem = itemData(item)
		case !errors.Is(err, controlplane.ErrNotFound):
			return Preview{}, err
		}
	}
	out := Preview{}
	if out.Values, err = evaluator.Values(vars, data); err != nil {
		return out, err
	}
	switch e.Kind {
	case controlplane.EvaluatorCEL:
		out.Result, err = celResult(ctx, e, out.Values)
		out.Ran = err == nil
		return out, err
	case controlplane.EvaluatorLLM:
		out.Rendered = evaluator.Render(e.Prompt, out.Values)
		creds, err := p.cp.LLMCredentials(ctx, p.box, projectID, connectionID)
		if err != nil {
			return out, fmt.Errorf("llm connection: %w", err)
		}
		req, err := judgeRequest(creds, e, out.Values)
		if err != nil {
			return out, err
		}
		resp, err := p.llm.Complete(ctx, creds.Endpoint(), req)
		if err != nil {
			return out, err
		}
		out.Answer = resp.Content
		out.Result, err = evaluator.ParseJudge(resp.Content, e.Output)
		out.Ran = err == nil
		return out, err
	}
	return out, nil
}
