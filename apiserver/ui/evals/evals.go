// Package evals serves the evaluation pages: evaluators (LLM-as-a-judge
// from a library of templates, code and webhook evaluators) with a live
// preview on a stored trace, the rules that run them on new traces, and
// the jobs those rules and experiments queue.
package evals // import "github.com/glassbox-dev/glassbox/apiserver/ui/evals"

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/evalworker"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
)

//go:embed *.html
var pages embed.FS

// Store reads and writes evaluators, rules and jobs; *controlplane.Store
// implements it.
type Store interface {
	CreateEvaluator(ctx context.Context, projectID string, n controlplane.NewEvaluator) (controlplane.Evaluator, error)
	ListEvaluators(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Evaluator, int, error)
	DeleteEvaluator(ctx context.Context, projectID, id string) error
	CreateEvalRule(ctx context.Context, projectID string, n controlplane.NewEvalRule) (controlplane.EvalRule, error)
	ListEvalRules(ctx context.Context, projectID string, offset, limit int) ([]controlplane.EvalRule, int, error)
	UpdateEvalRule(ctx context.Context, projectID, id string, u controlplane.EvalRuleUpdate) (controlplane.EvalRule, error)
	DeleteEvalRule(ctx context.Context, projectID, id string) error
	EnqueueBackfill(ctx context.Context, projectID, ruleID string, from, to time.Time) (evalqueue.Job, error)
	ListEvalJobs(ctx context.Context, projectID string, f evalqueue.Filter) ([]evalqueue.Job, int, error)
	RetryEvalJob(ctx context.Context, projectID, id string) (evalqueue.Job, error)
	CountEvalJobs(ctx context.Context, projectID, ruleID, experimentID string) (map[string]int, error)
	ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]controlplane.LLMConnection, int, error)
}

// Traces offers traces to preview on; *chstore.Store implements it.
type Traces interface {
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
}

type handlers struct {
	store   Store
	traces  Traces
	preview *evalworker.Previewer
	t       *web.Templates
	now     func() time.Time
}

// Routes registers the evaluation pages and their sidebar entry.
func Routes(app *web.App, store Store, traces Traces, preview *evalworker.Previewer) error {
	t, err := app.Parse(pages, "evals.html", "evaluator.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, traces: traces, preview: preview, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Evaluation", Label: "Evaluators", Path: "evals", Action: access.ProjectRead, Order: 300})
	base := "/project/{projectId}/evals"
	return app.Handle(
		web.InProjectRoute(http.MethodGet, base, access.ProjectRead, h.list),
		web.InProjectRoute(http.MethodGet, base+"/new", access.EvaluatorsWrite, h.newEvaluator),
		web.InProjectRoute(http.MethodPost, base+"/evaluators", access.EvaluatorsWrite, h.saveEvaluator),
		web.InProjectRoute(http.MethodPost, base+"/evaluators/{evaluatorId}/delete", access.EvaluatorsWrite, h.deleteEvaluator),
		web.InProjectRoute(http.MethodPost, base+"/rules", access.EvaluatorsWrite, h.createRule),
		web.InProjectRoute(http.MethodPost, base+"/rules/{ruleId}/active", access.EvaluatorsWrite, h.setRuleActive),
		web.InProjectRoute(http.MethodPost, base+"/rules/{ruleId}/backfill", access.EvaluatorsWrite, h.backfill),
		web.InProjectRoute(http.MethodPost, base+"/rules/{ruleId}/delete", access.EvaluatorsWrite, h.deleteRule),
		web.InProjectRoute(http.MethodPost, base+"/jobs/{jobId}/retry", access.EvaluatorsWrite, h.retryJob),
	)
}

// maxListed bounds the evaluators, rules, connections and jobs a page reads.
const maxListed = 200

type ruleRow struct {
	controlplane.EvalRule
	Evaluator string
	Counts    map[string]int
}

type listData struct {
	Tab         string // evaluators, rules or jobs
	Evaluators  []controlplane.Evaluator
	Rules       []ruleRow
	Jobs        []evalqueue.Job
	JobStatus   string
	Templates   []template
	Connections []controlplane.LLMConnection
	Form        ruleForm
	Error       string
	Fields      []string
	Operators   []string
	Statuses    []string
	// ConditionRows are the filter rows of the rule form: those typed,
	// then blanks.
	ConditionRows []condition
}

// filterRows is how many conditions the rule form offers.
const filterRows = 3

type ruleForm struct {
	Name, Evaluator, Connection, Target, Sampling, Delay string
	Conditions                                           []condition
}

type condition struct{ Field, Key, Operator, Value string }

// list shows the evaluators with the template library, the rules with
// their job counts, or the jobs (`tab=`).
func (h *handlers) list(r *web.Request) error {
	d, err := h.listData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "evals", d)
}

func (h *handlers) listData(r *web.Request) (*listData, error) {
	q := r.URL.Query()
	d := &listData{Tab: q.Get("tab"), Templates: templates, Form: ruleForm{Target: evaljobs.TargetTrace, Sampling: "100", Delay: "10"},
		Fields:    []string{evaljobs.FieldName, evaljobs.FieldTags, evaljobs.FieldEnvironment, evaljobs.FieldUserID, evaljobs.FieldSessionID, evaljobs.FieldMetadata, evaljobs.FieldRelease, evaljobs.FieldVersion, evaljobs.FieldType, evaljobs.FieldModel, evaljobs.FieldLevel, evaljobs.FieldTraceName},
		Operators: []string{evaljobs.OpEquals, evaljobs.OpNotEquals, evaljobs.OpContains, evaljobs.OpStartsWith, evaljobs.OpAnyOf, evaljobs.OpNoneOf, evaljobs.OpAllOf, evaljobs.OpExists}}
	d.Statuses = []string{evalqueue.Pending, evalqueue.Running, evalqueue.Succeeded, evalqueue.Failed, evalqueue.Skipped}
	if r.Method == http.MethodPost {
		d.Tab = "rules"
	}
	var err error
	if d.Evaluators, _, err = h.store.ListEvaluators(r.Context(), r.Project.ID, 0, maxListed); err != nil {
		return nil, err
	}
	switch d.Tab {
	case "rules":
		rules, _, err := h.store.ListEvalRules(r.Context(), r.Project.ID, 0, maxListed)
		if err != nil {
			return nil, err
		}
		names := map[string]string{}
		for _, e := range d.Evaluators {
			names[e.ID] = e.Name
		}
		for _, rule := range rules {
			row := ruleRow{EvalRule: rule, Evaluator: names[rule.EvaluatorID]}
			if row.Counts, err = h.store.CountEvalJobs(r.Context(), r.Project.ID, rule.ID, ""); err != nil {
				return nil, err
			}
			d.Rules = append(d.Rules, row)
		}
		if d.Connections, _, err = h.store.ListLLMConnections(r.Context(), r.Project.ID, 0, maxListed); err != nil {
			return nil, err
		}
	case "jobs":
		d.JobStatus = q.Get("status")
		if d.Jobs, _, err = h.store.ListEvalJobs(r.Context(), r.Project.ID, evalqueue.Filter{Status: d.JobStatus, Limit: maxListed}); err != nil {
			if refusal := web.StoreRefusal(err); refusal != nil {
				return nil, refusal
			}
			return nil, err
		}
	default:
		d.Tab = "evaluators"
	}
	d.ConditionRows = make([]condition, filterRows)
	return d, nil
}

func (h *handlers) back(r *web.Request, tab string) error {
	return r.Redirect(r.Path("project", r.Project.ID, "evals") + "?tab=" + tab)
}

func (h *handlers) deleteEvaluator(r *web.Request) error {
	err := h.store.DeleteEvaluator(r.Context(), r.Project.ID, r.PathValue("evaluatorId"))
	if refusal := web.StoreRefusal(err); refusal != nil {
		return refusal
	}
	if err != nil {
		return err
	}
	return h.back(r, "evaluators")
}

// createRule runs an evaluator on new traces or observations that pass the
// filter, sampled, after a delay that lets a trace finish.
func (h *handlers) createRule(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	f := ruleForm{Name: strings.TrimSpace(r.PostFormValue("name")), Evaluator: r.PostFormValue("evaluator"), Connection: r.PostFormValue("connection"),
		Target: r.PostFormValue("target"), Sampling: strings.TrimSpace(r.PostFormValue("sampling")), Delay: strings.TrimSpace(r.PostFormValue("delay"))}
	fields, keys, ops, values := r.PostForm["cond_field"], r.PostForm["cond_key"], r.PostForm["cond_op"], r.PostForm["cond_value"]
	var filter evaljobs.Filter
	for i := range min(len(fields), len(keys), len(ops), len(values)) {
		c := condition{Field: fields[i], Key: strings.TrimSpace(keys[i]), Operator: ops[i], Value: strings.TrimSpace(values[i])}
		if c.Field == "" {
			continue
		}
		f.Conditions = append(f.Conditions, c)
		cond := evaljobs.Condition{Field: c.Field, Key: c.Key, Operator: c.Operator}
		switch c.Operator {
		case evaljobs.OpAnyOf, evaljobs.OpNoneOf, evaljobs.OpAllOf:
			for _, v := range strings.Split(c.Value, ",") {
				if v = strings.TrimSpace(v); v != "" {
					cond.Values = append(cond.Values, v)
				}
			}
		case evaljobs.OpExists:
		default:
			cond.Value = c.Value
		}
		filter = append(filter, cond)
	}
	n := controlplane.NewEvalRule{Name: f.Name, EvaluatorID: f.Evaluator, ConnectionID: f.Connection, Target: f.Target, Filter: filter}
	var refusal *web.Error
	rate, perr := strconv.ParseFloat(f.Sampling, 64)
	delay, derr := strconv.ParseFloat(f.Delay, 64)
	switch {
	case perr != nil || rate <= 0 || rate > 100:
		refusal = &web.Error{Status: http.StatusBadRequest, Message: "sampling must be a percentage above 0 and at most 100"}
	case derr != nil || delay < 0:
		refusal = &web.Error{Status: http.StatusBadRequest, Message: "the delay must be a number of seconds"}
	default:
		rate /= 100
		d := time.Duration(delay * float64(time.Second))
		n.SamplingRate, n.Delay = &rate, &d
		_, err := h.store.CreateEvalRule(r.Context(), r.Project.ID, n)
		switch {
		case err == nil:
			return h.back(r, "rules")
		case errors.Is(err, evaljobs.ErrInvalidFilter):
			refusal = &web.Error{Status: http.StatusBadRequest, Message: err.Error()}
		default:
			if refusal = web.StoreRefusal(err); refusal == nil {
				return err
			}
		}
	}
	d, lerr := h.listData(r)
	if lerr != nil {
		return lerr
	}
	d.Form, d.Error = f, refusal.Message
	d.ConditionRows = f.Conditions
	for len(d.ConditionRows) < filterRows {
		d.ConditionRows = append(d.ConditionRows, condition{})
	}
	return r.RenderStatus(refusal.Status, h.t, "evals", d)
}

func (h *handlers) setRuleActive(r *web.Request) error {
	active := r.PostFormValue("active") == "true"
	_, err := h.store.UpdateEvalRule(r.Context(), r.Project.ID, r.PathValue("ruleId"), controlplane.EvalRuleUpdate{Active: &active})
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return h.back(r, "rules")
}

// backfill queues the rule over the stored traces of the last `days` days.
func (h *handlers) backfill(r *web.Request) error {
	days, err := strconv.Atoi(r.PostFormValue("days"))
	if err != nil || days < 1 || days > 90 {
		return web.BadRequest("Backfill 1 to 90 days.")
	}
	to := h.now()
	_, err = h.store.EnqueueBackfill(r.Context(), r.Project.ID, r.PathValue("ruleId"), to.Add(-time.Duration(days)*24*time.Hour), to)
	if refusal := web.StoreRefusal(err); refusal != nil {
		return refusal
	}
	if err != nil {
		return err
	}
	return h.back(r, "jobs")
}

func (h *handlers) deleteRule(r *web.Request) error {
	err := h.store.DeleteEvalRule(r.Context(), r.Project.ID, r.PathValue("ruleId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return h.back(r, "rules")
}

func (h *handlers) retryJob(r *web.Request) error {
	_, err := h.store.RetryEvalJob(r.Context(), r.Project.ID, r.PathValue("jobId"))
	if refusal := web.StoreRefusal(err); refusal != nil {
		return refusal
	}
	if err != nil {
		return err
	}
	return h.back(r, "jobs")
}

// prettyValues shows a preview's variables as indented JSON.
func prettyValues(v map[string]any) string {
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}
