package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"encoding/json"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
)

// Experiment statuses, derived from the experiment's jobs.
const (
	ExperimentRunning   = "RUNNING"
	ExperimentCompleted = "COMPLETED"
)

// Experiment is a prompt experiment: a prompt version run over a dataset
// through an LLM connection, scored by evaluators, recorded as the dataset
// run RunName.
type Experiment struct {
	ID            string     `json:"id"`
	DatasetID     string     `json:"datasetId"`
	DatasetName   string     `json:"datasetName"`
	RunName       string     `json:"runName"`
	Description   string     `json:"description"`
	PromptName    string     `json:"promptName"`
	PromptVersion int        `json:"promptVersion"`
	ConnectionID  string     `json:"connectionId"`
	Model         string     `json:"model,omitempty"`
	ModelParams   httpx.JSON `json:"modelParams"`
	EvaluatorIDs  []string   `json:"evaluatorIds"`
	// Status is RUNNING while any job is pending or running, else COMPLETED.
	Status string `json:"status"`
	// Jobs counts the experiment's item and evaluation jobs by status.
	Jobs      map[string]int  `json:"jobs"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
}

// ExperimentRequest is the body of POST /api/public/evals/experiments.
type ExperimentRequest struct {
	DatasetName string `json:"datasetName"`
	// RunName names the dataset run the results are recorded as; it must be new.
	RunName     string `json:"runName"`
	Description string `json:"description,omitempty"`
	PromptName  string `json:"promptName"`
	// PromptVersion, else PromptLabel, else the production version.
	PromptVersion int    `json:"promptVersion,omitempty"`
	PromptLabel   string `json:"promptLabel,omitempty"`
	ConnectionID  string `json:"connectionId"`
	// Model and ModelParams override the prompt's config and the
	// connection's defaults.
	Model        string     `json:"model,omitempty"`
	ModelParams  httpx.JSON `json:"modelParams,omitempty"`
	EvaluatorIDs []string   `json:"evaluatorIds,omitempty"`
}

func (h handlers) experimentRoutes() []httpx.Route {
	const base = "/api/public/evals/experiments"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.listExperiments,
			Doc: httpx.Doc{OperationID: "promptExperiments_list", Tag: "Evaluations", Query: httpx.PageParams,
				Response: httpx.List[Experiment]{}, Summary: "The project's prompt experiments, newest first."},
		},
		{
			Method: http.MethodPost, Path: base, Access: httpx.ProjectKey, Handler: h.createExperiment,
			Doc: httpx.Doc{OperationID: "promptExperiments_create", Tag: "Evaluations", Body: ExperimentRequest{}, Response: Experiment{},
				Status:  http.StatusCreated,
				Summary: "Run a stored prompt version over a dataset's active items and score the outputs; the results become a dataset run."},
		},
		{
			Method: http.MethodGet, Path: base + "/{experimentId}", Access: httpx.ProjectKey, Handler: h.getExperiment,
			Doc: httpx.Doc{OperationID: "promptExperiments_get", Tag: "Evaluations", Response: Experiment{},
				Summary: "One prompt experiment with its progress."},
		},
	}
}

func (h handlers) listExperiments(r *http.Request) (any, error) {
	page, err := httpx.QueryOf(r).Page()
	if err != nil {
		return nil, err
	}
	project := httpx.ProjectID(r)
	list, total, err := h.store.ListExperiments(r.Context(), project, page.Offset(), page.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Experiment, 0, len(list))
	for _, x := range list {
		counts, err := h.store.CountEvalJobs(r.Context(), project, "", x.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, toExperiment(x, counts))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) createExperiment(r *http.Request) (any, error) {
	var req ExperimentRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	project := httpx.ProjectID(r)
	x, err := h.store.CreateExperiment(r.Context(), project, controlplane.NewExperiment{
		DatasetName: req.DatasetName, RunName: req.RunName, Description: req.Description, PromptName: req.PromptName,
		PromptVersion: req.PromptVersion, PromptLabel: req.PromptLabel, ConnectionID: req.ConnectionID, Model: req.Model,
		ModelParams: json.RawMessage(req.ModelParams), EvaluatorIDs: req.EvaluatorIDs,
	})
	if err != nil {
		return nil, storeError(err)
	}
	counts, err := h.store.CountEvalJobs(r.Context(), project, "", x.ID)
	if err != nil {
		return nil, err
	}
	return httpx.WithStatus(http.StatusCreated, toExperiment(x, counts)), nil
}

func (h handlers) getExperiment(r *http.Request) (any, error) {
	project := httpx.ProjectID(r)
	x, err := h.store.GetExperiment(r.Context(), project, r.PathValue("experimentId"))
	if err != nil {
		return nil, storeError(err)
	}
	counts, err := h.store.CountEvalJobs(r.Context(), project, "", x.ID)
	if err != nil {
		return nil, err
	}
	return toExperiment(x, counts), nil
}

func toExperiment(x controlplane.Experiment, counts map[string]int) Experiment {
	status := ExperimentCompleted
	if counts[evalqueue.Pending]+counts[evalqueue.Running] > 0 {
		status = ExperimentRunning
	}
	return Experiment{
		ID: x.ID, DatasetID: x.DatasetID, DatasetName: x.DatasetName, RunName: x.RunName, Description: x.Description,
		PromptName: x.PromptName, PromptVersion: x.PromptVersion, ConnectionID: x.ConnectionID, Model: x.Model,
		ModelParams: httpx.JSON(x.ModelParams), EvaluatorIDs: httpx.NonNil(x.EvaluatorIDs), Status: status, Jobs: counts,
		CreatedAt: httpx.FromTime(x.CreatedAt), UpdatedAt: httpx.FromTime(x.UpdatedAt),
	}
}
