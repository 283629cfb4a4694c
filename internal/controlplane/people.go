package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// InviteMember makes the person with this email a member of the
// organization with role, creating a user without a password when the
// email is new. created tells the caller to hand out an invite link (or
// that the person signs in through SSO). A current member keeps their
// membership and gets ErrConflict: changing a role is SetMembership's job.
func (s *Store) InviteMember(ctx context.Context, orgID, email, name string, role Role) (u User, created bool, err error) {
	if err := checkRole(role); err != nil {
		return User{}, false, err
	}
	u, err = s.GetUserByEmail(ctx, email)
	if errors.Is(err, ErrNotFound) {
		u, err = s.CreateUser(ctx, NewUser{Email: email, Name: name})
		created = err == nil
		if errors.Is(err, ErrConflict) {
			u, err = s.GetUserByEmail(ctx, email)
		}
	}
	if err != nil {
		return User{}, false, err
	}
	now := s.micros()
	res, err := s.conn().exec(ctx, `INSERT INTO organization_memberships (org_id, user_id, role, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (org_id, user_id) DO NOTHING`, orgID, u.ID, string(role), now, now)
	if err != nil {
		return User{}, false, fmt.Errorf("invite %q to %q: %w", u.Email, orgID, classify(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return User{}, false, err
	} else if n == 0 {
		return u, false, fmt.Errorf("%w: %s is a member already", ErrConflict, u.Email)
	}
	return u, created || !u.HasPassword, nil
}

// CreateOrganizationWithOwner creates an organization whose first owner is
// the user, in one transaction, so no organization is ever without an owner.
func (s *Store) CreateOrganizationWithOwner(ctx context.Context, name, ownerID string) (Organization, error) {
	name, err := checkName("organization", name)
	if err != nil {
		return Organization{}, err
	}
	org := Organization{ID: uuid.NewString(), Name: name}
	now := s.micros()
	org.CreatedAt, org.UpdatedAt = fromMicros(now), fromMicros(now)
	err = s.inTx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `INSERT INTO organizations (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
			org.ID, name, now, now); err != nil {
			return fmt.Errorf("create organization: %w", classify(err))
		}
		if _, err := c.exec(ctx, `INSERT INTO organization_memberships (org_id, user_id, role, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?)`, org.ID, ownerID, string(RoleOwner), now, now); err != nil {
			return fmt.Errorf("make %q owner of the new organization: %w", ownerID, classify(err))
		}
		return nil
	})
	if err != nil {
		return Organization{}, err
	}
	return org, nil
}
