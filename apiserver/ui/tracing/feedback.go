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

// bulkTargets adds the add-to-dataset and add-to-queue actions the role
// allows, when the project has datasets or queues.
func (h *handlers) bulkTargets(r *web.Request, t *web.Table) error {
	base := r.Path("project", r.Project.ID, "traces")
	if r.Can(access.DatasetsWrite) {
		ds, _, err := h.cp.ListDatasets(r.Context(), r.Project.ID, 0, maxTargets)
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
		qs, _, err := h.cp.ListAnnotationQueues(r.Context(), r.Project.ID, 0, maxTargets)
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

// selected reads the ticked trace ids of a bulk form.
func selected(r *web.Request) ([]string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, web.BadRequest("The form could not be read.")
	}
	ids := nonEmpty(r.PostForm["id"])
	switch {
	case len(ids) == 0:
		return nil, web.BadRequest("Select the traces first.")
	case len(ids) > 100:
		return nil, web.BadRequest("Select at most 100 traces at once.")
	}
	return ids, nil
}

// backToList returns to the traces list the form came from, with a notice.
func backToList(r *web.Request, notice string) error {
	back := r.Path("project", r.Project.ID, "traces")
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

// addToDataset makes each selected trace an item of the dataset: its input,
// its output as the expected output, and a link back to the trace.
func (h *handlers) addToDataset(r *web.Request) error {
	ids, err := selected(r)
	if err != nil {
		return err
	}
	name := r.PostFormValue("dataset")
	for _, id := range ids {
		tr, err := h.getTrace(r, id)
		if err != nil {
			return err
		}
		src := tr.ID
		if _, err := h.cp.UpsertDatasetItem(r.Context(), r.Project.ID, controlplane.DatasetItemUpsert{DatasetName: name,
			Input: jsonValue(tr.Input), ExpectedOutput: jsonValue(tr.Output), SourceTraceID: &src}); err != nil {
			if errors.Is(err, controlplane.ErrNotFound) {
				return web.BadRequest("The dataset %q does not exist.", name)
			}
			return err
		}
	}
	return backToList(r, strconv.Itoa(len(ids))+" traces added to dataset "+name+".")
}

func (h *handlers) addToQueue(r *web.Request) error {
	ids, err := selected(r)
	if err != nil {
		return err
	}
	queue := r.PostFormValue("queue")
	added := 0
	for _, id := range ids {
		if _, err := h.getTrace(r, id); err != nil {
			return err
		}
		_, created, err := h.cp.AddAnnotationQueueItem(r.Context(), r.Project.ID, queue, id, "TRACE", "")
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
	return backToList(r, strconv.Itoa(added)+" traces added to the annotation queue ("+strconv.Itoa(len(ids)-added)+" were in it already).")
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
