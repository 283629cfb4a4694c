package settings

import (
	"errors"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type projectMembersData struct {
	Tabs    []web.Tab
	Members []projectMemberRow
	formState
}

type projectMemberRow struct {
	memberRow
	// Effective is the role in this project; Override the project role, if
	// one is set.
	Effective, Override controlplane.Role
}

func (h *handlers) projectMembersData(r *web.Request) (*projectMembersData, error) {
	ms, err := h.store.ListMembers(r.Context(), r.Org.ID)
	if err != nil {
		return nil, err
	}
	p := r.Project.ID
	rows := memberRows(r, ms, func(m controlplane.Membership) controlplane.Role { return m.RoleIn(p) })
	d := &projectMembersData{Tabs: tabs(r, "members")}
	for _, row := range rows {
		if !r.Can(access.ProjectMembersManage) {
			row.Grantable = nil
		}
		d.Members = append(d.Members, projectMemberRow{memberRow: row, Effective: row.RoleIn(p), Override: row.ProjectRoles[p]})
	}
	return d, nil
}

func (h *handlers) projectMembers(r *web.Request) error {
	d, err := h.projectMembersData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "members", d)
}

// setProjectRole sets a member's role in this project, or with role=""
// lets their organization role apply again.
func (h *handlers) setProjectRole(r *web.Request) error {
	ctx := r.Context()
	m, err := h.store.GetMembership(ctx, r.Org.ID, r.PathValue("userId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	role := controlplane.Role(r.PostFormValue("role"))
	err = access.CanGrant(r.Role, m.RoleIn(r.Project.ID))
	switch {
	case err != nil:
	case role == "":
		if _, set := m.ProjectRoles[r.Project.ID]; set {
			err = h.store.RemoveProjectRole(ctx, r.Org.ID, r.Project.ID, m.UserID)
		}
	default:
		if err = access.CanGrant(r.Role, role); err == nil {
			err = h.store.SetProjectRole(ctx, r.Org.ID, r.Project.ID, m.UserID, role)
		}
	}
	if err != nil {
		return failed(h, r, err, "members", h.projectMembersData)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "members"))
}
