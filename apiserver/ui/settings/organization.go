package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type orgData struct {
	Org      controlplane.Organization
	Projects []controlplane.Project
	Members  []memberRow
	// InviteLink is shown once, right after an invitation that needs one.
	InviteLink, Invited string
	formState
}

type memberRow struct {
	controlplane.Membership
	// Grantable are the roles the viewer may give this member; empty when
	// the viewer may not change them at all.
	Grantable []controlplane.Role
	Self      bool
}

func (h *handlers) orgData(r *web.Request) (*orgData, error) {
	ctx := r.Context()
	org, err := h.store.GetOrganization(ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	ps, err := h.store.ListProjects(ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	d := &orgData{Org: org}
	for _, p := range ps {
		if access.Allows(r.Membership.RoleIn(p.ID), access.ProjectRead) {
			d.Projects = append(d.Projects, p)
		}
	}
	ms, err := h.store.ListMembers(ctx, r.Org.ID)
	if err != nil {
		return nil, err
	}
	d.Members = memberRows(r, ms, func(m controlplane.Membership) controlplane.Role { return m.Role })
	return d, nil
}

// memberRows lists members with the roles the viewer may give each, by
// the one rule in access.CanGrant.
func memberRows(r *web.Request, ms []controlplane.Membership, current func(controlplane.Membership) controlplane.Role) []memberRow {
	rows := make([]memberRow, 0, len(ms))
	for _, m := range ms {
		row := memberRow{Membership: m, Self: m.UserID == r.User.ID}
		if access.CanGrant(r.Role, current(m)) == nil {
			for _, role := range access.Roles() {
				if access.CanGrant(r.Role, role) == nil {
					row.Grantable = append(row.Grantable, role)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func (h *handlers) organization(r *web.Request) error {
	d, err := h.orgData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "organization", d)
}

func (h *handlers) orgFailed(r *web.Request, err error) error {
	return failed(h, r, err, "organization", h.orgData)
}

// saveOrganization renames the organization and sets the retention of its
// projects that set none.
func (h *handlers) saveOrganization(r *web.Request) error {
	name := r.PostFormValue("name")
	days, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("retention_days")))
	if err != nil {
		return h.orgFailed(r, fmt.Errorf("%w: retention days must be a whole number, 0 to keep data", controlplane.ErrInvalid))
	}
	if _, err := h.store.UpdateOrganization(r.Context(), r.Org.ID, controlplane.OrganizationUpdate{Name: &name, RetentionDays: &days}); err != nil {
		return h.orgFailed(r, err)
	}
	return r.Redirect(r.Path("organization", r.Org.ID) + "?saved=1")
}

func (h *handlers) createProject(r *web.Request) error {
	p, err := h.store.CreateProject(r.Context(), r.Org.ID, controlplane.NewProject{Name: r.PostFormValue("name")})
	if err != nil {
		return h.orgFailed(r, err)
	}
	return r.Redirect(r.Path("project", p.ID))
}

func (h *handlers) invite(r *web.Request) error {
	role := controlplane.Role(r.PostFormValue("role"))
	if err := access.CanGrant(r.Role, role); err != nil {
		return h.orgFailed(r, err)
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	u, needsLink, err := h.store.InviteMember(r.Context(), r.Org.ID, email, "", role)
	if err != nil {
		return h.orgFailed(r, err)
	}
	d, err := h.orgData(r)
	if err != nil {
		return err
	}
	d.Invited = u.Email
	if needsLink {
		token, err := h.store.CreateInviteLink(r.Context(), u.ID, inviteTTL)
		if err != nil {
			return err
		}
		d.InviteLink = r.App().Config().PublicURL + "/auth/invite/" + token
	}
	return r.Render(h.t, "organization", d)
}

// target is the membership a member form acts on, refused unless the
// viewer may change its current role.
func (h *handlers) target(r *web.Request) (controlplane.Membership, error) {
	m, err := h.store.GetMembership(r.Context(), r.Org.ID, r.PathValue("userId"))
	if err != nil {
		return m, err
	}
	return m, access.CanGrant(r.Role, m.Role)
}

func (h *handlers) setRole(r *web.Request) error {
	m, err := h.target(r)
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err == nil {
		role := controlplane.Role(r.PostFormValue("role"))
		if err = access.CanGrant(r.Role, role); err == nil {
			err = h.store.SetMembership(r.Context(), r.Org.ID, m.UserID, role)
		}
	}
	if err != nil {
		return h.orgFailed(r, err)
	}
	return r.Redirect(r.Path("organization", r.Org.ID))
}

func (h *handlers) removeMember(r *web.Request) error {
	m, err := h.target(r)
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err == nil {
		err = h.store.RemoveMembership(r.Context(), r.Org.ID, m.UserID)
	}
	if err != nil {
		return h.orgFailed(r, err)
	}
	if m.UserID == r.User.ID {
		return r.Redirect(r.Path())
	}
	return r.Redirect(r.Path("organization", r.Org.ID))
}
