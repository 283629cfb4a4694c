package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"net/http"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
)

// Rule is an evaluator rule: which arriving traces or observations an
// evaluator scores.
type Rule struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	EvaluatorID string `json:"evaluatorId"`
	// ConnectionID is the LLM connection of an llm evaluator.
	ConnectionID string `json:"connectionId,omitempty"`
	// Target is "trace" or "observation".
	Target       string          `json:"target"`
	Filter       evaljobs.Filter `json:"filter"`
	SamplingRate float64         `json:"samplingRate"`
	DelayMS      int64           `json:"delayMs"`
	Active       bool            `json:"active"`
	Variables    []Variable      `json:"variables"`
	// Jobs counts the rule's jobs by status; set on single reads.
	Jobs      map[string]int  `json:"jobs,omitempty"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
}

// RuleRequest is the body of POST /api/public/evals/rules.
type RuleRequest struct {
	Name         string `json:"name"`
	EvaluatorID  string `json:"evaluatorId"`
	ConnectionID string `json:"connectionId,omitempty"`
	Target       string `json:"target"`
	// Filter conditions must all hold: {field, operator, value|values, key}
	// with fields name, traceName, type, tags, environment, userId,
	// sessionId, metadata (with key), model, level, release, version and
	// operators =, !=, contains, starts with, any of, none of, all of, exists.
	Filter evaljobs.Filter `json:"filter,omitempty"`
	// SamplingRate defaults to 1, DelayMS to 30000, Active to true.
	SamplingRate *float64 `json:"samplingRate,omitempty"`
	DelayMS      *int64   `json:"delayMs,omitempty"`
	Active       *bool    `json:"active,omitempty"`
	// Variables replace the evaluator's mappings of the same names.
	Variables []Variable `json:"variables,omitempty"`
}

// RuleUpdate is the body of PATCH /api/public/evals/rules/{ruleId}; omitted
// fields keep their values.
type RuleUpdate struct {
	Name         *string         `json:"name,omitempty"`
	ConnectionID *string         `json:"connectionId,omitempty"`
	Target       *string         `json:"target,omitempty"`
	Filter       evaljobs.Filter `json:"filter,omitempty"`
	SamplingRate *float64        `json:"samplingRate,omitempty"`
	DelayMS      *int64          `json:"delayMs,omitempty"`
	Active       *bool           `json:"active,omitempty"`
	Variables    []Variable      `json:"variables,omitempty"`
}

// BackfillRequest is the body of POST /api/public/evals/rules/{ruleId}/backfill.
type BackfillRequest struct {
	// From (inclusive) and To (exclusive) bound the traces' timestamps.
	From httpx.Timestamp `json:"from"`
	To   httpx.Timestamp `json:"to"`
}

func (h handlers) ruleRoutes() []httpx.Route {
	const base = "/api/public/evals/rules"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.listRules,
			Doc: httpx.Doc{OperationID: "evalRules_list", Tag: "Evaluations", Query: httpx.PageParams,
				Response: httpx.List[Rule]{}, Summary: "The project's evaluator rules, by name."},
		},
		{
			Method: http.MethodPost, Path: base, Access: httpx.ProjectKey, Handler: h.createRule,
			Doc: httpx.Doc{OperationID: "evalRules_create", Tag: "Evaluations", Body: RuleRequest{}, Response: Rule{},
				Status: http.StatusCreated, Summary: "Create a rule; the collector's evaluator tap applies it at its next refresh."},
		},
		{
			Method: http.MethodGet, Path: base + "/{ruleId}", Access: httpx.ProjectKey, Handler: h.getRule,
			Doc: httpx.Doc{OperationID: "evalRules_get", Tag: "Evaluations", Response: Rule{},
				Summary: "One rule, with its jobs counted by status."},
		},
		{
			Method: http.MethodPatch, Path: base + "/{ruleId}", Access: httpx.ProjectKey, Handler: h.updateRule,
			Doc: httpx.Doc{OperationID: "evalRules_update", Tag: "Evaluations", Body: RuleUpdate{}, Response: Rule{},
				Summary: "Change a rule: filter, sampling, delay, activation, connection, variables."},
		},
		{
			Method: http.MethodDelete, Path: base + "/{ruleId}", Access: httpx.ProjectKey, Handler: h.deleteRule,
			Doc: httpx.Doc{OperationID: "evalRules_delete", Tag: "Evaluations", Response: Deletion{},
				Summary: "Delete a rule and its jobs; the scores it wrote stay."},
		},
		{
			Method: http.MethodPost, Path: base + "/{ruleId}/backfill", Access: httpx.ProjectKey, Handler: h.backfill,
			Doc: httpx.Doc{OperationID: "evalRules_backfill", Tag: "Evaluations", Body: BackfillRequest{}, Response: Job{},
				Status: http.StatusAccepted, Summary: "Run the rule over the stored traces of a time window; answers the backfill job."},
		},
	}
}

func (h handlers) listRules(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListEvalRules, toRule)
}

func (h handlers) createRule(r *http.Request) (any, error) {
	var req RuleRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	rule, err := h.store.CreateEvalRule(r.Context(), httpx.ProjectID(r), controlplane.NewEvalRule{
		Name: req.Name, EvaluatorID: req.EvaluatorID, ConnectionID: req.ConnectionID, Target: req.Target, Filter: req.Filter,
		SamplingRate: req.SamplingRate, Delay: millis(req.DelayMS), Active: req.Active, Variables: fromVariables(req.Variables),
	})
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusCreated, toRule(rule)), nil
}

func (h handlers) getRule(r *http.Request) (any, error) {
	project := httpx.ProjectID(r)
	rule, err := h.store.GetEvalRule(r.Context(), project, r.PathValue("ruleId"))
	if err != nil {
		return nil, storeError(err)
	}
	out := toRule(rule)
	if out.Jobs, err = h.store.CountEvalJobs(r.Context(), project, rule.ID, ""); err != nil {
		return nil, err
	}
	return out, nil
}

func (h handlers) updateRule(r *http.Request) (any, error) {
	var req RuleUpdate
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	rule, err := h.store.UpdateEvalRule(r.Context(), httpx.ProjectID(r), r.PathValue("ruleId"), controlplane.EvalRuleUpdate{
		Name: req.Name, ConnectionID: req.ConnectionID, Target: req.Target, Filter: req.Filter, SamplingRate: req.SamplingRate,
		Delay: millis(req.DelayMS), Active: req.Active, Variables: fromVariables(req.Variables),
	})
	if err != nil {
		return nil, storeError(err)
	}
	return toRule(rule), nil
}

func (h handlers) deleteRule(r *http.Request) (any, error) {
	if err := h.store.DeleteEvalRule(r.Context(), httpx.ProjectID(r), r.PathValue("ruleId")); err != nil {
		return nil, storeError(err)
	}
	return Deletion{Success: true, Message: "Rule deleted"}, nil
}

func (h handlers) backfill(r *http.Request) (any, error) {
	var req BackfillRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	from, to := time.Time(req.From), time.Time(req.To)
	if from.IsZero() || to.IsZero() {
		return nil, httpx.BadRequest("from and to are required ISO 8601 timestamps")
	}
	job, err := h.store.EnqueueBackfill(r.Context(), httpx.ProjectID(r), r.PathValue("ruleId"), from, to)
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusAccepted, toJob(job)), nil
}

func toRule(r controlplane.EvalRule) Rule {
	return Rule{
		ID: r.ID, Name: r.Name, EvaluatorID: r.EvaluatorID, ConnectionID: r.ConnectionID, Target: r.Target,
		Filter: httpx.NonNil(r.Filter), SamplingRate: r.SamplingRate, DelayMS: r.Delay.Milliseconds(), Active: r.Active,
		Variables: toVariables(r.Variables), CreatedAt: httpx.FromTime(r.CreatedAt), UpdatedAt: httpx.FromTime(r.UpdatedAt),
	}
}
