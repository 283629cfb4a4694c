// Package admin serves the instance admin API of self-hosted Langfuse
// (/api/admin/...): the operator creates, changes and deletes
// organizations and their organization API keys, with the instance's admin
// API key as a bearer token. The router serves these routes only when that
// key is configured.
package admin // import "github.com/glassbox-dev/glassbox/apiserver/admin"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/projects"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes need from the control plane store.
type Store interface {
	projects.KeyCreator
	AddOrganization(ctx context.Context, n controlplane.NewOrganization) (controlplane.Organization, error)
	GetOrganization(ctx context.Context, orgID string) (controlplane.Organization, error)
	ListOrganizations(ctx context.Context) ([]controlplane.Organization, error)
	UpdateOrganization(ctx context.Context, orgID string, u controlplane.OrganizationUpdate) (controlplane.Organization, error)
	DeleteOrganization(ctx context.Context, orgID string) error
	ListProjects(ctx context.Context, orgID string) ([]controlplane.Project, error)
	ListAPIKeys(ctx context.Context, orgID, projectID string) ([]controlplane.APIKey, error)
	RevokeAPIKey(ctx context.Context, orgID, projectID, keyID string) error
}

// Organization is an organization with its live projects.
type Organization struct {
	ID        string                         `json:"id"`
	Name      string                         `json:"name"`
	CreatedAt httpx.Timestamp                `json:"createdAt"`
	Metadata  httpx.JSON                     `json:"metadata"`
	Projects  []projects.OrganizationProject `json:"projects"`
}

// Organizations is the body of GET /api/admin/organizations.
type Organizations struct {
	Organizations []Organization `json:"organizations"`
}

// OrganizationRequest is the body of POST /api/admin/organizations and of
// PUT /api/admin/organizations/{organizationId}; omitted metadata is kept
// by an update.
type OrganizationRequest struct {
	Name     string     `json:"name"`
	Metadata httpx.JSON `json:"metadata,omitempty"`
}

// DeletionResponse answers a deletion.
type DeletionResponse struct {
	Success bool `json:"success"`
}

type handlers struct {
	store Store
}

const tag = "Admin"

// Routes returns the admin routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/admin/organizations", Access: httpx.AdminKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "admin_organizations_list", Tag: tag, Response: Organizations{},
				Summary: "Every organization of the instance, with its projects."},
		},
		{
			Method: http.MethodPost, Path: "/api/admin/organizations", Access: httpx.AdminKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "admin_organizations_create", Tag: tag, Body: OrganizationRequest{}, Response: Organization{},
				Status: http.StatusCreated, Summary: "Create an organization."},
		},
		{
			Method: http.MethodGet, Path: "/api/admin/organizations/{organizationId}", Access: httpx.AdminKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "admin_organizations_get", Tag: tag, Response: Organization{},
				Summary: "One organization with its projects."},
		},
		{
			Method: http.MethodPut, Path: "/api/admin/organizations/{organizationId}", Access: httpx.AdminKey, Handler: h.update,
			Doc: httpx.Doc{OperationID: "admin_organizations_update", Tag: tag, Body: OrganizationRequest{}, Response: Organization{},
				Summary: "Rename an organization and, when given, replace its metadata."},
		},
		{
			Method: http.MethodDelete, Path: "/api/admin/organizations/{organizationId}", Access: httpx.AdminKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "admin_organizations_delete", Tag: tag, Response: DeletionResponse{},
				Summary: "Delete an organization that has no projects left; its API keys stop working and its members lose it."},
		},
		{
			Method: http.MethodGet, Path: "/api/admin/organizations/{organizationId}/apiKeys", Access: httpx.AdminKey, Handler: h.listKeys,
			Doc: httpx.Doc{OperationID: "admin_organizationApiKeys_list", Tag: tag, Response: projects.APIKeyList{},
				Summary: "The organization's own API keys (not its projects'), oldest first."},
		},
		{
			Method: http.MethodPost, Path: "/api/admin/organizations/{organizationId}/apiKeys", Access: httpx.AdminKey, Handler: h.createKey,
			Doc: httpx.Doc{OperationID: "admin_organizationApiKeys_create", Tag: tag, Body: projects.CreateAPIKeyRequest{},
				Response: projects.CreatedAPIKey{}, Status: http.StatusCreated,
				Summary: "Create an organization API key; its secret is in this answer only."},
		},
		{
			Method: http.MethodDelete, Path: "/api/admin/organizations/{organizationId}/apiKeys/{apiKeyId}", Access: httpx.AdminKey,
			Handler: h.revokeKey,
			Doc: httpx.Doc{OperationID: "admin_organizationApiKeys_delete", Tag: tag, Response: DeletionResponse{},
				Summary: "Revoke an organization API key."},
		},
	}
}

func (h handlers) list(r *http.Request) (any, error) {
	orgs, err := h.store.ListOrganizations(r.Context())
	if err != nil {
		return nil, err
	}
	out := Organizations{Organizations: make([]Organization, 0, len(orgs))}
	for _, o := range orgs {
		view, err := h.view(r.Context(), o)
		if err != nil {
			return nil, err
		}
		out.Organizations = append(out.Organizations, view)
	}
	return out, nil
}

func (h handlers) create(r *http.Request) (any, error) {
	var req OrganizationRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	o, err := h.store.AddOrganization(r.Context(), controlplane.NewOrganization{Name: req.Name, Metadata: json.RawMessage(req.Metadata)})
	if err != nil {
		return nil, err
	}
	view, err := h.view(r.Context(), o)
	if err != nil {
		return nil, err
	}
	return httpx.WithStatus(http.StatusCreated, view), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	o, err := h.store.GetOrganization(r.Context(), r.PathValue("organizationId"))
	if err != nil {
		return nil, organizationError(err)
	}
	return h.view(r.Context(), o)
}

func (h handlers) update(r *http.Request) (any, error) {
	var req OrganizationRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	o, err := h.store.UpdateOrganization(r.Context(), r.PathValue("organizationId"), controlplane.OrganizationUpdate{
		Name: &req.Name, Metadata: json.RawMessage(req.Metadata),
	})
	if err != nil {
		return nil, organizationError(err)
	}
	return h.view(r.Context(), o)
}

func (h handlers) delete(r *http.Request) (any, error) {
	err := h.store.DeleteOrganization(r.Context(), r.PathValue("organizationId"))
	if errors.Is(err, controlplane.ErrOrganizationHasProjects) {
		return nil, httpx.BadRequest("Cannot delete organization with existing projects: delete its projects first")
	}
	if err != nil {
		return nil, organizationError(err)
	}
	return DeletionResponse{Success: true}, nil
}

func (h handlers) listKeys(r *http.Request) (any, error) {
	org, err := h.organization(r)
	if err != nil {
		return nil, err
	}
	keys, err := h.store.ListAPIKeys(r.Context(), org, "")
	if err != nil {
		return nil, err
	}
	return projects.ToKeyList(keys), nil
}

func (h handlers) createKey(r *http.Request) (any, error) {
	return projects.CreateKey(r, h.store, r.PathValue("organizationId"), "", organizationError)
}

func (h handlers) revokeKey(r *http.Request) (any, error) {
	org, err := h.organization(r)
	if err != nil {
		return nil, err
	}
	// The organization's own keys only: a project's key is not found here.
	if err := h.store.RevokeAPIKey(r.Context(), org, "", r.PathValue("apiKeyId")); err != nil {
		return nil, httpx.NotFoundAs(err, "API key not found")
	}
	return DeletionResponse{Success: true}, nil
}

// organization returns the path's organization id once it names a live
// organization.
func (h handlers) organization(r *http.Request) (string, error) {
	id := r.PathValue("organizationId")
	if _, err := h.store.GetOrganization(r.Context(), id); err != nil {
		return "", organizationError(err)
	}
	return id, nil
}

func (h handlers) view(ctx context.Context, o controlplane.Organization) (Organization, error) {
	list, err := h.store.ListProjects(ctx, o.ID)
	if err != nil {
		return Organization{}, err
	}
	return Organization{
		ID: o.ID, Name: o.Name, CreatedAt: httpx.FromTime(o.CreatedAt), Metadata: projects.Metadata(o.Metadata),
		Projects: projects.ToOrganizationProjects(list),
	}, nil
}

// organizationError answers an unknown (or deleted) organization with 404;
// the router classifies the store's other errors.
func organizationError(err error) error {
	return httpx.NotFoundAs(err, "Organization not found")
}
