// Package annotation serves the annotation queues: the list with each
// queue's progress, a queue's items, reviewers and progress per reviewer,
// and the reviewer view that shows one item at a time with a score form
// built from the queue's score configs, worked from the keyboard.
package annotation // import "github.com/glassbox-dev/glassbox/apiserver/ui/annotation"

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store is what the queue pages read and write; *controlplane.Store
// implements it.
type Store interface {
	scores.Configs
	ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]controlplane.ScoreConfig, int, error)
	ListMembers(ctx context.Context, orgID string) ([]controlplane.Membership, error)

	CreateAnnotationQueue(ctx context.Context, projectID string, n controlplane.NewAnnotationQueue) (controlplane.AnnotationQueue, error)
	GetAnnotationQueue(ctx context.Context, projectID, id string) (controlplane.AnnotationQueue, error)
	ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AnnotationQueue, int, error)
	AnnotationQueueProgress(ctx context.Context, projectID, queueID string) (controlplane.QueueProgress, error)
	ListAnnotationQueueItems(ctx context.Context, projectID, queueID, status string, offset, limit int) ([]controlplane.AnnotationQueueItem, int, error)
	GetAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) (controlplane.AnnotationQueueItem, error)
	SetAnnotationQueueItemStatus(ctx context.Context, projectID, queueID, itemID, status, userID string) (controlplane.AnnotationQueueItem, error)
	DeleteAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) error
	AssignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error
	UnassignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error
	AnnotationQueueAssignees(ctx context.Context, projectID, queueID string) ([]string, error)
}

// Traces reads what reviewers look at and stores their scores;
// *chstore.Store implements it.
type Traces interface {
	GetTraceOutline(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
	ListScores(ctx context.Context, f chstore.ScoreFilter) ([]chstore.Score, int, error)
	InsertScores(ctx context.Context, scores []chstore.Score) error
}

type handlers struct {
	store  Store
	traces Traces
	t      *web.Templates
}

// Routes registers the annotation queue pages and their sidebar entry.
func Routes(app *web.App, store Store, traces Traces) error {
	t, err := app.Parse(pages, "queues.html", "queue.html", "review.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, traces: traces, t: t}
	app.AddNav(web.NavItem{Section: "Evaluation", Label: "Annotation queues", Path: "annotation-queues", Action: access.ProjectRead, Order: 320})
	base := "/project/{projectId}/annotation-queues"
	return app.Handle(
		web.InProjectRoute(http.MethodGet, base, access.ProjectRead, h.list),
		web.InProjectRoute(http.MethodPost, base, access.AnnotationQueuesWrite, h.create),
		web.InProjectRoute(http.MethodGet, base+"/{queueId}", access.ProjectRead, h.queue),
		web.InProjectRoute(http.MethodPost, base+"/{queueId}/assignees", access.AnnotationQueuesWrite, h.assign),
		web.InProjectRoute(http.MethodPost, base+"/{queueId}/assignees/{userId}/remove", access.AnnotationQueuesWrite, h.unassign),
		web.InProjectRoute(http.MethodGet, base+"/{queueId}/next", access.ProjectRead, h.next),
		web.InProjectRoute(http.MethodGet, base+"/{queueId}/items/{itemId}", access.ProjectRead, h.review),
		web.InProjectRoute(http.MethodPost, base+"/{queueId}/items/{itemId}", access.AnnotationQueuesWrite, h.complete),
		web.InProjectRoute(http.MethodPost, base+"/{queueId}/items/{itemId}/remove", access.AnnotationQueuesWrite, h.remove),
	)
}

// maxListed bounds the queues, configs and items a page reads.
const maxListed = 500

type queueRow struct {
	controlplane.AnnotationQueue
	Configs  []string // names
	Progress controlplane.QueueProgress
}

type listData struct {
	Queues []queueRow
	// Configs are the active score configs a new queue may use.
	Configs []controlplane.ScoreConfig
	Form    queueForm
	Error   string
}

type queueForm struct {
	Name, Description string
	ConfigIDs         []string
}

// list shows the project's queues with their score configs and progress.
func (h *handlers) list(r *web.Request) error {
	d, err := h.listData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "queues", d)
}

func (h *handlers) listData(r *web.Request) (*listData, error) {
	qs, _, err := h.store.ListAnnotationQueues(r.Context(), r.Project.ID, 0, maxListed)
	if err != nil {
		return nil, err
	}
	cs, _, err := h.store.ListScoreConfigs(r.Context(), r.Project.ID, 0, maxListed)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	d := &listData{}
	for _, c := range cs {
		names[c.ID] = c.Name
		if !c.IsArchived {
			d.Configs = append(d.Configs, c)
		}
	}
	for _, q := range qs {
		row := queueRow{AnnotationQueue: q}
		for _, id := range q.ScoreConfigIDs {
			row.Configs = append(row.Configs, names[id])
		}
		if row.Progress, err = h.store.AnnotationQueueProgress(r.Context(), r.Project.ID, q.ID); err != nil {
			return nil, err
		}
		d.Queues = append(d.Queues, row)
	}
	return d, nil
}

// create adds a queue with the chosen score configs.
func (h *handlers) create(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	f := queueForm{Name: strings.TrimSpace(r.PostFormValue("name")), Description: strings.TrimSpace(r.PostFormValue("description")),
		ConfigIDs: r.PostForm["config"]}
	q, err := h.store.CreateAnnotationQueue(r.Context(), r.Project.ID, controlplane.NewAnnotationQueue{Name: f.Name,
		Description: f.Description, ScoreConfigIDs: f.ConfigIDs})
	if refusal := web.StoreRefusal(err); refusal != nil {
		d, lerr := h.listData(r)
		if lerr != nil {
			return lerr
		}
		d.Form, d.Error = f, refusal.Message
		return r.RenderStatus(refusal.Status, h.t, "queues", d)
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID))
}

type reviewer struct {
	UserID, Name string
	Completed    int
	Assigned     bool
}

type queueData struct {
	Queue    controlplane.AnnotationQueue
	Configs  []controlplane.ScoreConfig
	Progress controlplane.QueueProgress
	// Status is the items tab: PENDING or COMPLETED.
	Status    string
	Items     []itemRow
	Total     int
	Reviewers []reviewer
	// Members can be assigned; those assigned already are left out.
	Members []controlplane.Membership
}

type itemRow struct {
	controlplane.AnnotationQueueItem
	CompletedByName string
}

// queue shows a queue's items (pending or completed), its reviewers with
// what each completed, and the assignment form.
func (h *handlers) queue(r *web.Request) error {
	q, err := h.getQueue(r)
	if err != nil {
		return err
	}
	d := queueData{Queue: q, Status: controlplane.ItemPending}
	if r.URL.Query().Get("status") == controlplane.ItemCompleted {
		d.Status = controlplane.ItemCompleted
	}
	if d.Configs, err = h.queueConfigs(r, q); err != nil {
		return err
	}
	if d.Progress, err = h.store.AnnotationQueueProgress(r.Context(), r.Project.ID, q.ID); err != nil {
		return err
	}
	items, total, err := h.store.ListAnnotationQueueItems(r.Context(), r.Project.ID, q.ID, d.Status, 0, maxListed)
	if err != nil {
		return err
	}
	d.Total = total
	members, err := h.store.ListMembers(r.Context(), r.Org.ID)
	if err != nil {
		return err
	}
	names := map[string]string{"": "API"}
	for _, m := range members {
		names[m.UserID] = m.Email
	}
	for _, it := range items {
		d.Items = append(d.Items, itemRow{AnnotationQueueItem: it, CompletedByName: names[it.CompletedBy]})
	}
	assigned, err := h.store.AnnotationQueueAssignees(r.Context(), r.Project.ID, q.ID)
	if err != nil {
		return err
	}
	for _, id := range assigned {
		d.Reviewers = append(d.Reviewers, reviewer{UserID: id, Name: names[id], Completed: d.Progress.CompletedBy[id], Assigned: true})
	}
	for id, n := range d.Progress.CompletedBy {
		if !slices.Contains(assigned, id) {
			d.Reviewers = append(d.Reviewers, reviewer{UserID: id, Name: names[id], Completed: n})
		}
	}
	slices.SortFunc(d.Reviewers, func(a, b reviewer) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range members {
		if !slices.Contains(assigned, m.UserID) {
			d.Members = append(d.Members, m)
		}
	}
	return r.Render(h.t, "queue", d)
}

func (h *handlers) getQueue(r *web.Request) (controlplane.AnnotationQueue, error) {
	q, err := h.store.GetAnnotationQueue(r.Context(), r.Project.ID, r.PathValue("queueId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return q, web.ErrNotFound
	}
	return q, err
}

// queueConfigs are the queue's score configs in its order; archived ones
// are left out, as they take no new scores.
func (h *handlers) queueConfigs(r *web.Request, q controlplane.AnnotationQueue) ([]controlplane.ScoreConfig, error) {
	var out []controlplane.ScoreConfig
	for _, id := range q.ScoreConfigIDs {
		c, err := h.store.GetScoreConfig(r.Context(), r.Project.ID, id)
		if errors.Is(err, controlplane.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !c.IsArchived {
			out = append(out, c)
		}
	}
	return out, nil
}

func (h *handlers) assign(r *web.Request) error {
	q, err := h.getQueue(r)
	if err != nil {
		return err
	}
	err = h.store.AssignAnnotationQueue(r.Context(), r.Project.ID, q.ID, r.PostFormValue("user"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.BadRequest("Only members of the organization can review its queues.")
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID))
}

func (h *handlers) unassign(r *web.Request) error {
	q, err := h.getQueue(r)
	if err != nil {
		return err
	}
	err = h.store.UnassignAnnotationQueue(r.Context(), r.Project.ID, q.ID, r.PathValue("userId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID))
}
