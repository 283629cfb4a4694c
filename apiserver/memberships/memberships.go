// Package memberships serves Langfuse's membership routes: who belongs to
// the organization of an organization key, and with which role, and the
// project-level roles. They follow the same rules as the web UI
// (internal/access): an organization key manages members as an ADMIN does,
// so it cannot create, change or remove owners (an owner does that in the
// UI), and an organization always keeps an owner.
package memberships // import "github.com/glassbox-dev/glassbox/apiserver/memberships"

import (
	"context"
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// KeyRole is the role an organization key acts with.
const KeyRole = controlplane.RoleAdmin

// Store is what the routes read and write.
type Store interface {
	ListMembers(ctx context.Context, orgID string) ([]controlplane.Membership, error)
	GetMembership(ctx context.Context, orgID, userID string) (controlplane.Membership, error)
	GetUser(ctx context.Context, userID string) (controlplane.User, error)
	SetMembership(ctx context.Context, orgID, userID string, role controlplane.Role) error
	RemoveMembership(ctx context.Context, orgID, userID string) error
	GetProject(ctx context.Context, orgID, projectID string) (controlplane.Project, error)
	SetProjectRole(ctx context.Context, orgID, projectID, userID string, role controlplane.Role) error
	RemoveProjectRole(ctx context.Context, orgID, projectID, userID string) error
}

// Membership is one member with their role.
type Membership struct {
	UserID string            `json:"userId"`
	Role   controlplane.Role `json:"role"`
	Email  string            `json:"email"`
	Name   string            `json:"name"`
}

// Memberships is the list answer.
type Memberships struct {
	Memberships []Membership `json:"memberships"`
}

// MembershipRequest creates or changes a membership.
type MembershipRequest struct {
	UserID string            `json:"userId"`
	Role   controlplane.Role `json:"role"`
}

// DeleteMembershipRequest removes one.
type DeleteMembershipRequest struct {
	UserID string `json:"userId"`
}

// DeletionResponse confirms a removal.
type DeletionResponse struct {
	Message string `json:"message"`
	UserID  string `json:"userId"`
}

type handlers struct{ store Store }

// Routes returns the membership routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	const org = httpx.OrganizationKey
	return []httpx.Route{
		{Method: http.MethodGet, Path: "/api/public/organizations/memberships", Access: org, Handler: h.listOrg,
			Doc: httpx.Doc{OperationID: "organizations_getOrganizationMemberships", Tag: "Organizations", Response: Memberships{},
				Summary: "The members of the key's organization and their roles (organization key)."}},
		{Method: http.MethodPut, Path: "/api/public/organizations/memberships", Access: org, Handler: h.putOrg,
			Doc: httpx.Doc{OperationID: "organizations_updateOrganizationMembership", Tag: "Organizations", Body: MembershipRequest{},
				Response: Membership{}, Summary: "Add a user to the organization or change their role; owners are managed in the UI (organization key)."}},
		{Method: http.MethodDelete, Path: "/api/public/organizations/memberships", Access: org, Handler: h.deleteOrg,
			Doc: httpx.Doc{OperationID: "organizations_deleteOrganizationMembership", Tag: "Organizations", Body: DeleteMembershipRequest{},
				Response: DeletionResponse{}, Summary: "Remove a user from the organization and its projects (organization key)."}},
		{Method: http.MethodGet, Path: "/api/public/projects/{projectId}/memberships", Access: org, Handler: h.listProject,
			Doc: httpx.Doc{OperationID: "organizations_getProjectMemberships", Tag: "Organizations", Response: Memberships{},
				Summary: "The project roles set in a project (organization key)."}},
		{Method: http.MethodPut, Path: "/api/public/projects/{projectId}/memberships", Access: org, Handler: h.putProject,
			Doc: httpx.Doc{OperationID: "organizations_updateProjectMembership", Tag: "Organizations", Body: MembershipRequest{},
				Response: Membership{}, Summary: "Give an organization member a role of their own in a project (organization key)."}},
		{Method: http.MethodDelete, Path: "/api/public/projects/{projectId}/memberships", Access: org, Handler: h.deleteProject,
			Doc: httpx.Doc{OperationID: "organizations_deleteProjectMembership", Tag: "Organizations", Body: DeleteMembershipRequest{},
				Response: DeletionResponse{}, Summary: "Drop a member's project role; the organization role applies again (organization key)."}},
	}
}

func orgOf(r *http.Request) string { return httpx.Principal(r.Context()).OrganizationID }

func (h handlers) listOrg(r *http.Request) (any, error) {
	ms, err := h.store.ListMembers(r.Context(), orgOf(r))
	if err != nil {
		return nil, err
	}
	out := Memberships{Memberships: []Membership{}}
	for _, m := range ms {
		out.Memberships = append(out.Memberships, Membership{UserID: m.UserID, Role: m.Role, Email: m.Email, Name: m.UserName})
	}
	return out, nil
}

// decode reads a membership request; role is required when withRole.
func decode(r *http.Request, withRole bool) (MembershipRequest, error) {
	var req MembershipRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return req, err
	}
	if req.UserID == "" {
		return req, httpx.BadRequest("Invalid request body: userId is required")
	}
	if withRole && !validRole(req.Role) {
		return req, httpx.BadRequest("Invalid request body: role must be one of OWNER, ADMIN, MEMBER, VIEWER")
	}
	return req, nil
}

func validRole(r controlplane.Role) bool {
	for _, x := range access.Roles() {
		if x == r {
			return true
		}
	}
	return false
}

// denied maps the access rules and the store's refusals to answers.
func denied(err error) error {
	switch {
	case errors.Is(err, access.ErrDenied):
		return httpx.Forbidden("An organization API key cannot grant, change or remove the OWNER role; an owner does that in the UI")
	case errors.Is(err, controlplane.ErrLastOwner):
		return httpx.BadRequest("The organization must keep at least one OWNER")
	}
	return err
}

func (h handlers) putOrg(r *http.Request) (any, error) {
	req, err := decode(r, true)
	if err != nil {
		return nil, err
	}
	ctx, org := r.Context(), orgOf(r)
	u, err := h.store.GetUser(ctx, req.UserID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return nil, httpx.NotFound("User not found")
	}
	if err != nil {
		return nil, err
	}
	if cur, err := h.store.GetMembership(ctx, org, req.UserID); err == nil {
		if err := access.CanGrant(KeyRole, cur.Role); err != nil {
			return nil, denied(err)
		}
	} else if !errors.Is(err, controlplane.ErrNotFound) {
		return nil, err
	}
	if err := access.CanGrant(KeyRole, req.Role); err != nil {
		return nil, denied(err)
	}
	if err := h.store.SetMembership(ctx, org, req.UserID, req.Role); err != nil {
		return nil, denied(err)
	}
	return Membership{UserID: u.ID, Role: req.Role, Email: u.Email, Name: u.Name}, nil
}

func (h handlers) deleteOrg(r *http.Request) (any, error) {
	req, err := decode(r, false)
	if err != nil {
		return nil, err
	}
	ctx, org := r.Context(), orgOf(r)
	cur, err := h.store.GetMembership(ctx, org, req.UserID)
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		// As in Langfuse: removing someone who is not a member succeeds.
		return DeletionResponse{Message: "Membership deleted successfully", UserID: req.UserID}, nil
	case err != nil:
		return nil, err
	}
	if err := access.CanGrant(KeyRole, cur.Role); err != nil {
		return nil, denied(err)
	}
	if err := h.store.RemoveMembership(ctx, org, req.UserID); err != nil && !errors.Is(err, controlplane.ErrNotFound) {
		return nil, denied(err)
	}
	return DeletionResponse{Message: "Membership deleted successfully", UserID: req.UserID}, nil
}

// project checks that the path's project belongs to the key's organization.
func (h handlers) project(r *http.Request) (string, error) {
	id := r.PathValue("projectId")
	_, err := h.store.GetProject(r.Context(), orgOf(r), id)
	if errors.Is(err, controlplane.ErrNotFound) {
		return "", httpx.NotFound("Project %s not found within authorized organization", id)
	}
	return id, err
}

func (h handlers) listProject(r *http.Request) (any, error) {
	project, err := h.project(r)
	if err != nil {
		return nil, err
	}
	ms, err := h.store.ListMembers(r.Context(), orgOf(r))
	if err != nil {
		return nil, err
	}
	out := Memberships{Memberships: []Membership{}}
	for _, m := range ms {
		if role, ok := m.ProjectRoles[project]; ok {
			out.Memberships = append(out.Memberships, Membership{UserID: m.UserID, Role: role, Email: m.Email, Name: m.UserName})
		}
	}
	return out, nil
}

func (h handlers) putProject(r *http.Request) (any, error) {
	project, err := h.project(r)
	if err != nil {
		return nil, err
	}
	req, err := decode(r, true)
	if err != nil {
		return nil, err
	}
	ctx, org := r.Context(), orgOf(r)
	m, err := h.store.GetMembership(ctx, org, req.UserID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return nil, httpx.NotFound("User is not a member of this organization")
	}
	if err != nil {
		return nil, err
	}
	if err := errors.Join(access.CanGrant(KeyRole, m.RoleIn(project)), access.CanGrant(KeyRole, req.Role)); err != nil {
		return nil, denied(err)
	}
	if err := h.store.SetProjectRole(ctx, org, project, req.UserID, req.Role); err != nil {
		return nil, err
	}
	return Membership{UserID: m.UserID, Role: req.Role, Email: m.Email, Name: m.UserName}, nil
}

func (h handlers) deleteProject(r *http.Request) (any, error) {
	project, err := h.project(r)
	if err != nil {
		return nil, err
	}
	req, err := decode(r, false)
	if err != nil {
		return nil, err
	}
	ctx, org := r.Context(), orgOf(r)
	m, err := h.store.GetMembership(ctx, org, req.UserID)
	if err != nil && !errors.Is(err, controlplane.ErrNotFound) {
		return nil, err
	}
	role, ok := m.ProjectRoles[project]
	if !ok {
		return nil, httpx.NotFound("Project membership not found")
	}
	if err := access.CanGrant(KeyRole, role); err != nil {
		return nil, denied(err)
	}
	if err := h.store.RemoveProjectRole(ctx, org, project, req.UserID); err != nil {
		return nil, err
	}
	return DeletionResponse{Message: "Project membership deleted successfully", UserID: req.UserID}, nil
}
