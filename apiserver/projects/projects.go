// Package projects serves the project routes: the key's own project for
// project keys (what the SDKs' auth check reads), and the management of an
// organization's projects and project API keys for organization keys.
package projects // import "github.com/glassbox-dev/glassbox/apiserver/projects"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes need from the control plane store.
type Store interface {
	GetProject(ctx context.Context, orgID, projectID string) (controlplane.Project, error)
	ListProjects(ctx context.Context, orgID string) ([]controlplane.Project, error)
	CreateProject(ctx context.Context, orgID string, p controlplane.NewProject) (controlplane.Project, error)
	UpdateProject(ctx context.Context, orgID, projectID string, u controlplane.ProjectUpdate) (controlplane.Project, error)
	DeleteProject(ctx context.Context, orgID, projectID string) error
	CreateAPIKey(ctx context.Context, orgID, projectID string, k controlplane.NewAPIKey) (controlplane.APIKey, string, error)
	ListAPIKeys(ctx context.Context, orgID, projectID string) ([]controlplane.APIKey, error)
	RevokeAPIKey(ctx context.Context, orgID, projectID, keyID string) error
}

// Organization is the organization a project belongs to.
type Organization struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Project is a project as GET /api/public/projects returns it.
type Project struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Organization Organization `json:"organization"`
	Metadata     httpx.JSON   `json:"metadata"`
	// RetentionDays is omitted when data is kept without limit.
	RetentionDays int `json:"retentionDays,omitempty"`
}

// Projects is the body of GET /api/public/projects.
type Projects struct {
	Data []Project `json:"data"`
}

// OrganizationProject is a project in an organization's project list.
type OrganizationProject struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Metadata  httpx.JSON      `json:"metadata"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
}

// OrganizationProjects is the body of GET /api/public/organizations/projects.
type OrganizationProjects struct {
	Projects []OrganizationProject `json:"projects"`
}

// APIKeySummary is the listable form of a key pair; the secret appears only
// in its display form.
type APIKeySummary struct {
	ID               string           `json:"id"`
	CreatedAt        httpx.Timestamp  `json:"createdAt"`
	LastUsedAt       *httpx.Timestamp `json:"lastUsedAt,omitempty"`
	Note             string           `json:"note,omitempty"`
	PublicKey        string           `json:"publicKey"`
	DisplaySecretKey string           `json:"displaySecretKey"`
}

// APIKeyList is the body of the API key lists.
type APIKeyList struct {
	APIKeys []APIKeySummary `json:"apiKeys"`
}

// CreatedAPIKey is the answer to a key creation: the only time the secret is shown.
type CreatedAPIKey struct {
	ID               string          `json:"id"`
	CreatedAt        httpx.Timestamp `json:"createdAt"`
	PublicKey        string          `json:"publicKey"`
	SecretKey        string          `json:"secretKey"`
	DisplaySecretKey string          `json:"displaySecretKey"`
	Note             string          `json:"note,omitempty"`
}

// CreateProjectRequest is the body of POST /api/public/projects.
type CreateProjectRequest struct {
	Name     string     `json:"name"`
	Metadata httpx.JSON `json:"metadata,omitempty"`
	// Retention is in days: 0 keeps data without limit, else at least 3.
	Retention int `json:"retention,omitempty"`
}

// UpdateProjectRequest is the body of PUT /api/public/projects/{projectId};
// omitted metadata and retention are kept.
type UpdateProjectRequest struct {
	Name      string     `json:"name"`
	Metadata  httpx.JSON `json:"metadata,omitempty"`
	Retention *int       `json:"retention,omitempty"`
}

// CreateAPIKeyRequest is the body of POST /api/public/projects/{projectId}/apiKeys.
// The key pair is generated unless both keys are given.
type CreateAPIKeyRequest struct {
	Note      string `json:"note,omitempty"`
	PublicKey string `json:"publicKey,omitempty"`
	SecretKey string `json:"secretKey,omitempty"`
}

// DeletionResponse answers a deletion.
type DeletionResponse struct {
	Success bool   `json:"success"`
	Message string `json:"message,omitempty"`
}

type handlers struct {
	store Store
}

// Routes returns the project and organization management routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/projects", Access: httpx.ProjectKey, Handler: h.own,
			Doc: httpx.Doc{OperationID: "projects_get", Tag: "Projects", Response: Projects{},
				Summary: "The project of the API key (the SDKs' auth check)."},
		},
		{
			Method: http.MethodPost, Path: "/api/public/projects", Access: httpx.OrganizationKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "projects_create", Tag: "Projects", Body: CreateProjectRequest{},
				Response: Project{}, Status: http.StatusCreated,
				Summary: "Create a project in the key's organization (organization key)."},
		},
		{
			Method: http.MethodPut, Path: "/api/public/projects/{projectId}", Access: httpx.OrganizationKey, Handler: h.update,
			Doc: httpx.Doc{OperationID: "projects_update", Tag: "Projects", Body: UpdateProjectRequest{}, Response: Project{},
				Summary: "Rename a project or change its metadata or retention (organization key)."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/projects/{projectId}", Access: httpx.OrganizationKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "projects_delete", Tag: "Projects", Response: DeletionResponse{},
				Summary: "Delete a project and revoke its API keys (organization key)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/projects/{projectId}/apiKeys", Access: httpx.OrganizationKey, Handler: h.listKeys,
			Doc: httpx.Doc{OperationID: "projects_getApiKeys", Tag: "Projects", Response: APIKeyList{},
				Summary: "The unrevoked API keys of a project (organization key)."},
		},
		{
			Method: http.MethodPost, Path: "/api/public/projects/{projectId}/apiKeys", Access: httpx.OrganizationKey, Handler: h.createKey,
			Doc: httpx.Doc{OperationID: "projects_createApiKey", Tag: "Projects", Body: CreateAPIKeyRequest{},
				Response: CreatedAPIKey{}, Status: http.StatusCreated,
				Summary: "Create an API key pair for a project; the secret is shown only in this response (organization key)."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/projects/{projectId}/apiKeys/{apiKeyId}", Access: httpx.OrganizationKey,
			Handler: h.revokeKey,
			Doc: httpx.Doc{OperationID: "projects_deleteApiKey", Tag: "Projects", Response: DeletionResponse{},
				Summary: "Revoke an API key of a project (organization key)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/organizations/projects", Access: httpx.OrganizationKey, Handler: h.orgProjects,
			Doc: httpx.Doc{OperationID: "organizations_getOrganizationProjects", Tag: "Organizations", Response: OrganizationProjects{},
				Summary: "The projects of the key's organization (organization key)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/organizations/apiKeys", Access: httpx.OrganizationKey, Handler: h.orgKeys,
			Doc: httpx.Doc{OperationID: "organizations_getOrganizationApiKeys", Tag: "Organizations", Response: APIKeyList{},
				Summary: "The organization-scoped API keys of the key's organization (organization key)."},
		},
	}
}

func (h handlers) own(r *http.Request) (any, error) {
	p := httpx.Principal(r.Context())
	project, err := h.store.GetProject(r.Context(), p.OrganizationID, p.ProjectID)
	if err != nil {
		return nil, storeError(err, "Project "+p.ProjectID)
	}
	return Projects{Data: []Project{toProject(project)}}, nil
}

func (h handlers) create(r *http.Request) (any, error) {
	var req CreateProjectRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if err := checkRetention(req.Retention); err != nil {
		return nil, err
	}
	org := httpx.Principal(r.Context()).OrganizationID
	project, err := h.store.CreateProject(r.Context(), org, controlplane.NewProject{
		Name: req.Name, Metadata: json.RawMessage(req.Metadata), RetentionDays: req.Retention,
	})
	if err != nil {
		return nil, storeError(err, "Project "+req.Name)
	}
	return httpx.WithStatus(http.StatusCreated, toProject(project)), nil
}

func (h handlers) update(r *http.Request) (any, error) {
	var req UpdateProjectRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Retention != nil {
		if err := checkRetention(*req.Retention); err != nil {
			return nil, err
		}
	}
	id := r.PathValue("projectId")
	org := httpx.Principal(r.Context()).OrganizationID
	project, err := h.store.UpdateProject(r.Context(), org, id, controlplane.ProjectUpdate{
		Name: &req.Name, Metadata: json.RawMessage(req.Metadata), RetentionDays: req.Retention,
	})
	if err != nil {
		return nil, storeError(err, "Project "+id)
	}
	return toProject(project), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	id := r.PathValue("projectId")
	if err := h.store.DeleteProject(r.Context(), httpx.Principal(r.Context()).OrganizationID, id); err != nil {
		return nil, storeError(err, "Project "+id)
	}
	return DeletionResponse{Success: true, Message: "Project deleted and its API keys revoked"}, nil
}

func (h handlers) listKeys(r *http.Request) (any, error) {
	id := r.PathValue("projectId")
	org := httpx.Principal(r.Context()).OrganizationID
	// An unknown project is a 404, not an empty list.
	if _, err := h.store.GetProject(r.Context(), org, id); err != nil {
		return nil, storeError(err, "Project "+id)
	}
	keys, err := h.store.ListAPIKeys(r.Context(), org, id)
	if err != nil {
		return nil, err
	}
	return ToKeyList(keys), nil
}

func (h handlers) createKey(r *http.Request) (any, error) {
	id := r.PathValue("projectId")
	return CreateKey(r, h.store, httpx.Principal(r.Context()).OrganizationID, id,
		func(err error) error { return storeError(err, "Project "+id) })
}

// KeyCreator creates API keys.
type KeyCreator interface {
	CreateAPIKey(ctx context.Context, orgID, projectID string, k controlplane.NewAPIKey) (controlplane.APIKey, string, error)
}

// CreateKey serves a key creation, for a project of the organization or,
// when projectID is empty, for the organization itself: it reads a
// CreateAPIKeyRequest and answers 201 with the secret, shown this once and
// stored only hashed. notFound turns the store's other errors (an unknown
// owner) into the route's own.
func CreateKey(r *http.Request, store KeyCreator, orgID, projectID string, notFound func(error) error) (any, error) {
	var req CreateAPIKeyRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if (req.PublicKey == "") != (req.SecretKey == "") {
		return nil, httpx.BadRequest("publicKey and secretKey must be given together or not at all")
	}
	key, secret, err := store.CreateAPIKey(r.Context(), orgID, projectID,
		controlplane.NewAPIKey{Note: req.Note, PublicKey: req.PublicKey, SecretKey: req.SecretKey})
	if err != nil {
		if errors.Is(err, controlplane.ErrConflict) {
			return nil, httpx.Conflict("An API key with this public or secret key already exists")
		}
		return nil, notFound(err)
	}
	return httpx.WithStatus(http.StatusCreated, CreatedAPIKey{
		ID:               key.ID,
		CreatedAt:        httpx.FromTime(key.CreatedAt),
		PublicKey:        key.PublicKey,
		SecretKey:        secret,
		DisplaySecretKey: key.DisplaySecret,
		Note:             key.Note,
	}), nil
}

func (h handlers) revokeKey(r *http.Request) (any, error) {
	project, keyID := r.PathValue("projectId"), r.PathValue("apiKeyId")
	err := h.store.RevokeAPIKey(r.Context(), httpx.Principal(r.Context()).OrganizationID, project, keyID)
	if err != nil {
		return nil, storeError(err, "API key "+keyID)
	}
	return DeletionResponse{Success: true}, nil
}

func (h handlers) orgProjects(r *http.Request) (any, error) {
	list, err := h.store.ListProjects(r.Context(), httpx.Principal(r.Context()).OrganizationID)
	if err != nil {
		return nil, err
	}
	return OrganizationProjects{Projects: ToOrganizationProjects(list)}, nil
}

// ToOrganizationProjects shapes an organization's projects for its lists.
func ToOrganizationProjects(list []controlplane.Project) []OrganizationProject {
	out := make([]OrganizationProject, 0, len(list))
	for _, p := range list {
		out = append(out, OrganizationProject{
			ID: p.ID, Name: p.Name, Metadata: Metadata(p.Metadata),
			CreatedAt: httpx.FromTime(p.CreatedAt), UpdatedAt: httpx.FromTime(p.UpdatedAt),
		})
	}
	return out
}

func (h handlers) orgKeys(r *http.Request) (any, error) {
	keys, err := h.store.ListAPIKeys(r.Context(), httpx.Principal(r.Context()).OrganizationID, "")
	if err != nil {
		return nil, err
	}
	return ToKeyList(keys), nil
}

func checkRetention(days int) error {
	if err := controlplane.CheckRetention(days); err != nil {
		return httpx.BadRequest("Invalid retention: %s", strings.TrimPrefix(err.Error(), controlplane.ErrInvalid.Error()+": "))
	}
	return nil
}

// storeError maps the store's error kinds to API errors; what names the
// addressed object in a 404.
func storeError(err error, what string) error {
	return httpx.StoreErrorAs(err, func(v *httpx.Error) string {
		switch v.Status {
		case http.StatusNotFound:
			return what + " not found within authorized organization"
		case http.StatusConflict:
			return what + " conflicts with an existing one (names are unique within an organization)"
		}
		return v.Message
	})
}

func toProject(p controlplane.Project) Project {
	return Project{
		ID:            p.ID,
		Name:          p.Name,
		Organization:  Organization{ID: p.OrganizationID, Name: p.OrganizationName},
		Metadata:      Metadata(p.Metadata),
		RetentionDays: p.RetentionDays,
	}
}

// Metadata is stored metadata as answered: `{}` when there is none.
func Metadata(raw json.RawMessage) httpx.JSON {
	if len(raw) == 0 {
		return httpx.JSON("{}")
	}
	return httpx.JSON(raw)
}

// ToKeyList shapes API keys for the key lists; secrets appear only in
// their display form.
func ToKeyList(keys []controlplane.APIKey) APIKeyList {
	out := APIKeyList{APIKeys: make([]APIKeySummary, 0, len(keys))}
	for _, k := range keys {
		out.APIKeys = append(out.APIKeys, APIKeySummary{
			ID:               k.ID,
			CreatedAt:        httpx.FromTime(k.CreatedAt),
			LastUsedAt:       httpx.OptionalTime(k.LastUsedAt),
			Note:             k.Note,
			PublicKey:        k.PublicKey,
			DisplaySecretKey: k.DisplaySecret,
		})
	}
	return out
}
