package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Organization owns projects, members and organization-scoped API keys.
type Organization struct {
	ID       string
	Name     string
	Metadata json.RawMessage // a JSON object, `{}` when none was given
	// RetentionDays applies to the projects that set none; 0 defers to the
	// instance default.
	RetentionDays int
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// NewOrganization is the input of AddOrganization.
type NewOrganization struct {
	ID       string // generated when empty
	Name     string
	Metadata json.RawMessage // optional JSON object
}

// OrganizationUpdate changes the fields that are set and keeps the others.
type OrganizationUpdate struct {
	Name          *string
	Metadata      json.RawMessage // nil keeps the stored metadata
	RetentionDays *int
}

// CreateOrganization adds an organization without metadata. An empty id is
// generated.
func (s *Store) CreateOrganization(ctx context.Context, id, name string) (Organization, error) {
	return s.AddOrganization(ctx, NewOrganization{ID: id, Name: name})
}

// AddOrganization adds an organization.
func (s *Store) AddOrganization(ctx context.Context, n NewOrganization) (Organization, error) {
	if n.ID == "" {
		n.ID = uuid.NewString()
	}
	if err := checkID("organization", n.ID); err != nil {
		return Organization{}, err
	}
	name, err := checkName("organization", n.Name)
	if err != nil {
		return Organization{}, err
	}
	metadata, err := normalizeMetadata(n.Metadata)
	if err != nil {
		return Organization{}, err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO organizations (id, name, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		n.ID, name, string(metadata), now, now); err != nil {
		return Organization{}, fmt.Errorf("create organization %q: %w", n.ID, classify(err))
	}
	return Organization{ID: n.ID, Name: name, Metadata: metadata, CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now)}, nil
}

// GetOrganization returns one live organization.
func (s *Store) GetOrganization(ctx context.Context, orgID string) (Organization, error) {
	o, err := scanOrganization(s.conn().queryRow(ctx, `SELECT `+organizationColumns+` FROM organizations
		WHERE id = ? AND deleted_at IS NULL`, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return Organization{}, fmt.Errorf("organization %q: %w", orgID, ErrNotFound)
	}
	if err != nil {
		return Organization{}, fmt.Errorf("get organization %q: %w", orgID, err)
	}
	return o, nil
}

// ListOrganizations returns every live organization, by name. It serves
// the operator (the admin command and the admin API), never a tenant.
func (s *Store) ListOrganizations(ctx context.Context) ([]Organization, error) {
	rows, err := s.conn().query(ctx, `SELECT `+organizationColumns+` FROM organizations
		WHERE deleted_at IS NULL ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	defer rows.Close()
	var orgs []Organization
	for rows.Next() {
		o, err := scanOrganization(rows)
		if err != nil {
			return nil, fmt.Errorf("list organizations: %w", err)
		}
		orgs = append(orgs, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list organizations: %w", err)
	}
	return orgs, nil
}

// UpdateOrganization changes a live organization.
func (s *Store) UpdateOrganization(ctx context.Context, orgID string, u OrganizationUpdate) (Organization, error) {
	current, err := s.GetOrganization(ctx, orgID)
	if err != nil {
		return Organization{}, err
	}
	name, metadata, retention := current.Name, current.Metadata, current.RetentionDays
	if u.RetentionDays != nil {
		if err := CheckRetention(*u.RetentionDays); err != nil {
			return Organization{}, err
		}
		retention = *u.RetentionDays
	}
	if u.Name != nil {
		if name, err = checkName("organization", *u.Name); err != nil {
			return Organization{}, err
		}
	}
	if u.Metadata != nil {
		if metadata, err = normalizeMetadata(u.Metadata); err != nil {
			return Organization{}, err
		}
	}
	res, err := s.conn().exec(ctx, `UPDATE organizations SET name = ?, metadata = ?, retention_days = ?, updated_at = ?
		WHERE id = ? AND deleted_at IS NULL`, name, string(metadata), retention, s.micros(), orgID)
	if err != nil {
		return Organization{}, fmt.Errorf("update organization %q: %w", orgID, err)
	}
	if err := requireOne(res, fmt.Sprintf("organization %q", orgID)); err != nil {
		return Organization{}, err
	}
	if retention != current.RetentionDays {
		s.changed(ctx, ChangeRetention)
	}
	return s.GetOrganization(ctx, orgID)
}

// ErrOrganizationHasProjects refuses to delete an organization that still
// has live projects: they are deleted (or moved) first.
var ErrOrganizationHasProjects = fmt.Errorf("%w: the organization still has projects; delete them first", ErrInvalid)

// DeleteOrganization marks an organization without live projects deleted,
// and in the same transaction revokes every key of it (its own and any of
// its projects') and removes its memberships, so nothing of it verifies or
// lists afterwards.
func (s *Store) DeleteOrganization(ctx context.Context, orgID string) error {
	err := s.inTx(ctx, func(c conn) error {
		now := s.micros()
		res, err := c.exec(ctx, `UPDATE organizations SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL`,
			now, now, orgID)
		if err != nil {
			return fmt.Errorf("delete organization %q: %w", orgID, err)
		}
		if err := requireOne(res, fmt.Sprintf("organization %q", orgID)); err != nil {
			return err
		}
		var live int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM projects WHERE org_id = ? AND deleted_at IS NULL`, orgID).
			Scan(&live); err != nil {
			return fmt.Errorf("count projects of %q: %w", orgID, err)
		}
		if live > 0 {
			return ErrOrganizationHasProjects
		}
		if _, err := c.exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND revoked_at IS NULL`, now, orgID); err != nil {
			return fmt.Errorf("revoke keys of organization %q: %w", orgID, err)
		}
		if _, err := c.exec(ctx, `DELETE FROM organization_memberships WHERE org_id = ?`, orgID); err != nil {
			return fmt.Errorf("remove members of organization %q: %w", orgID, err)
		}
		return nil
	})
	return s.changedIf(ctx, err, ChangeAPIKeys)
}

const organizationColumns = `id, name, metadata, retention_days, created_at, updated_at`

func scanOrganization(row interface{ Scan(...any) error }) (Organization, error) {
	var (
		o                    Organization
		metadata             string
		createdAt, updatedAt int64
	)
	if err := row.Scan(&o.ID, &o.Name, &metadata, &o.RetentionDays, &createdAt, &updatedAt); err != nil {
		return Organization{}, err
	}
	o.Metadata = json.RawMessage(metadata)
	o.CreatedAt, o.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return o, nil
}
