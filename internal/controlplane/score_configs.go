package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
)

// Score data types a config can describe.
const (
	ScoreNumeric     = "NUMERIC"
	ScoreCategorical = "CATEGORICAL"
	ScoreBoolean     = "BOOLEAN"
)

// BooleanCategories are the implied categories of every BOOLEAN config.
var BooleanCategories = []ScoreCategory{{Value: 1, Label: "True"}, {Value: 0, Label: "False"}}

// ScoreConfig describes the scores of one name: their data type and the
// range (NUMERIC) or categories (CATEGORICAL, BOOLEAN) values must keep to.
type ScoreConfig struct {
	ID          string
	ProjectID   string
	Name        string
	DataType    string
	IsArchived  bool
	MinValue    *float64 // NUMERIC only; nil means unbounded
	MaxValue    *float64
	Categories  []ScoreCategory // CATEGORICAL and BOOLEAN
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ScoreCategory is one allowed value of a categorical score: the label
// scores carry and the number it maps to.
type ScoreCategory struct {
	Value float64 `json:"value"`
	Label string  `json:"label"`
}

// NewScoreConfig is the input of CreateScoreConfig.
type NewScoreConfig struct {
	Name        string
	DataType    string
	MinValue    *float64
	MaxValue    *float64
	Categories  []ScoreCategory
	Description string
}

// ScoreConfigUpdate changes the fields that are set.
type ScoreConfigUpdate struct {
	IsArchived  *bool
	Name        *string
	Description *string
	// SetRange replaces MinValue and MaxValue (nil removes a bound).
	SetRange   bool
	MinValue   *float64
	MaxValue   *float64
	Categories []ScoreCategory // nil keeps them
}

const scoreConfigColumns = `id, project_id, name, data_type, is_archived, min_value, max_value, categories, description, created_at, updated_at`

// CreateScoreConfig validates and stores a score config.
func (s *Store) CreateScoreConfig(ctx context.Context, projectID string, n NewScoreConfig) (ScoreConfig, error) {
	cfg := ScoreConfig{ID: uuid.NewString(), ProjectID: projectID, Name: n.Name, DataType: n.DataType,
		MinValue: n.MinValue, MaxValue: n.MaxValue, Categories: n.Categories, Description: n.Description}
	if err := normalizeScoreConfig(&cfg); err != nil {
		return ScoreConfig{}, err
	}
	categories, _ := json.Marshal(cfg.Categories)
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO score_configs (`+scoreConfigColumns+`) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)`,
		cfg.ID, projectID, cfg.Name, cfg.DataType, nullFloat(cfg.MinValue), nullFloat(cfg.MaxValue), string(categories),
		cfg.Description, now, now); err != nil {
		return ScoreConfig{}, fmt.Errorf("create score config %q: %w", cfg.Name, classify(err))
	}
	return s.GetScoreConfig(ctx, projectID, cfg.ID)
}

// normalizeScoreConfig checks a config's fields against its data type and
// fills in the implied BOOLEAN categories.
func normalizeScoreConfig(cfg *ScoreConfig) error {
	name, err := checkName("score config", cfg.Name)
	if err != nil {
		return err
	}
	cfg.Name = name
	hasRange := cfg.MinValue != nil || cfg.MaxValue != nil
	for _, bound := range []*float64{cfg.MinValue, cfg.MaxValue} {
		if bound != nil && (math.IsNaN(*bound) || math.IsInf(*bound, 0)) {
			return fmt.Errorf("%w: minValue and maxValue must be finite numbers", ErrInvalid)
		}
	}
	switch cfg.DataType {
	case ScoreNumeric:
		if len(cfg.Categories) > 0 {
			return fmt.Errorf("%w: categories: a NUMERIC config has a range, not categories", ErrInvalid)
		}
		if cfg.MinValue != nil && cfg.MaxValue != nil && *cfg.MinValue > *cfg.MaxValue {
			return fmt.Errorf("%w: minValue %g is greater than maxValue %g", ErrInvalid, *cfg.MinValue, *cfg.MaxValue)
		}
		cfg.Categories = nil
	case ScoreCategorical:
		if hasRange {
			return fmt.Errorf("%w: minValue/maxValue: a CATEGORICAL config has categories, not a range", ErrInvalid)
		}
		if len(cfg.Categories) == 0 {
			return fmt.Errorf("%w: categories: a CATEGORICAL config needs at least one category", ErrInvalid)
		}
		labels, values := map[string]bool{}, map[float64]bool{}
		for i, c := range cfg.Categories {
			switch {
			case c.Label == "":
				return fmt.Errorf("%w: categories[%d].label must not be empty", ErrInvalid, i)
			case labels[c.Label]:
				return fmt.Errorf("%w: categories[%d].label %q is used twice", ErrInvalid, i, c.Label)
			case values[c.Value]:
				return fmt.Errorf("%w: categories[%d].value %g is used twice", ErrInvalid, i, c.Value)
			case math.IsNaN(c.Value) || math.IsInf(c.Value, 0):
				return fmt.Errorf("%w: categories[%d].value must be a finite number", ErrInvalid, i)
			}
			labels[c.Label], values[c.Value] = true, true
		}
	case ScoreBoolean:
		if hasRange {
			return fmt.Errorf("%w: minValue/maxValue: a BOOLEAN config has no range", ErrInvalid)
		}
		if len(cfg.Categories) > 0 && !sameCategories(cfg.Categories, BooleanCategories) {
			return fmt.Errorf("%w: categories: a BOOLEAN config's categories are always True (1) and False (0)", ErrInvalid)
		}
		cfg.Categories = BooleanCategories
	default:
		return fmt.Errorf("%w: dataType %q must be NUMERIC, CATEGORICAL or BOOLEAN", ErrInvalid, cfg.DataType)
	}
	return nil
}

func sameCategories(a, b []ScoreCategory) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		found := false
		for _, d := range b {
			found = found || c == d
		}
		if !found {
			return false
		}
	}
	return true
}

func nullFloat(f *float64) sql.NullFloat64 {
	if f == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *f, Valid: true}
}

// GetScoreConfig returns a score config of the project, archived or not.
func (s *Store) GetScoreConfig(ctx context.Context, projectID, id string) (ScoreConfig, error) {
	cfg, err := scanScoreConfig(s.conn().queryRow(ctx, `SELECT `+scoreConfigColumns+` FROM score_configs
		WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ScoreConfig{}, fmt.Errorf("score config %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return ScoreConfig{}, fmt.Errorf("get score config %q: %w", id, err)
	}
	return cfg, nil
}

func scanScoreConfig(r scanner) (ScoreConfig, error) {
	var (
		cfg                  ScoreConfig
		archived             int
		minValue, maxValue   sql.NullFloat64
		categories           string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&cfg.ID, &cfg.ProjectID, &cfg.Name, &cfg.DataType, &archived, &minValue, &maxValue, &categories,
		&cfg.Description, &createdAt, &updatedAt); err != nil {
		return ScoreConfig{}, err
	}
	cfg.IsArchived = archived != 0
	if minValue.Valid {
		cfg.MinValue = &minValue.Float64
	}
	if maxValue.Valid {
		cfg.MaxValue = &maxValue.Float64
	}
	if err := json.Unmarshal([]byte(categories), &cfg.Categories); err != nil {
		return ScoreConfig{}, fmt.Errorf("categories of score config %q: %w", cfg.ID, err)
	}
	cfg.CreatedAt, cfg.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return cfg, nil
}

// ListScoreConfigs returns one page of the project's score configs, oldest
// first, and their number.
func (s *Store) ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]ScoreConfig, int, error) {
	return projectPage(ctx, s.conn(), "score configs", "score_configs", scoreConfigColumns, "created_at, id", projectID, offset, limit, scanScoreConfig)
}

// UpdateScoreConfig changes a config; the result is validated as a whole.
func (s *Store) UpdateScoreConfig(ctx context.Context, projectID, id string, u ScoreConfigUpdate) (ScoreConfig, error) {
	var out ScoreConfig
	err := s.inTx(ctx, func(c conn) error {
		cfg, err := scanScoreConfig(c.queryRow(ctx, `SELECT `+scoreConfigColumns+` FROM score_configs
			WHERE project_id = ? AND id = ?`, projectID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("score config %q: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("get score config %q: %w", id, err)
		}
		if u.IsArchived != nil {
			cfg.IsArchived = *u.IsArchived
		}
		if u.Name != nil {
			cfg.Name = *u.Name
		}
		if u.Description != nil {
			cfg.Description = *u.Description
		}
		if u.SetRange {
			cfg.MinValue, cfg.MaxValue = u.MinValue, u.MaxValue
		}
		if u.Categories != nil {
			cfg.Categories = u.Categories
		}
		if err := normalizeScoreConfig(&cfg); err != nil {
			return err
		}
		categories, _ := json.Marshal(cfg.Categories)
		archived := 0
		if cfg.IsArchived {
			archived = 1
		}
		if _, err := c.exec(ctx, `UPDATE score_configs SET name = ?, is_archived = ?, min_value = ?, max_value = ?,
			categories = ?, description = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
			cfg.Name, archived, nullFloat(cfg.MinValue), nullFloat(cfg.MaxValue), string(categories), cfg.Description,
			s.micros(), projectID, id); err != nil {
			return fmt.Errorf("update score config %q: %w", id, classify(err))
		}
		out, err = scanScoreConfig(c.queryRow(ctx, `SELECT `+scoreConfigColumns+` FROM score_configs
			WHERE project_id = ? AND id = ?`, projectID, id))
		return err
	})
	return out, err
}
