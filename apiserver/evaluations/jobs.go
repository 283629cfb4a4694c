package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"net/http"
	"slices"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
)

// Job is one unit of evaluation work and what became of it.
type Job struct {
	ID string `json:"id"`
	// Kind is RULE, BACKFILL, EXPERIMENT_ITEM or EXPERIMENT_EVAL.
	Kind string `json:"kind"`
	// Status is PENDING, RUNNING, SUCCEEDED, FAILED or SKIPPED.
	Status        string  `json:"status"`
	RuleID        *string `json:"ruleId"`
	ExperimentID  *string `json:"experimentId"`
	EvaluatorID   *string `json:"evaluatorId"`
	TraceID       *string `json:"traceId"`
	ObservationID *string `json:"observationId"`
	DatasetItemID *string `json:"datasetItemId"`
	Attempts      int     `json:"attempts"`
	// DueAt is when a pending job runs next.
	DueAt httpx.Timestamp `json:"dueAt"`
	// LastError says why the last attempt failed, or why the job was skipped.
	LastError *string `json:"lastError"`
	ScoreID   *string `json:"scoreId"`
	// ExecutionTraceID is the trace that recorded the job's LLM call.
	ExecutionTraceID *string `json:"executionTraceId"`
	// State is a backfill's window and progress.
	State     httpx.JSON      `json:"state,omitempty"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
}

var jobKinds = []string{evalqueue.KindRule, evalqueue.KindBackfill, evalqueue.KindExperimentItem, evalqueue.KindExperimentEval}

func (h handlers) jobRoutes() []httpx.Route {
	const base = "/api/public/evals/jobs"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.listJobs,
			Doc: httpx.Doc{OperationID: "evalJobs_list", Tag: "Evaluations", Response: httpx.List[Job]{},
				Query: append(slices.Clone(httpx.PageParams),
					httpx.Param{Name: "ruleId", Type: httpx.TypeString, Description: "Jobs of this rule."},
					httpx.Param{Name: "experimentId", Type: httpx.TypeString, Description: "Jobs of this experiment."},
					httpx.Param{Name: "kind", Type: httpx.TypeString, Description: "RULE, BACKFILL, EXPERIMENT_ITEM or EXPERIMENT_EVAL."},
					httpx.Param{Name: "status", Type: httpx.TypeString, Description: "PENDING, RUNNING, SUCCEEDED, FAILED or SKIPPED."},
					httpx.Param{Name: "traceId", Type: httpx.TypeString, Description: "Jobs that evaluate this trace."}),
				Summary: "The project's evaluation jobs, newest first."},
		},
		{
			Method: http.MethodGet, Path: base + "/{jobId}", Access: httpx.ProjectKey, Handler: h.getJob,
			Doc: httpx.Doc{OperationID: "evalJobs_get", Tag: "Evaluations", Response: Job{}, Summary: "One evaluation job."},
		},
		{
			Method: http.MethodPost, Path: base + "/{jobId}/retry", Access: httpx.ProjectKey, Handler: h.retryJob,
			Doc: httpx.Doc{OperationID: "evalJobs_retry", Tag: "Evaluations", Response: Job{},
				Summary: "Queue a FAILED or SKIPPED job again, with fresh attempts."},
		},
	}
}

func (h handlers) listJobs(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	kind, err := q.OneOf("kind", jobKinds)
	if err != nil {
		return nil, err
	}
	status, err := q.OneOf("status", evalqueue.Statuses)
	if err != nil {
		return nil, err
	}
	list, total, err := h.store.ListEvalJobs(r.Context(), httpx.ProjectID(r), evalqueue.Filter{
		RuleID: q.String("ruleId"), ExperimentID: q.String("experimentId"), Kind: kind, Status: status,
		TraceID: q.String("traceId"), Offset: page.Offset(), Limit: page.Limit,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Job, 0, len(list))
	for _, j := range list {
		out = append(out, toJob(j))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) getJob(r *http.Request) (any, error) {
	j, err := h.store.GetEvalJob(r.Context(), httpx.ProjectID(r), r.PathValue("jobId"))
	if err != nil {
		return nil, storeError(err)
	}
	return toJob(j), nil
}

func (h handlers) retryJob(r *http.Request) (any, error) {
	j, err := h.store.RetryEvalJob(r.Context(), httpx.ProjectID(r), r.PathValue("jobId"))
	if err != nil {
		return nil, storeError(err)
	}
	return toJob(j), nil
}

func toJob(j evalqueue.Job) Job {
	out := Job{
		ID: j.ID, Kind: j.Kind, Status: j.Status, RuleID: httpx.OptionalString(j.RuleID),
		ExperimentID: httpx.OptionalString(j.ExperimentID), EvaluatorID: httpx.OptionalString(j.EvaluatorID),
		TraceID: httpx.OptionalString(j.TraceID), ObservationID: httpx.OptionalString(j.ObservationID),
		DatasetItemID: httpx.OptionalString(j.DatasetItemID), Attempts: j.Attempts, DueAt: httpx.FromTime(j.DueAt),
		LastError: httpx.OptionalString(j.LastError), ScoreID: httpx.OptionalString(j.ScoreID),
		ExecutionTraceID: httpx.OptionalString(j.ExecutionTraceID),
		CreatedAt:        httpx.FromTime(j.CreatedAt), UpdatedAt: httpx.FromTime(j.UpdatedAt),
	}
	if j.Kind == evalqueue.KindBackfill {
		out.State = httpx.JSON(j.State)
	}
	return out
}
