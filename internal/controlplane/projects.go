package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Project is the unit of tenancy for trace data: every project key, query
// and stored row belongs to exactly one project.
type Project struct {
	ID               string
	OrganizationID   string
	OrganizationName string
	Name             string
	Metadata         json.RawMessage // a JSON object, `{}` when none was given
	RetentionDays    int             // 0 keeps data without limit
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// NewProject is the input of CreateProject.
type NewProject struct {
	ID            string // generated when empty
	Name          string
	Metadata      json.RawMessage // optional JSON object
	RetentionDays int
}

// ProjectUpdate changes the fields that are set and keeps the others.
type ProjectUpdate struct {
	Name          *string
	Metadata      json.RawMessage // nil keeps the stored metadata
	RetentionDays *int
}

const projectColumns = `p.id, p.org_id, o.name, p.name, p.metadata, p.retention_days, p.created_at, p.updated_at`

// CreateProject adds a project to an organization. Names are unique among
// the organization's live projects.
func (s *Store) CreateProject(ctx context.Context, orgID string, p NewProject) (Project, error) {
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	if err := checkID("project", p.ID); err != nil {
		return Project{}, err
	}
	name, err := checkName("project", p.Name)
	if err != nil {
		return Project{}, err
	}
	metadata, err := normalizeMetadata(p.Metadata)
	if err != nil {
		return Project{}, err
	}
	if err := CheckRetention(p.RetentionDays); err != nil {
		return Project{}, err
	}
	// A deleted organization's row is still there for the foreign key.
	if _, err := s.GetOrganization(ctx, orgID); err != nil {
		return Project{}, err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO projects (id, org_id, name, metadata, retention_days, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, p.ID, orgID, name, string(metadata), p.RetentionDays, now, now); err != nil {
		return Project{}, fmt.Errorf("create project %q in organization %q: %w", p.ID, orgID, classify(err))
	}
	return s.GetProject(ctx, orgID, p.ID)
}

// GetProject returns a live project of the organization.
func (s *Store) GetProject(ctx context.Context, orgID, projectID string) (Project, error) {
	row := s.conn().queryRow(ctx, `SELECT `+projectColumns+`
		FROM projects p JOIN organizations o ON o.id = p.org_id AND o.deleted_at IS NULL
		WHERE p.org_id = ? AND p.id = ? AND p.deleted_at IS NULL`, orgID, projectID)
	p, err := scanProject(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, fmt.Errorf("project %q in organization %q: %w", projectID, orgID, ErrNotFound)
	}
	if err != nil {
		return Project{}, fmt.Errorf("get project %q: %w", projectID, err)
	}
	return p, nil
}

// LookupProject returns a live project by id alone, for links that name
// only the project; callers check the reader's access to its organization.
func (s *Store) LookupProject(ctx context.Context, projectID string) (Project, error) {
	row := s.conn().queryRow(ctx, `SELECT `+projectColumns+`
		FROM projects p JOIN organizations o ON o.id = p.org_id AND o.deleted_at IS NULL
		WHERE p.id = ? AND p.deleted_at IS NULL`, projectID)
	p, err := scanProject(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, fmt.Errorf("project %q: %w", projectID, ErrNotFound)
	}
	if err != nil {
		return Project{}, fmt.Errorf("get project %q: %w", projectID, err)
	}
	return p, nil
}

// ListProjects returns the organization's live projects, oldest first.
func (s *Store) ListProjects(ctx context.Context, orgID string) ([]Project, error) {
	rows, err := s.conn().query(ctx, `SELECT `+projectColumns+`
		FROM projects p JOIN organizations o ON o.id = p.org_id AND o.deleted_at IS NULL
		WHERE p.org_id = ? AND p.deleted_at IS NULL
		ORDER BY p.created_at, p.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("list projects of %q: %w", orgID, err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, fmt.Errorf("list projects of %q: %w", orgID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// MinRetentionDays is the smallest retention other than 0 (keep data), as
// in Langfuse.
const MinRetentionDays = 3

// CheckRetention refuses a retention that is neither 0 (keep data) nor at
// least MinRetentionDays, for projects, organizations and the instance.
func CheckRetention(days int) error {
	if days < 0 || (days > 0 && days < MinRetentionDays) {
		return fmt.Errorf("%w: retention %d days must be 0 (keep data) or at least %d days", ErrInvalid, days, MinRetentionDays)
	}
	return nil
}

// ProjectRetentions returns the retention, in days, of every live project
// that keeps its data for a limited time, across organizations: its own,
// else its organization's, else instanceDefault (0: without limit). Reads
// hide and the retention job deletes what is older.
func (s *Store) ProjectRetentions(ctx context.Context, instanceDefault int) (map[string]int, error) {
	rows, err := s.conn().query(ctx, `SELECT p.id, p.retention_days, o.retention_days FROM projects p
		JOIN organizations o ON o.id = p.org_id WHERE p.deleted_at IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("list project retentions: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var own, org int
		if err := rows.Scan(&id, &own, &org); err != nil {
			return nil, fmt.Errorf("list project retentions: %w", err)
		}
		if days := cmp.Or(own, org, instanceDefault); days > 0 {
			out[id] = days
		}
	}
	return out, rows.Err()
}

// UpdateProject changes a live project of the organization.
func (s *Store) UpdateProject(ctx context.Context, orgID, projectID string, u ProjectUpdate) (Project, error) {
	current, err := s.GetProject(ctx, orgID, projectID)
	if err != nil {
		return Project{}, err
	}
	name, metadata, retention := current.Name, current.Metadata, current.RetentionDays
	if u.Name != nil {
		if name, err = checkName("project", *u.Name); err != nil {
			return Project{}, err
		}
	}
	if u.Metadata != nil {
		if metadata, err = normalizeMetadata(u.Metadata); err != nil {
			return Project{}, err
		}
	}
	if u.RetentionDays != nil {
		if err := CheckRetention(*u.RetentionDays); err != nil {
			return Project{}, err
		}
		retention = *u.RetentionDays
	}
	res, err := s.conn().exec(ctx, `UPDATE projects SET name = ?, metadata = ?, retention_days = ?, updated_at = ?
		WHERE org_id = ? AND id = ? AND deleted_at IS NULL`,
		name, string(metadata), retention, s.micros(), orgID, projectID)
	if err != nil {
		return Project{}, fmt.Errorf("update project %q: %w", projectID, classify(err))
	}
	if err := requireOne(res, "project "+projectID); err != nil {
		return Project{}, err
	}
	if retention != current.RetentionDays {
		s.changed(ctx, ChangeRetention)
	}
	return s.GetProject(ctx, orgID, projectID)
}

// DeleteProject marks a project deleted and revokes its keys in the same
// transaction, so no key of a deleted project verifies; its automations
// are switched off, so nothing more is sent on its behalf.
func (s *Store) DeleteProject(ctx context.Context, orgID, projectID string) error {
	err := s.inTx(ctx, func(c conn) error {
		now := s.micros()
		res, err := c.exec(ctx, `UPDATE projects SET deleted_at = ?, updated_at = ?
			WHERE org_id = ? AND id = ? AND deleted_at IS NULL`, now, now, orgID, projectID)
		if err != nil {
			return fmt.Errorf("delete project %q: %w", projectID, err)
		}
		if err := requireOne(res, fmt.Sprintf("project %q in organization %q", projectID, orgID)); err != nil {
			return err
		}
		if _, err := c.exec(ctx, `UPDATE api_keys SET revoked_at = ?
			WHERE org_id = ? AND project_id = ? AND revoked_at IS NULL`, now, orgID, projectID); err != nil {
			return fmt.Errorf("revoke keys of project %q: %w", projectID, err)
		}
		if _, err := c.exec(ctx, `UPDATE automations SET active = 0, updated_at = ? WHERE project_id = ? AND active = 1`,
			now, projectID); err != nil {
			return fmt.Errorf("switch off automations of project %q: %w", projectID, err)
		}
		return nil
	})
	// Everything the pipelines cache per project goes with it.
	return s.changedIf(ctx, err, ChangeAPIKeys, ChangeModels, ChangeSampling, ChangeEvalRules)
}

type scanner interface {
	Scan(dest ...any) error
}

func scanProject(r scanner) (Project, error) {
	var (
		p                    Project
		metadata             string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&p.ID, &p.OrganizationID, &p.OrganizationName, &p.Name, &metadata, &p.RetentionDays,
		&createdAt, &updatedAt); err != nil {
		return Project{}, err
	}
	p.Metadata = json.RawMessage(metadata)
	p.CreatedAt, p.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return p, nil
}

// normalizeMetadata accepts a JSON object (or nothing, or null) and returns
// its compact form.
func normalizeMetadata(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, fmt.Errorf("%w: metadata must be a JSON object: %w", ErrInvalid, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, fmt.Errorf("%w: metadata: %w", ErrInvalid, err)
	}
	return buf.Bytes(), nil
}
