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
	var (
		o                    Organization
		createdAt, updatedAt int64
	)
	err := s.conn().queryRow(ctx, `SELECT id, name, created_at, updated_at FROM organizations WHERE id = ?`, orgID).
		Scan(&o.ID, &o.Name, &createdAt, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Organization{}, fmt.Errorf("organization %q: %w", orgID, ErrNotFound)
	}
	if err != nil {
		return Organization{}, fmt.Errorf("get organization %q: %w", orgID, err)
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return o, nil
}
