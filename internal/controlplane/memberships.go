package controlplane

import (
	"context"
	"fmt"
	"time"
)

// Role is a member's permission level, highest first.
type Role string

const (
	RoleOwner  Role = "OWNER"
	RoleAdmin  Role = "ADMIN"
	RoleMember Role = "MEMBER"
	RoleViewer Role = "VIEWER"
)

func checkRole(r Role) error {
	switch r {
	case RoleOwner, RoleAdmin, RoleMember, RoleViewer:
		return nil
	}
	return fmt.Errorf("%w: role %q is not one of OWNER, ADMIN, MEMBER, VIEWER", ErrInvalid, r)
}

// Membership is a user's place in an organization.
type Membership struct {
	OrganizationID   string
	OrganizationName string
	UserID           string
	Email            string
	UserName         string
	Role             Role
	// ProjectRoles replace Role inside the listed projects (project id -> role).
	ProjectRoles map[string]Role
	CreatedAt    time.Time
}

// RoleIn is the member's role inside one project of the organization.
func (m Membership) RoleIn(projectID string) Role {
	if r, ok := m.ProjectRoles[projectID]; ok {
		return r
	}
	return m.Role
}

// ErrLastOwner refuses a change that would leave an organization without
// an owner.
var ErrLastOwner = fmt.Errorf("%w: an organization keeps at least one OWNER", ErrInvalid)

// SetMembership adds the user to the organization or changes their role.
// The last owner cannot be demoted.
func (s *Store) SetMembership(ctx context.Context, orgID, userID string, role Role) error {
	if err := checkRole(role); err != nil {
		return err
	}
	return s.inTx(ctx, func(c conn) error {
		if role != RoleOwner {
			if err := keepOwner(ctx, c, orgID, userID); err != nil {
				return err
			}
		}
		now := s.micros()
		if _, err := c.exec(ctx, `INSERT INTO organization_memberships (org_id, user_id, role, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at`,
			orgID, userID, string(role), now, now); err != nil {
			return fmt.Errorf("set membership of %q in %q: %w", userID, orgID, classify(err))
		}
		return nil
	})
}

// RemoveMembership removes the user from the organization and from its
// projects. The last owner cannot be removed.
func (s *Store) RemoveMembership(ctx context.Context, orgID, userID string) error {
	return s.inTx(ctx, func(c conn) error {
		if err := keepOwner(ctx, c, orgID, userID); err != nil {
			return err
		}
		res, err := c.exec(ctx, `DELETE FROM organization_memberships WHERE org_id = ? AND user_id = ?`, orgID, userID)
		if err != nil {
			return fmt.Errorf("remove membership of %q in %q: %w", userID, orgID, err)
		}
		return requireOne(res, fmt.Sprintf("membership of %q in %q", userID, orgID))
	})
}

// keepOwner fails when userID is the organization's only owner, before
// their owner role is taken away.
func keepOwner(ctx context.Context, c conn, orgID, userID string) error {
	var owners, isOwner int
	if err := c.queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN user_id = ? THEN 1 ELSE 0 END), 0)
		FROM organization_memberships WHERE org_id = ? AND role = 'OWNER'`, userID, orgID).Scan(&owners, &isOwner); err != nil {
		return fmt.Errorf("count owners of %q: %w", orgID, err)
	}
	if isOwner == 1 && owners == 1 {
		return ErrLastOwner
	}
	return nil
}

// SetProjectRole gives an organization member a role of its own inside one
// live project of that organization.
func (s *Store) SetProjectRole(ctx context.Context, orgID, projectID, userID string, role Role) error {
	if err := checkRole(role); err != nil {
		return err
	}
	if _, err := s.GetProject(ctx, orgID, projectID); err != nil {
		return err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO project_memberships (project_id, org_id, user_id, role, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at`,
		projectID, orgID, userID, string(role), now, now); err != nil {
		return fmt.Errorf("set role of %q in project %q: %w", userID, projectID, classify(err))
	}
	return nil
}

// RemoveProjectRole drops a member's project role; the organization role
// applies in that project again.
func (s *Store) RemoveProjectRole(ctx context.Context, orgID, projectID, userID string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM project_memberships WHERE org_id = ? AND project_id = ? AND user_id = ?`,
		orgID, projectID, userID)
	if err != nil {
		return fmt.Errorf("remove role of %q in project %q: %w", userID, projectID, err)
	}
	return requireOne(res, fmt.Sprintf("role of %q in project %q", userID, projectID))
}

// GetMembership returns one user's membership in one organization.
func (s *Store) GetMembership(ctx context.Context, orgID, userID string) (Membership, error) {
	ms, err := s.memberships(ctx, `m.org_id = ? AND m.user_id = ?`, `m.org_id`, orgID, userID)
	if err != nil {
		return Membership{}, err
	}
	if len(ms) == 0 {
		return Membership{}, fmt.Errorf("membership of %q in %q: %w", userID, orgID, ErrNotFound)
	}
	return ms[0], nil
}

// ListMembers returns the organization's members ordered by email.
func (s *Store) ListMembers(ctx context.Context, orgID string) ([]Membership, error) {
	return s.memberships(ctx, `m.org_id = ?`, `u.email`, orgID)
}

// ListUserMemberships returns the organizations a user belongs to, ordered
// by organization name.
func (s *Store) ListUserMemberships(ctx context.Context, userID string) ([]Membership, error) {
	return s.memberships(ctx, `m.user_id = ?`, `o.name, m.org_id`, userID)
}

// memberships loads memberships and their project roles; project roles of
// deleted projects are left out.
func (s *Store) memberships(ctx context.Context, where, orderBy string, args ...any) ([]Membership, error) {
	c := s.conn()
	rows, err := c.query(ctx, `SELECT m.org_id, o.name, m.user_id, u.email, u.name, m.role, m.created_at
		FROM organization_memberships m
		JOIN organizations o ON o.id = m.org_id AND o.deleted_at IS NULL
		JOIN users u ON u.id = m.user_id
		WHERE `+where+` ORDER BY `+orderBy, args...)
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	var out []Membership
	index := map[[2]string]int{}
	for rows.Next() {
		var (
			m         Membership
			role      string
			createdAt int64
		)
		if err := rows.Scan(&m.OrganizationID, &m.OrganizationName, &m.UserID, &m.Email, &m.UserName, &role, &createdAt); err != nil {
			_ = rows.Close() // the scan error is the one to report
			return nil, fmt.Errorf("list memberships: %w", err)
		}
		m.Role, m.CreatedAt = Role(role), fromMicros(createdAt)
		index[[2]string{m.OrganizationID, m.UserID}] = len(out)
		out = append(out, m)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}

	rows, err = c.query(ctx, `SELECT pm.org_id, pm.user_id, pm.project_id, pm.role
		FROM project_memberships pm
		JOIN organization_memberships m ON m.org_id = pm.org_id AND m.user_id = pm.user_id
		JOIN projects p ON p.id = pm.project_id AND p.deleted_at IS NULL
		WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list project roles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var orgID, userID, projectID, role string
		if err := rows.Scan(&orgID, &userID, &projectID, &role); err != nil {
			return nil, fmt.Errorf("list project roles: %w", err)
		}
		m := &out[index[[2]string{orgID, userID}]]
		if m.ProjectRoles == nil {
			m.ProjectRoles = map[string]Role{}
		}
		m.ProjectRoles[projectID] = Role(role)
	}
	return out, rows.Err()
}
