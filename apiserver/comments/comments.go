// Package comments serves Langfuse's comments API: remarks people leave on
// traces, observations, sessions and prompt versions, created and read by
// project key. The object a comment names must exist in the key's project.
package comments // import "github.com/glassbox-dev/glassbox/apiserver/comments"

import (
	"context"
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store keeps comments; *controlplane.Store implements it.
type Store interface {
	CreateComment(ctx context.Context, projectID string, n controlplane.NewComment) (controlplane.Comment, error)
	GetComment(ctx context.Context, projectID, id string) (controlplane.Comment, error)
	ListComments(ctx context.Context, projectID string, f controlplane.CommentFilter) ([]controlplane.Comment, int, error)
	PromptVersionExists(ctx context.Context, projectID, id string) (bool, error)
}

// Objects finds the traces, observations and sessions comments name;
// *chstore.Store implements it.
type Objects interface {
	GetTraceOutline(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	GetSession(ctx context.Context, projectID, sessionID string) (chstore.Session, error)
}

// Comment is a comment as the API shows it.
type Comment struct {
	ID           string          `json:"id"`
	ProjectID    string          `json:"projectId"`
	ObjectType   string          `json:"objectType"`
	ObjectID     string          `json:"objectId"`
	Content      string          `json:"content"`
	AuthorUserID *string         `json:"authorUserId"`
	CreatedAt    httpx.Timestamp `json:"createdAt"`
	UpdatedAt    httpx.Timestamp `json:"updatedAt"`
}

// CreateRequest is the body of POST /api/public/comments. projectId, when
// given, must be the key's project.
type CreateRequest struct {
	ProjectID    string `json:"projectId,omitempty"`
	ObjectType   string `json:"objectType"`
	ObjectID     string `json:"objectId"`
	Content      string `json:"content"`
	AuthorUserID string `json:"authorUserId,omitempty"`
}

// CreateResponse names the comment created.
type CreateResponse struct {
	ID string `json:"id"`
}

type handlers struct {
	store   Store
	objects Objects
}

// Routes returns the comment routes.
func Routes(store Store, objects Objects) []httpx.Route {
	h := handlers{store: store, objects: objects}
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/comments", Access: httpx.ProjectKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "comments_create", Tag: "Comments", Body: CreateRequest{}, Response: CreateResponse{},
				Summary: "Comment on a trace, an observation, a session or a prompt version of the project (at most 3000 characters)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/comments", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "comments_get", Tag: "Comments", Response: httpx.List[Comment]{},
				Query: append(httpx.PageParams, httpx.Param{Name: "objectType", Description: "TRACE, OBSERVATION, SESSION or PROMPT"},
					httpx.Param{Name: "objectId", Description: "needs objectType"}, httpx.Param{Name: "authorUserId"}),
				Summary: "The project's comments, oldest first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/comments/{commentId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "comments_get-by-id", Tag: "Comments", Response: Comment{}, Summary: "One comment."},
		},
	}
}

func (h handlers) create(r *http.Request) (any, error) {
	var req CreateRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	project := httpx.ProjectID(r)
	if req.ProjectID != "" && req.ProjectID != project {
		return nil, httpx.BadRequest("projectId %q is not the project of the API key", req.ProjectID)
	}
	if err := controlplane.CheckCommentObjectType(req.ObjectType); err != nil {
		return nil, err
	}
	if req.ObjectID == "" {
		return nil, httpx.BadRequest("objectId is required")
	}
	if err := h.exists(r.Context(), project, req.ObjectType, req.ObjectID); err != nil {
		return nil, err
	}
	c, err := h.store.CreateComment(r.Context(), project, controlplane.NewComment{ObjectType: req.ObjectType, ObjectID: req.ObjectID,
		Content: req.Content, AuthorUserID: req.AuthorUserID})
	if err != nil {
		return nil, err
	}
	return CreateResponse{ID: c.ID}, nil
}

// exists refuses a comment on an object the project does not have.
func (h handlers) exists(ctx context.Context, projectID, objectType, objectID string) error {
	var err error
	switch objectType {
	case controlplane.ObjectTrace:
		_, err = h.objects.GetTraceOutline(ctx, projectID, objectID)
	case controlplane.ObjectObservation:
		_, err = h.objects.GetObservation(ctx, projectID, objectID)
	case controlplane.ObjectSession:
		_, err = h.objects.GetSession(ctx, projectID, objectID)
	case controlplane.ObjectPrompt:
		ok, perr := h.store.PromptVersionExists(ctx, projectID, objectID)
		if perr != nil {
			return perr
		}
		if !ok {
			err = chstore.ErrNotFound
		}
	}
	if errors.Is(err, chstore.ErrNotFound) {
		return httpx.NotFound("%s %s not found in this project", objectType, objectID)
	}
	return err
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	f := controlplane.CommentFilter{ObjectType: q.String("objectType"), ObjectID: q.String("objectId"), AuthorUserID: q.String("authorUserId"),
		Offset: page.Offset(), Limit: page.Limit}
	if f.ObjectType != "" {
		if err := controlplane.CheckCommentObjectType(f.ObjectType); err != nil {
			return nil, err
		}
	}
	if f.ObjectID != "" && f.ObjectType == "" {
		return nil, httpx.BadRequest("objectId needs objectType")
	}
	list, total, err := h.store.ListComments(r.Context(), httpx.ProjectID(r), f)
	if err != nil {
		return nil, err
	}
	out := make([]Comment, 0, len(list))
	for _, c := range list {
		out = append(out, view(c))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	c, err := h.store.GetComment(r.Context(), httpx.ProjectID(r), r.PathValue("commentId"))
	if err != nil {
		return nil, err
	}
	return view(c), nil
}

func view(c controlplane.Comment) Comment {
	return Comment{ID: c.ID, ProjectID: c.ProjectID, ObjectType: c.ObjectType, ObjectID: c.ObjectID, Content: c.Content,
		AuthorUserID: httpx.OptionalString(c.AuthorUserID), CreatedAt: httpx.Timestamp(c.CreatedAt), UpdatedAt: httpx.Timestamp(c.UpdatedAt)}
}
