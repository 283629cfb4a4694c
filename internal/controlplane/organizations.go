package controlplane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Organization owns projects, members and organization-scoped API keys.
type Organization struct {
	ID        string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CreateOrganization adds an organization. An empty id is generated.
func (s *Store) CreateOrganization(ctx context.Context, id, name string) (Organization, error) {
	if id == "" {
		id = uuid.NewString()
	}
	if err := checkID("organization", id); err != nil {
		return Organization{}, err
	}
	name, err := checkName("organization", name)
	if err != nil {
		return Organization{}, err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO organizations (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
		id, name, now, now); err != nil {
		return Organization{}, fmt.Errorf("create organization %q: %w", id, classify(err))
	}
	return Organization{ID: id, Name: name, CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now)}, nil
}

// GetOrganization returns one organization.
func (s *Store) GetOrganization(ctx context.Context, orgID string) (Organization, error) {
	o, err := scanOrganization(s.conn().queryRow(ctx, `SELECT `+organizationColumns+` FROM organizations WHERE id = ?`, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return Organization{}, fmt.Errorf("organization %q: %w", orgID, ErrNotFound)
	}
	if err != nil {
		return Organization{}, fmt.Errorf("get organization %q: %w", orgID, err)
	}
	return o, nil
}

// ListOrganizations returns every organization, by name. It serves the
// operator's admin command, never a client request.
func (s *Store) ListOrganizations(ctx context.Context) ([]Organization, error) {
	rows, err := s.conn().query(ctx, `SELECT `+organizationColumns+` FROM organizations ORDER BY name, id`)
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

const organizationColumns = `id, name, created_at, updated_at`

func scanOrganization(row interface{ Scan(...any) error }) (Organization, error) {
	var (
		o                    Organization
		createdAt, updatedAt int64
	)
	if err := row.Scan(&o.ID, &o.Name, &createdAt, &updatedAt); err != nil {
		return Organization{}, err
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return o, nil
}
