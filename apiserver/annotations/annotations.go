// Package annotations serves annotation queues as the Langfuse API does:
// queues with their score configs, the traces, observations and sessions
// queued for review, and the reviewers assigned. Completing an item can
// record the reviewer's scores in the same request; they are checked
// against the queue's configs and stored with source ANNOTATION.
package annotations // import "github.com/glassbox-dev/glassbox/apiserver/annotations"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes need from the control plane store.
type Store interface {
	CreateAnnotationQueue(ctx context.Context, projectID string, n controlplane.NewAnnotationQueue) (controlplane.AnnotationQueue, error)
	GetAnnotationQueue(ctx context.Context, projectID, id string) (controlplane.AnnotationQueue, error)
	ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AnnotationQueue, int, error)
	AddAnnotationQueueItem(ctx context.Context, projectID, queueID, objectID, objectType, status string) (controlplane.AnnotationQueueItem, bool, error)
	GetAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) (controlplane.AnnotationQueueItem, error)
	ListAnnotationQueueItems(ctx context.Context, projectID, queueID, status string, offset, limit int) ([]controlplane.AnnotationQueueItem, int, error)
	SetAnnotationQueueItemStatus(ctx context.Context, projectID, queueID, itemID, status, userID string) (controlplane.AnnotationQueueItem, error)
	DeleteAnnotationQueueItem(ctx context.Context, projectID, queueID, itemID string) error
	AssignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error
	UnassignAnnotationQueue(ctx context.Context, projectID, queueID, userID string) error
	AnnotationQueueAssignees(ctx context.Context, projectID, queueID string) ([]string, error)
	scores.Configs
}

// Traces is what the routes need from ClickHouse: an observation's trace,
// and a place for the scores.
type Traces interface {
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	InsertScores(ctx context.Context, scores []chstore.Score) error
}

// Queue is an annotation queue.
type Queue struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Description    *string         `json:"description"`
	ScoreConfigIDs []string        `json:"scoreConfigIds"`
	CreatedAt      httpx.Timestamp `json:"createdAt"`
	UpdatedAt      httpx.Timestamp `json:"updatedAt"`
}

// QueueRequest is the body of POST /api/public/annotation-queues.
type QueueRequest struct {
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	ScoreConfigIDs []string `json:"scoreConfigIds"`
}

// Item is an object queued for review.
type Item struct {
	ID string `json:"id"`
	// QueueID is the queue the item is in.
	QueueID string `json:"queueId"`
	// ObjectID is the trace, observation or session id.
	ObjectID string `json:"objectId"`
	// ObjectType is TRACE, OBSERVATION or SESSION.
	ObjectType string `json:"objectType"`
	// Status is PENDING or COMPLETED.
	Status      string           `json:"status"`
	CompletedAt *httpx.Timestamp `json:"completedAt,omitempty"`
	CreatedAt   httpx.Timestamp  `json:"createdAt"`
	UpdatedAt   httpx.Timestamp  `json:"updatedAt"`
}

// ItemRequest is the body of POST /api/public/annotation-queues/{queueId}/items.
// Adding an object that is already queued returns its item.
type ItemRequest struct {
	ObjectID   string `json:"objectId"`
	ObjectType string `json:"objectType"`
	Status     string `json:"status,omitempty"`
}

// ItemScore is one score a reviewer gives an item; ConfigID must be one of
// the queue's score configs, and Value fit it.
type ItemScore struct {
	ConfigID string     `json:"configId"`
	Value    httpx.JSON `json:"value"`
	Comment  string     `json:"comment,omitempty"`
}

// ItemUpdate is the body of PATCH /api/public/annotation-queues/{queueId}/items/{itemId}.
// Scores, when given, are recorded before the status changes; the status
// then defaults to COMPLETED.
type ItemUpdate struct {
	Status string      `json:"status,omitempty"`
	Scores []ItemScore `json:"scores,omitempty"`
	// UserID is the reviewer: the scores' author and who completed the item.
	UserID string `json:"userId,omitempty"`
}

// Assignment is a reviewer assigned to a queue.
type Assignment struct {
	UserID    string `json:"userId"`
	QueueID   string `json:"queueId"`
	ProjectID string `json:"projectId"`
}

// AssignmentRequest is the body of the assignment routes.
type AssignmentRequest struct {
	UserID string `json:"userId"`
}

// Assignments lists a queue's reviewers.
type Assignments struct {
	Data []Assignment `json:"data"`
}

// Deletion answers a deletion.
type Deletion struct {
	Success bool   `json:"success"`
	Message string `json:"message,omitempty"`
}

type handlers struct {
	store   Store
	traces  Traces
	builder scores.Builder
	now     func() time.Time
}

// Routes returns the annotation queue routes.
func Routes(store Store, traces Traces) []httpx.Route {
	h := handlers{store: store, traces: traces, builder: scores.Builder{Configs: store}, now: time.Now}
	const base = "/api/public/annotation-queues"
	const item = base + "/{queueId}/items/{itemId}"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.listQueues,
			Doc: httpx.Doc{OperationID: "annotationQueues_listQueues", Tag: "AnnotationQueues", Query: httpx.PageParams,
				Response: httpx.List[Queue]{}, Summary: "The project's annotation queues, oldest first."},
		},
		{
			Method: http.MethodPost, Path: base, Access: httpx.ProjectKey, Handler: h.createQueue,
			Doc: httpx.Doc{OperationID: "annotationQueues_createQueue", Tag: "AnnotationQueues", Body: QueueRequest{},
				Response: Queue{}, Summary: "Create an annotation queue scored with the given score configs."},
		},
		{
			Method: http.MethodGet, Path: base + "/{queueId}", Access: httpx.ProjectKey, Handler: h.getQueue,
			Doc: httpx.Doc{OperationID: "annotationQueues_getQueue", Tag: "AnnotationQueues", Response: Queue{},
				Summary: "One annotation queue."},
		},
		{
			Method: http.MethodGet, Path: base + "/{queueId}/items", Access: httpx.ProjectKey, Handler: h.listItems,
			Doc: httpx.Doc{OperationID: "annotationQueues_listQueueItems", Tag: "AnnotationQueues", Response: httpx.List[Item]{},
				Query: append(slices.Clone(httpx.PageParams),
					httpx.Param{Name: "status", Type: httpx.TypeString, Description: "PENDING or COMPLETED."}),
				Summary: "A queue's items, oldest first."},
		},
		{
			Method: http.MethodPost, Path: base + "/{queueId}/items", Access: httpx.ProjectKey, Handler: h.createItem,
			Doc: httpx.Doc{OperationID: "annotationQueues_createQueueItem", Tag: "AnnotationQueues", Body: ItemRequest{},
				Response: Item{}, Summary: "Queue a trace, observation or session for review."},
		},
		{
			Method: http.MethodGet, Path: item, Access: httpx.ProjectKey, Handler: h.getItem,
			Doc: httpx.Doc{OperationID: "annotationQueues_getQueueItem", Tag: "AnnotationQueues", Response: Item{},
				Summary: "One queue item."},
		},
		{
			Method: http.MethodPatch, Path: item, Access: httpx.ProjectKey, Handler: h.updateItem,
			Doc: httpx.Doc{OperationID: "annotationQueues_updateQueueItem", Tag: "AnnotationQueues", Body: ItemUpdate{},
				Response: Item{}, Summary: "Complete or reopen an item, optionally recording the reviewer's scores."},
		},
		{
			Method: http.MethodDelete, Path: item, Access: httpx.ProjectKey, Handler: h.deleteItem,
			Doc: httpx.Doc{OperationID: "annotationQueues_deleteQueueItem", Tag: "AnnotationQueues", Response: Deletion{},
				Summary: "Remove an item from its queue."},
		},
		{
			Method: http.MethodGet, Path: base + "/{queueId}/assignments", Access: httpx.ProjectKey, Handler: h.listAssignments,
			Doc: httpx.Doc{OperationID: "annotationQueues_listQueueAssignments", Tag: "AnnotationQueues", Response: Assignments{},
				Summary: "The reviewers assigned to a queue."},
		},
		{
			Method: http.MethodPost, Path: base + "/{queueId}/assignments", Access: httpx.ProjectKey, Handler: h.assign,
			Doc: httpx.Doc{OperationID: "annotationQueues_createQueueAssignment", Tag: "AnnotationQueues", Body: AssignmentRequest{},
				Response: Assignment{}, Summary: "Assign a member of the project's organization to a queue."},
		},
		{
			Method: http.MethodDelete, Path: base + "/{queueId}/assignments", Access: httpx.ProjectKey, Handler: h.unassign,
			Doc: httpx.Doc{OperationID: "annotationQueues_deleteQueueAssignment", Tag: "AnnotationQueues", Body: AssignmentRequest{},
				Response: Deletion{}, Summary: "Remove a reviewer's assignment to a queue."},
		},
	}
}

func (h handlers) listQueues(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListAnnotationQueues, toQueue)
}

func (h handlers) createQueue(r *http.Request) (any, error) {
	var req QueueRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	q, err := h.store.CreateAnnotationQueue(r.Context(), httpx.ProjectID(r), controlplane.NewAnnotationQueue{
		Name: req.Name, Description: req.Description, ScoreConfigIDs: req.ScoreConfigIDs,
	})
	if err != nil {
		return nil, err
	}
	return toQueue(q), nil
}

func (h handlers) getQueue(r *http.Request) (any, error) {
	q, err := h.store.GetAnnotationQueue(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"))
	if err != nil {
		return nil, err
	}
	return toQueue(q), nil
}

func (h handlers) listItems(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	status, err := q.OneOf("status", []string{controlplane.ItemPending, controlplane.ItemCompleted})
	if err != nil {
		return nil, err
	}
	list, total, err := h.store.ListAnnotationQueueItems(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"), status,
		page.Offset(), page.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Item, 0, len(list))
	for _, it := range list {
		out = append(out, toItem(it))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) createItem(r *http.Request) (any, error) {
	var req ItemRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	it, _, err := h.store.AddAnnotationQueueItem(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"), req.ObjectID,
		req.ObjectType, req.Status)
	if err != nil {
		return nil, err
	}
	return toItem(it), nil
}

func (h handlers) getItem(r *http.Request) (any, error) {
	it, err := h.store.GetAnnotationQueueItem(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"), r.PathValue("itemId"))
	if err != nil {
		return nil, err
	}
	return toItem(it), nil
}

// scoreNamespace derives annotation score ids from the item and config, so
// that scoring an item again replaces the reviewer's earlier score.
var scoreNamespace = uuid.MustParse("0b9c3d4e-2f61-4a7b-8c9d-1e2f3a4b5c6d")

func (h handlers) updateItem(r *http.Request) (any, error) {
	var req ItemUpdate
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	ctx, project := r.Context(), httpx.ProjectID(r)
	queue, err := h.store.GetAnnotationQueue(ctx, project, r.PathValue("queueId"))
	if err != nil {
		return nil, err
	}
	it, err := h.store.GetAnnotationQueueItem(ctx, project, queue.ID, r.PathValue("itemId"))
	if err != nil {
		return nil, err
	}
	status := req.Status
	if len(req.Scores) > 0 {
		if err := h.recordScores(ctx, project, queue, it, req); err != nil {
			return nil, err
		}
		if status == "" {
			status = controlplane.ItemCompleted
		}
	}
	if status == "" {
		return nil, httpx.BadRequest("status or scores is required")
	}
	it, err = h.store.SetAnnotationQueueItemStatus(ctx, project, queue.ID, it.ID, status, req.UserID)
	if err != nil {
		return nil, err
	}
	return toItem(it), nil
}

// recordScores validates every score against the queue's configs, then
// stores them all, aimed at the item's object.
func (h handlers) recordScores(ctx context.Context, project string, queue controlplane.AnnotationQueue, it controlplane.AnnotationQueueItem, req ItemUpdate) error {
	body := scores.Body{QueueID: queue.ID, Source: chstore.SourceAnnotation}
	switch it.ObjectType {
	case controlplane.ObjectTrace:
		body.TraceID = it.ObjectID
	case controlplane.ObjectSession:
		body.SessionID = it.ObjectID
	case controlplane.ObjectObservation:
		obs, err := h.traces.GetObservation(ctx, project, it.ObjectID)
		if errors.Is(err, chstore.ErrNotFound) {
			return httpx.NotFound("Observation %s of the item is not stored", it.ObjectID)
		}
		if err != nil {
			return err
		}
		body.TraceID, body.ObservationID, body.Environment = obs.TraceID, obs.ID, obs.Environment
	}
	now := h.now()
	out := make([]chstore.Score, 0, len(req.Scores))
	for i, s := range req.Scores {
		if !slices.Contains(queue.ScoreConfigIDs, s.ConfigID) {
			return httpx.BadRequest("scores[%d]: configId %q is not a score config of queue %q", i, s.ConfigID, queue.Name)
		}
		b := body
		b.ID = uuid.NewSHA1(scoreNamespace, []byte(it.ID+"\x00"+s.ConfigID)).String()
		b.ConfigID, b.Value, b.Comment = s.ConfigID, s.Value, s.Comment
		sc, err := h.builder.Build(ctx, project, b, now, []string{chstore.SourceAnnotation})
		if err != nil {
			var apiErr *httpx.Error
			if errors.As(err, &apiErr) {
				return &httpx.Error{Status: apiErr.Status, Name: apiErr.Name, Message: fmt.Sprintf("scores[%d]: %s", i, apiErr.Message)}
			}
			return err
		}
		sc.AuthorUserID = req.UserID
		out = append(out, sc)
	}
	return h.traces.InsertScores(ctx, out)
}

func (h handlers) deleteItem(r *http.Request) (any, error) {
	if err := h.store.DeleteAnnotationQueueItem(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"), r.PathValue("itemId")); err != nil {
		return nil, err
	}
	return Deletion{Success: true, Message: "Item removed from the annotation queue"}, nil
}

func (h handlers) listAssignments(r *http.Request) (any, error) {
	project, queue := httpx.ProjectID(r), r.PathValue("queueId")
	if _, err := h.store.GetAnnotationQueue(r.Context(), project, queue); err != nil {
		return nil, err
	}
	users, err := h.store.AnnotationQueueAssignees(r.Context(), project, queue)
	if err != nil {
		return nil, err
	}
	out := Assignments{Data: make([]Assignment, 0, len(users))}
	for _, u := range users {
		out.Data = append(out.Data, Assignment{UserID: u, QueueID: queue, ProjectID: project})
	}
	return out, nil
}

func (h handlers) assign(r *http.Request) (any, error) {
	var req AssignmentRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.UserID) == "" {
		return nil, httpx.BadRequest("userId is required")
	}
	project, queue := httpx.ProjectID(r), r.PathValue("queueId")
	if err := h.store.AssignAnnotationQueue(r.Context(), project, queue, req.UserID); err != nil {
		return nil, err
	}
	return Assignment{UserID: req.UserID, QueueID: queue, ProjectID: project}, nil
}

func (h handlers) unassign(r *http.Request) (any, error) {
	var req AssignmentRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if err := h.store.UnassignAnnotationQueue(r.Context(), httpx.ProjectID(r), r.PathValue("queueId"), req.UserID); err != nil {
		return nil, err
	}
	return Deletion{Success: true}, nil
}

func toQueue(q controlplane.AnnotationQueue) Queue {
	return Queue{ID: q.ID, Name: q.Name, Description: httpx.OptionalString(q.Description),
		ScoreConfigIDs: httpx.NonNil(q.ScoreConfigIDs), CreatedAt: httpx.FromTime(q.CreatedAt), UpdatedAt: httpx.FromTime(q.UpdatedAt)}
}

func toItem(it controlplane.AnnotationQueueItem) Item {
	return Item{ID: it.ID, QueueID: it.QueueID, ObjectID: it.ObjectID, ObjectType: it.ObjectType, Status: it.Status,
		CompletedAt: httpx.OptionalTime(it.CompletedAt), CreatedAt: httpx.FromTime(it.CreatedAt), UpdatedAt: httpx.FromTime(it.UpdatedAt)}
}
