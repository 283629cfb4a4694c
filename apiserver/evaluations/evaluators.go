package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
)

// ScoreOutput is the score an evaluator produces.
type ScoreOutput struct {
	// DataType is NUMERIC, CATEGORICAL or BOOLEAN.
	DataType string `json:"dataType"`
	// Min and Max bound NUMERIC scores.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Categories are the labels of a CATEGORICAL score.
	Categories []string `json:"categories,omitempty"`
	// Description tells the judge what the score means.
	Description string `json:"description,omitempty"`
}

// Variable maps a prompt variable (or a CEL variable, or a webhook field)
// to the evaluated data.
type Variable struct {
	Name string `json:"name"`
	// Source is "trace", "observation" or "dataset_item"; empty is the
	// evaluated trace or observation itself.
	Source string `json:"source,omitempty"`
	// ObservationName picks the latest observation of that name in the trace.
	ObservationName string `json:"observationName,omitempty"`
	// Field is input, output, metadata or name (input, expected_output or
	// metadata for dataset_item).
	Field string `json:"field"`
	// Key is a dot-separated path into the field's JSON value, such as
	// messages.0.content.
	Key string `json:"key,omitempty"`
}

// Evaluator is an evaluator as the API shows it.
type Evaluator struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Kind        string      `json:"kind"`
	ScoreName   string      `json:"scoreName"`
	Output      ScoreOutput `json:"output"`
	Variables   []Variable  `json:"variables"`
	// Prompt, Model and ModelParams are set for llm evaluators.
	Prompt      string     `json:"prompt,omitempty"`
	Model       string     `json:"model,omitempty"`
	ModelParams httpx.JSON `json:"modelParams,omitempty"`
	// Provider names the LLM connection an llm evaluator is meant for
	// (Langfuse's modelConfig.provider); rules created through
	// /api/public/unstable/evaluation-rules run with it.
	Provider string `json:"provider,omitempty"`
	// Expression is set for cel evaluators.
	Expression string `json:"expression,omitempty"`
	// URL is set for webhook evaluators.
	URL string `json:"url,omitempty"`
	// TimeoutMS bounds cel and webhook runs; llm evaluators take the
	// connection's timeout.
	TimeoutMS int64           `json:"timeoutMs,omitempty"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
}

// EvaluatorRequest is the body of POST /api/public/evals/evaluators.
type EvaluatorRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Kind is "llm" (a judge prompt with {{variables}}), "cel" (an expression
	// over the variables) or "webhook" (a URL that receives the variables
	// and answers {"value", "comment"}).
	Kind        string      `json:"kind"`
	ScoreName   string      `json:"scoreName"`
	Output      ScoreOutput `json:"output"`
	Variables   []Variable  `json:"variables,omitempty"`
	Prompt      string      `json:"prompt,omitempty"`
	Model       string      `json:"model,omitempty"`
	ModelParams httpx.JSON  `json:"modelParams,omitempty"`
	Provider    string      `json:"provider,omitempty"`
	Expression  string      `json:"expression,omitempty"`
	URL         string      `json:"url,omitempty"`
	TimeoutMS   int64       `json:"timeoutMs,omitempty"`
}

// EvaluatorUpdate is the body of PATCH /api/public/evals/evaluators/{evaluatorId};
// omitted fields keep their values, the kind cannot change.
type EvaluatorUpdate struct {
	Name        *string      `json:"name,omitempty"`
	Description *string      `json:"description,omitempty"`
	ScoreName   *string      `json:"scoreName,omitempty"`
	Output      *ScoreOutput `json:"output,omitempty"`
	Variables   []Variable   `json:"variables,omitempty"`
	Prompt      *string      `json:"prompt,omitempty"`
	Model       *string      `json:"model,omitempty"`
	ModelParams httpx.JSON   `json:"modelParams,omitempty"`
	Provider    *string      `json:"provider,omitempty"`
	Expression  *string      `json:"expression,omitempty"`
	URL         *string      `json:"url,omitempty"`
	TimeoutMS   int64        `json:"timeoutMs,omitempty"`
}

func (h handlers) evaluatorRoutes() []httpx.Route {
	const base = "/api/public/evals/evaluators"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.listEvaluators,
			Doc: httpx.Doc{OperationID: "evaluators_list", Tag: "Evaluations", Query: httpx.PageParams,
				Response: httpx.List[Evaluator]{}, Summary: "The project's evaluators, by name."},
		},
		{
			Method: http.MethodPost, Path: base, Access: httpx.ProjectKey, Handler: h.createEvaluator,
			Doc: httpx.Doc{OperationID: "evaluators_create", Tag: "Evaluations", Body: EvaluatorRequest{}, Response: Evaluator{},
				Status: http.StatusCreated, Summary: "Create an LLM judge, CEL or webhook evaluator."},
		},
		{
			Method: http.MethodGet, Path: base + "/{evaluatorId}", Access: httpx.ProjectKey, Handler: h.getEvaluator,
			Doc: httpx.Doc{OperationID: "evaluators_get", Tag: "Evaluations", Response: Evaluator{}, Summary: "One evaluator."},
		},
		{
			Method: http.MethodPatch, Path: base + "/{evaluatorId}", Access: httpx.ProjectKey, Handler: h.updateEvaluator,
			Doc: httpx.Doc{OperationID: "evaluators_update", Tag: "Evaluations", Body: EvaluatorUpdate{}, Response: Evaluator{},
				Summary: "Change an evaluator; rules that use it evaluate with the change from then on."},
		},
		{
			Method: http.MethodDelete, Path: base + "/{evaluatorId}", Access: httpx.ProjectKey, Handler: h.deleteEvaluator,
			Doc: httpx.Doc{OperationID: "evaluators_delete", Tag: "Evaluations", Response: Deletion{},
				Summary: "Delete an evaluator that no rule or experiment uses."},
		},
	}
}

func (h handlers) listEvaluators(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListEvaluators, toEvaluator)
}

func (h handlers) createEvaluator(r *http.Request) (any, error) {
	var req EvaluatorRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	n := controlplane.NewEvaluator{
		Name: req.Name, Description: req.Description, Kind: req.Kind, ScoreName: req.ScoreName,
		Output: fromOutput(req.Output), Variables: fromVariables(req.Variables), Prompt: req.Prompt, Model: req.Model,
		ModelParams: json.RawMessage(req.ModelParams), Provider: req.Provider, Expression: req.Expression, URL: req.URL,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	}
	if err := checkExpression(controlplane.Evaluator{Kind: n.Kind, Expression: n.Expression, Variables: n.Variables}); err != nil {
		return nil, err
	}
	if err := h.checkURL(n.Kind, n.URL); err != nil {
		return nil, err
	}
	e, err := h.store.CreateEvaluator(r.Context(), httpx.ProjectID(r), n)
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusCreated, toEvaluator(e)), nil
}

// checkExpression compiles a cel evaluator's expression, so that a typo is
// a 400 now rather than a failed job later.
func checkExpression(e controlplane.Evaluator) error {
	if e.Kind != controlplane.EvaluatorCEL || e.Expression == "" {
		return nil
	}
	if _, err := evaluator.CompileCEL(e.Expression, e.NeededVariables()); err != nil {
		return httpx.BadRequest("Invalid expression: %v", err)
	}
	return nil
}

// checkURL holds a webhook evaluator's URL against the egress policy, so
// that a host the operator has not allowed is a 400 now; calls are checked
// again, since the policy may change.
func (h handlers) checkURL(kind, raw string) error {
	if kind != controlplane.EvaluatorWebhook {
		return nil
	}
	if err := h.webhooks.CheckURL(raw); err != nil {
		return httpx.BadRequest("Invalid url: %v", err)
	}
	return nil
}

func (h handlers) getEvaluator(r *http.Request) (any, error) {
	e, err := h.store.GetEvaluator(r.Context(), httpx.ProjectID(r), r.PathValue("evaluatorId"))
	if err != nil {
		return nil, storeError(err)
	}
	return toEvaluator(e), nil
}

func (h handlers) updateEvaluator(r *http.Request) (any, error) {
	var req EvaluatorUpdate
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	u := controlplane.EvaluatorUpdate{
		Name: req.Name, Description: req.Description, ScoreName: req.ScoreName, Prompt: req.Prompt, Model: req.Model,
		ModelParams: json.RawMessage(req.ModelParams), Provider: req.Provider, Expression: req.Expression, URL: req.URL,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	}
	if req.Output != nil {
		out := fromOutput(*req.Output)
		u.Output = &out
	}
	if req.Variables != nil {
		u.Variables = fromVariables(req.Variables)
	}
	id, project := r.PathValue("evaluatorId"), httpx.ProjectID(r)
	if u.Expression != nil || u.Variables != nil || u.URL != nil {
		current, err := h.store.GetEvaluator(r.Context(), project, id)
		if err != nil {
			return nil, storeError(err)
		}
		if u.Expression != nil {
			current.Expression = *u.Expression
		}
		if u.Variables != nil {
			current.Variables = u.Variables
		}
		if err := checkExpression(current); err != nil {
			return nil, err
		}
		// Only a new URL is checked: a tightened policy must not block edits
		// of other fields (its calls are refused anyway).
		if u.URL != nil {
			if err := h.checkURL(current.Kind, *u.URL); err != nil {
				return nil, err
			}
		}
	}
	e, err := h.store.UpdateEvaluator(r.Context(), project, id, u)
	if err != nil {
		return nil, storeError(err)
	}
	return toEvaluator(e), nil
}

func (h handlers) deleteEvaluator(r *http.Request) (any, error) {
	if err := h.store.DeleteEvaluator(r.Context(), httpx.ProjectID(r), r.PathValue("evaluatorId")); err != nil {
		return nil, storeError(err)
	}
	return Deletion{Success: true, Message: "Evaluator deleted"}, nil
}

func fromOutput(o ScoreOutput) controlplane.ScoreOutput {
	return controlplane.ScoreOutput{DataType: o.DataType, Min: o.Min, Max: o.Max, Categories: o.Categories, Description: o.Description}
}

func fromVariables(vs []Variable) []controlplane.VariableMapping {
	if vs == nil {
		return nil
	}
	out := make([]controlplane.VariableMapping, 0, len(vs))
	for _, v := range vs {
		out = append(out, controlplane.VariableMapping(v))
	}
	return out
}

func toVariables(vs []controlplane.VariableMapping) []Variable {
	out := make([]Variable, 0, len(vs))
	for _, v := range vs {
		out = append(out, Variable(v))
	}
	return out
}

func toEvaluator(e controlplane.Evaluator) Evaluator {
	return Evaluator{
		ID: e.ID, Name: e.Name, Description: e.Description, Kind: e.Kind, ScoreName: e.ScoreName,
		Output: ScoreOutput{DataType: e.Output.DataType, Min: e.Output.Min, Max: e.Output.Max, Categories: e.Output.Categories,
			Description: e.Output.Description},
		Variables: toVariables(e.Variables), Prompt: e.Prompt, Model: e.Model, ModelParams: httpx.JSON(e.ModelParams),
		Provider: e.Provider, Expression: e.Expression, URL: e.URL, TimeoutMS: e.Timeout.Milliseconds(),
		CreatedAt: httpx.FromTime(e.CreatedAt), UpdatedAt: httpx.FromTime(e.UpdatedAt),
	}
}
