package datasets

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
)

// Experiments starts prompt experiments and reads their progress;
// *controlplane.Store implements it.
type Experiments interface {
	ListPrompts(ctx context.Context, projectID string, f controlplane.PromptFilter) ([]controlplane.PromptSummary, int, error)
	ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]controlplane.LLMConnection, int, error)
	ListEvaluators(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Evaluator, int, error)
	CreateExperiment(ctx context.Context, projectID string, n controlplane.NewExperiment) (controlplane.Experiment, error)
	GetExperiment(ctx context.Context, projectID, id string) (controlplane.Experiment, error)
	CountEvalJobs(ctx context.Context, projectID, ruleID, experimentID string) (map[string]int, error)
	ListEvalJobs(ctx context.Context, projectID string, f evalqueue.Filter) ([]evalqueue.Job, int, error)
}

type experimentForm struct {
	RunName, Description, Prompt, Connection, Model string
	Evaluators                                      []string
}

type promptChoice struct {
	Value, Label string // Value is name@version
}

type newExperimentData struct {
	Dataset     controlplane.Dataset
	Form        experimentForm
	Prompts     []promptChoice
	Connections []controlplane.LLMConnection
	Evaluators  []controlplane.Evaluator
	Error       string
}

// newExperiment is the form that starts a prompt experiment over the
// dataset: a prompt version, an LLM connection and model, evaluators.
func (h *handlers) newExperiment(r *web.Request) error {
	d, err := h.newExperimentData(r)
	if err != nil {
		return err
	}
	if p := r.URL.Query().Get("prompt"); p != "" {
		d.Form.Prompt = p
	}
	return r.Render(h.t, "experiment_new", d)
}

func (h *handlers) newExperimentData(r *web.Request) (*newExperimentData, error) {
	ds, err := h.getDataset(r)
	if err != nil {
		return nil, err
	}
	d := &newExperimentData{Dataset: ds}
	prompts, _, err := h.store.ListPrompts(r.Context(), r.Project.ID, controlplane.PromptFilter{Limit: maxListed})
	if err != nil {
		return nil, err
	}
	for _, p := range prompts {
		for i := len(p.Versions) - 1; i >= 0; i-- {
			v := p.Versions[i]
			label := p.Name + " v" + strconv.Itoa(v)
			if ls := p.VersionLabels[v]; len(ls) > 0 {
				label += " (" + strings.Join(ls, ", ") + ")"
			}
			d.Prompts = append(d.Prompts, promptChoice{Value: p.Name + "@" + strconv.Itoa(v), Label: label})
		}
	}
	if d.Connections, _, err = h.store.ListLLMConnections(r.Context(), r.Project.ID, 0, maxListed); err != nil {
		return nil, err
	}
	if d.Evaluators, _, err = h.store.ListEvaluators(r.Context(), r.Project.ID, 0, maxListed); err != nil {
		return nil, err
	}
	d.Form.RunName = "experiment-" + h.now().UTC().Format("2006-01-02-150405")
	return d, nil
}

// startExperiment creates the experiment, which queues one job per item
// for the evaluation workers, and opens its progress page.
func (h *handlers) startExperiment(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	d, err := h.newExperimentData(r)
	if err != nil {
		return err
	}
	f := experimentForm{RunName: strings.TrimSpace(r.PostFormValue("run_name")), Description: strings.TrimSpace(r.PostFormValue("description")),
		Prompt: r.PostFormValue("prompt"), Connection: r.PostFormValue("connection"), Model: strings.TrimSpace(r.PostFormValue("model")),
		Evaluators: r.PostForm["evaluator"]}
	d.Form = f
	name, version, ok := strings.Cut(f.Prompt, "@")
	v, verr := strconv.Atoi(version)
	if !ok || verr != nil {
		d.Error = "Choose a prompt version."
		return r.RenderStatus(http.StatusBadRequest, h.t, "experiment_new", d)
	}
	x, err := h.store.CreateExperiment(r.Context(), r.Project.ID, controlplane.NewExperiment{DatasetName: d.Dataset.Name,
		RunName: f.RunName, Description: f.Description, PromptName: name, PromptVersion: v, ConnectionID: f.Connection,
		Model: f.Model, EvaluatorIDs: f.Evaluators})
	if refusal := web.StoreRefusal(err); refusal != nil {
		d.Error = refusal.Message
		return r.RenderStatus(refusal.Status, h.t, "experiment_new", d)
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "datasets", d.Dataset.ID, "experiments", x.ID))
}

type experimentData struct {
	Dataset    controlplane.Dataset
	Experiment controlplane.Experiment
	Counts     map[string]int
	Total      int
	Done       int
	Failed     []evalqueue.Job
	// Finished is set when no job is pending or running.
	Finished bool
	// Previous is the run before this one, to compare with.
	Previous string
}

// maxFailuresShown bounds the failed jobs listed with their errors.
const maxFailuresShown = 20

// experiment shows an experiment's progress: its jobs by status, the
// errors of failed ones, and, once done, the way to its run's comparison.
// While jobs are waiting the page refreshes its progress itself.
func (h *handlers) experiment(r *web.Request) error {
	ds, err := h.getDataset(r)
	if err != nil {
		return err
	}
	x, err := h.store.GetExperiment(r.Context(), r.Project.ID, r.PathValue("experimentId"))
	if errors.Is(err, controlplane.ErrNotFound) || (err == nil && x.DatasetID != ds.ID) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	d := experimentData{Dataset: ds, Experiment: x}
	if d.Counts, err = h.store.CountEvalJobs(r.Context(), r.Project.ID, "", x.ID); err != nil {
		return err
	}
	for status, n := range d.Counts {
		d.Total += n
		if status != evalqueue.Pending && status != evalqueue.Running {
			d.Done += n
		}
	}
	d.Finished = d.Done == d.Total
	if d.Failed, _, err = h.store.ListEvalJobs(r.Context(), r.Project.ID, evalqueue.Filter{ExperimentID: x.ID,
		Status: evalqueue.Failed, Limit: maxFailuresShown}); err != nil {
		return err
	}
	runs, _, err := h.store.ListDatasetRuns(r.Context(), r.Project.ID, ds.Name, 0, maxListed)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if run.Name != x.RunName && run.CreatedAt.Before(x.CreatedAt.Add(time.Second)) {
			d.Previous = run.Name
			break
		}
	}
	if r.HTMX() {
		return r.RenderFragment(h.t, "experiment", "progress", d)
	}
	return r.Render(h.t, "experiment", d)
}
