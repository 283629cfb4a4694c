package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// A project's model definitions price its generations before the built-in
// catalogue does (see internal/pricing). A price change is a new definition
// with a later start date; UpsertModel replaces a definition by id.

const modelColumns = `id, project_id, model_name, match_pattern, start_date, unit, tokenizer_id, tokenizer_config,
	pricing_tiers, created_at, updated_at`

// CreateModel validates and stores a project's model definition. The id
// and tier ids are generated when empty; the unit defaults to TOKENS. A
// definition with the same name and start date exists: ErrConflict.
func (s *Store) CreateModel(ctx context.Context, projectID string, m pricing.Model) (pricing.Model, error) {
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	return s.writeModel(ctx, projectID, m, false)
}

// UpsertModel stores the definition under m.ID, replacing the project's
// definition with that id. An id another project uses is ErrConflict.
func (s *Store) UpsertModel(ctx context.Context, projectID string, m pricing.Model) (pricing.Model, error) {
	return s.writeModel(ctx, projectID, m, true)
}

func (s *Store) writeModel(ctx context.Context, projectID string, m pricing.Model, replace bool) (pricing.Model, error) {
	if err := checkID("model", m.ID); err != nil {
		return pricing.Model{}, err
	}
	if m.Unit == "" {
		m.Unit = pricing.DefaultUnit
	}
	for i := range m.Tiers {
		if m.Tiers[i].ID == "" {
			m.Tiers[i].ID = uuid.NewString()
		}
		if m.Tiers[i].Conditions == nil {
			m.Tiers[i].Conditions = []pricing.Condition{}
		}
	}
	if err := m.Validate(); err != nil {
		return pricing.Model{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	tiers, err := json.Marshal(m.Tiers)
	if err != nil {
		return pricing.Model{}, fmt.Errorf("encode pricing tiers: %w", err)
	}
	var tokenizerConfig sql.NullString
	if m.TokenizerConfig != nil {
		raw, err := json.Marshal(m.TokenizerConfig)
		if err != nil {
			return pricing.Model{}, fmt.Errorf("encode tokenizer config: %w", err)
		}
		tokenizerConfig = sql.NullString{String: string(raw), Valid: true}
	}
	var start int64
	if !m.StartDate.IsZero() {
		start = m.StartDate.UnixMicro()
	}
	now := s.micros()
	stmt := `INSERT INTO models (` + modelColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if replace {
		// The WHERE keeps another project's definition of the same id.
		stmt += ` ON CONFLICT (id) DO UPDATE SET model_name = excluded.model_name, match_pattern = excluded.match_pattern,
			start_date = excluded.start_date, unit = excluded.unit, tokenizer_id = excluded.tokenizer_id,
			tokenizer_config = excluded.tokenizer_config, pricing_tiers = excluded.pricing_tiers, updated_at = excluded.updated_at
			WHERE models.project_id = excluded.project_id`
	}
	res, err := s.conn().exec(ctx, stmt,
		m.ID, projectID, m.Name, m.MatchPattern, start, m.Unit, m.TokenizerID, tokenizerConfig, string(tiers), now, now)
	if err != nil {
		return pricing.Model{}, fmt.Errorf("store model %q in project %q: %w", m.Name, projectID, classify(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return pricing.Model{}, fmt.Errorf("%w: model id %q is taken", ErrConflict, m.ID)
	}
	s.changed(ctx, ChangeModels)
	return s.GetModel(ctx, projectID, m.ID)
}

// GetModel returns one of the project's model definitions.
func (s *Store) GetModel(ctx context.Context, projectID, id string) (pricing.Model, error) {
	m, err := scanModel(s.conn().queryRow(ctx, `SELECT `+modelColumns+` FROM models WHERE project_id = ? AND id = ?`,
		projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return pricing.Model{}, fmt.Errorf("model %q in project %q: %w", id, projectID, ErrNotFound)
	}
	if err != nil {
		return pricing.Model{}, fmt.Errorf("get model %q: %w", id, err)
	}
	return m, nil
}

// ListModels returns the project's model definitions by name, the latest
// start date first.
func (s *Store) ListModels(ctx context.Context, projectID string) ([]pricing.Model, error) {
	return s.models(ctx, `WHERE project_id = ? ORDER BY model_name, start_date DESC, id`, projectID)
}

// DeleteModel removes one of the project's model definitions.
func (s *Store) DeleteModel(ctx context.Context, projectID, id string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM models WHERE project_id = ? AND id = ?`, projectID, id)
	if err != nil {
		return fmt.Errorf("delete model %q: %w", id, err)
	}
	return s.changedIf(ctx, requireOne(res, fmt.Sprintf("model %q in project %q", id, projectID)), ChangeModels)
}

// ProjectModels returns the model definitions of every live project that
// has any, by project id: what the cost processor reloads (it implements
// pricing.ModelSource).
func (s *Store) ProjectModels(ctx context.Context) (map[string][]pricing.Model, error) {
	list, err := s.models(ctx, `WHERE project_id IN (SELECT id FROM projects WHERE deleted_at IS NULL)
		ORDER BY project_id, model_name, start_date DESC, id`)
	if err != nil {
		return nil, err
	}
	out := map[string][]pricing.Model{}
	for _, m := range list {
		out[m.ProjectID] = append(out[m.ProjectID], m)
	}
	return out, nil
}

var _ pricing.ModelSource = (*Store)(nil)

func (s *Store) models(ctx context.Context, where string, args ...any) ([]pricing.Model, error) {
	rows, err := s.conn().query(ctx, `SELECT `+modelColumns+` FROM models `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	defer rows.Close()
	var out []pricing.Model
	for rows.Next() {
		m, err := scanModel(rows)
		if err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanModel(r scanner) (pricing.Model, error) {
	var (
		m                    pricing.Model
		start                int64
		tokenizerConfig      sql.NullString
		tiers                string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&m.ID, &m.ProjectID, &m.Name, &m.MatchPattern, &start, &m.Unit, &m.TokenizerID,
		&tokenizerConfig, &tiers, &createdAt, &updatedAt); err != nil {
		return pricing.Model{}, err
	}
	if start != 0 {
		m.StartDate = fromMicros(start)
	}
	if tokenizerConfig.Valid {
		m.TokenizerConfig = new(pricing.TokenizerConfig)
		if err := json.Unmarshal([]byte(tokenizerConfig.String), m.TokenizerConfig); err != nil {
			return pricing.Model{}, fmt.Errorf("model %q: tokenizer config: %w", m.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(tiers), &m.Tiers); err != nil {
		return pricing.Model{}, fmt.Errorf("model %q: pricing tiers: %w", m.ID, err)
	}
	m.CreatedAt, m.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return m, nil
}
