package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/apiserver/ui/comments"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// ControlPlane is what the feedback actions read and write: score
// configs, datasets and annotation queues. *controlplane.Store implements it.
type ControlPlane interface {
	scores.Configs
	comments.Store
	ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]controlplane.ScoreConfig, int, error)
	ListDatasets(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dataset, int, error)
	UpsertDatasetItem(ctx context.Context, projectID string, u controlplane.DatasetItemUpsert) (controlplane.DatasetItem, error)
	ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AnnotationQueue, int, error)
	AddAnnotationQueueItem(ctx context.Context, projectID, queueID, objectID, objectType, status string) (controlplane.AnnotationQueueItem, bool, error)
}

// Scores stores scores; *chstore.Store implements it.
type Scores interface {
	InsertScores(ctx context.Context, scores []chstore.Score) error
}

// Media signs download URLs of uploaded media; *media.Service implements it.
type Media interface {
	DownloadURL(r *http.Request, projectID, mediaID string) (string, error)
}

// media sends the browser to an uploaded media of the project, for the
// images and files of inputs and outputs.
func (h *handlers) media(r *web.Request) error {
	u, err := h.mediaFiles.DownloadURL(r.Request, r.Project.ID, r.PathValue("mediaId"))
	if err != nil {
		return err
	}
	http.Redirect(r.Writer(), r.Request, u, http.StatusFound)
	return nil
}

// maxTargets bounds the dataset and queue choices listed in a form.
const maxTargets = 200

// Targets lists what bulk actions add rows to; *controlplane.Store
// implements it.
type Targets interface {
	ListDatasets(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dataset, int, error)
	ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AnnotationQueue, int, error)
}

// BulkTargets adds the add-to-dataset and add-to-queue actions the role
// allows to the table of list ("traces", "observations" or "sessions"),
// when the project has datasets or queues; this package serves them.
// Sessions go to queues only.
func BulkTargets(r *web.Request, cp Targets, t *web.Table, list string) error {
	base := r.Path("project", r.Project.ID, list)
	if list != "sessions" && r.Can(access.DatasetsWrite) {
		ds, _, err := cp.ListDatasets(r.Context(), r.Project.ID, 0, maxTargets)
		if err != nil {
			return err
		}
		if len(ds) > 0 {
			a := web.BulkAction{Label: "Add to dataset", Action: base + "/add-to-dataset", Choose: &web.Choice{Name: "dataset", Label: "Dataset"}}
			for _, d := range ds {
				a.Choose.Options = append(a.Choose.Options, web.Option{Value: d.Name, Label: d.Name})
			}
			t.Bulk = append(t.Bulk, a)
		}
	}
	if r.Can(access.AnnotationQueuesWrite) {
		qs, _, err := cp.ListAnnotationQueues(r.Context(), r.Project.ID, 0, maxTargets)
		if err != nil {
			return err
		}
		if len(qs) > 0 {
			a := web.BulkAction{Label: "Add to queue", Action: base + "/add-to-queue", Choose: &web.Choice{Name: "queue", Label: "Annotation queue"}}
			for _, q := range qs {
				a.Choose.Options = append(a.Choose.Options, web.Option{Value: q.ID, Label: q.Name})
			}
			t.Bulk = append(t.Bulk, a)
		}
	}
	return nil
}

// selected reads the ticked row ids of a bulk form.
func selected(r *web.Request) ([]string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, web.BadRequest("The form could not be read.")
	}
	ids := nonEmpty(r.PostForm["id"])
	switch {
	case len(ids) == 0:
		return nil, web.BadRequest("Select the rows first.")
	case len(ids) > 100:
		return nil, web.BadRequest("Select at most 100 rows at once.")
	}
	return ids, nil
}

// backToList returns to the list the form came from, with a notice.
func backToList(r *web.Request, list, notice string) error {
	back := r.Path("project", r.Project.ID, list)
	q := url.Values{}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Path == back {
		q = ref.Query()
	}
	q.Set("notice", notice)
	return r.Redirect(back + "?" + q.Encode())
}

// jsonValue is a stored input or output as JSON: JSON text as it is, any
// other text as a JSON string.
func jsonValue(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// datasetItem is what a selected trace or observation becomes in a
// dataset: its input, its output as the expected output, and a link back.
func (h *handlers) datasetItem(r *web.Request, list, id string) (controlplane.DatasetItemUpsert, error) {
	if list == "observations" {
		o, err := h.store.GetObservation(r.Context(), r.Project.ID, id)
		if errors.Is(err, chstore.ErrNotFound) {
			return controlplane.DatasetItemUpsert{}, errNotFound
		}
		if err != nil {
			return controlplane.DatasetItemUpsert{}, err
		}
		trace, obs := o.TraceID, o.ID
		return controlplane.DatasetItemUpsert{Input: jsonValue(o.Input), ExpectedOutput: jsonValue(o.Output),
			SourceTraceID: &trace, SourceObservationID: &obs}, nil
	}
	tr, err := h.getTrace(r, id)
	if err != nil {
		return controlplane.DatasetItemUpsert{}, err
	}
	src := tr.ID
	return controlplane.DatasetItemUpsert{Input: jsonValue(tr.Input), ExpectedOutput: jsonValue(tr.Output), SourceTraceID: &src}, nil
}

// addToDataset makes each selected trace or observation of list an item
// of the chosen dataset.
func (h *handlers) addToDataset(list string) func(*web.Request) error {
	return func(r *web.Request) error {
		ids, err := selected(r)
		if err != nil {
			return err
		}
		name := r.PostFormValue("dataset")
		for _, id := range ids {
			u, err := h.datasetItem(r, list, id)
			if err != nil {
				return err
			}
			u.DatasetName = name
			if _, err := h.cp.UpsertDatasetItem(r.Context(), r.Project.ID, u); err != nil {
				if errors.Is(err, controlplane.ErrNotFound) {
					return web.BadRequest("The dataset %q does not exist.", name)
				}
				return err
			}
		}
		return backToList(r, list, strconv.Itoa(len(ids))+" "+list+" added to dataset "+name+".")
	}
}

// queueObjects are the queue item type of each list's rows.
var queueObjects = map[string]string{"traces": controlplane.ObjectTrace, "observations": controlplane.ObjectObservation, "sessions": controlplane.ObjectSession}

// addToQueue queues each selected row of list for review; rows already in
// the queue stay as they are.
func (h *handlers) addToQueue(list string) func(*web.Request) error {
	return func(r *web.Request) error {
		ids, err := selected(r)
		if err != nil {
			return err
		}
		queue := r.PostFormValue("queue")
		added := 0
		for _, id := range ids {
			if err := h.exists(r, list, id); err != nil {
				return err
			}
			_, created, err := h.cp.AddAnnotationQueueItem(r.Context(), r.Project.ID, queue, id, queueObjects[list], "")
			if errors.Is(err, controlplane.ErrNotFound) {
				return web.BadRequest("That annotation queue does not exist.")
			}
			if err != nil {
				return err
			}
			if created {
				added++
			}
		}
		return backToList(r, list, strconv.Itoa(added)+" "+list+" added to the annotation queue ("+strconv.Itoa(len(ids)-added)+" were in it already).")
	}
}

// exists refuses a row id the project does not have.
func (h *handlers) exists(r *web.Request, list, id string) error {
	var err error
	switch list {
	case "traces":
		_, err = h.getTrace(r, id)
		return err
	case "observations":
		_, err = h.store.GetObservation(r.Context(), r.Project.ID, id)
	case "sessions":
		_, err = h.store.GetSession(r.Context(), r.Project.ID, id)
	}
	if errors.Is(err, chstore.ErrNotFound) {
		return errNotFound
	}
	return err
}

// scoreForm is the add-score form of the trace page: the project's active
// score configs.
type scoreForm struct {
	Configs []controlplane.ScoreConfig
}

func (h *handlers) scoreForm(r *web.Request) (*scoreForm, error) {
	if !r.Can(access.ScoresWrite) {
		return nil, nil
	}
	cs, _, err := h.cp.ListScoreConfigs(r.Context(), r.Project.ID, 0, maxTargets)
	if err != nil {
		return nil, err
	}
	f := &scoreForm{}
	for _, c := range cs {
		if !c.IsArchived {
			f.Configs = append(f.Configs, c)
		}
	}
	return f, nil
}

// addScore stores a person's score of the trace, or of one observation,
// through a score config, checked by the same rules as the API's scores.
func (h *handlers) addScore(r *web.Request) error {
	tr, err := h.getTrace(r, r.PathValue("traceId"))
	if err != nil {
		return err
	}
	obs := strings.TrimSpace(r.PostFormValue("observation"))
	body := scores.Body{TraceID: tr.ID, ObservationID: obs, ConfigID: r.PostFormValue("config"), Value: scores.FormValue(r.PostFormValue("value")),
		Comment: strings.TrimSpace(r.PostFormValue("comment")), Environment: tr.Environment}
	sc, err := scores.Builder{Configs: h.cp}.Annotation(r.Context(), r.Project.ID, r.User.ID, body, time.Now())
	var apiErr *httpx.Error
	if errors.As(err, &apiErr) {
		return web.BadRequest("%s", apiErr.Message)
	}
	if err != nil {
		return err
	}
	if err := h.scores.InsertScores(r.Context(), []chstore.Score{sc}); err != nil {
		return err
	}
	target := r.Path("project", r.Project.ID, "traces", tr.ID)
	q := url.Values{}
	if obs != "" {
		q.Set("observation", obs)
	}
	if l := r.PostFormValue("list"); l != "" {
		q.Set("list", l)
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	return r.Redirect(target)
}
