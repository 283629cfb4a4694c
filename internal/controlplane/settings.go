package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/sampling"
)

// A project's sampling settings override the collector configuration's
// rates for that project (see internal/sampling and the glassbox_sampling
// processor). A nil rate leaves the project's default to the collector.

// GetSampling returns the project's sampling settings; a project without
// any has the zero Rates (everything left to the collector).
func (s *Store) GetSampling(ctx context.Context, projectID string) (sampling.Rates, error) {
	var (
		rate sql.NullFloat64
		envs string
	)
	err := s.conn().queryRow(ctx, `SELECT sampling_rate, sampling_environments FROM project_settings WHERE project_id = ?`,
		projectID).Scan(&rate, &envs)
	if errors.Is(err, sql.ErrNoRows) {
		return sampling.Rates{}, nil
	}
	if err != nil {
		return sampling.Rates{}, fmt.Errorf("get sampling settings of %q: %w", projectID, err)
	}
	return decodeRates(rate, envs)
}

// SetSampling replaces the project's sampling settings. Rates must lie in
// [0, 1]; environment names are stored in lower case, as environments are.
func (s *Store) SetSampling(ctx context.Context, projectID string, r sampling.Rates) (sampling.Rates, error) {
	r, err := checkRates(r)
	if err != nil {
		return sampling.Rates{}, err
	}
	envs, err := json.Marshal(r.Environments)
	if err != nil {
		return sampling.Rates{}, fmt.Errorf("encode environments: %w", err)
	}
	var rate sql.NullFloat64
	if r.Rate != nil {
		rate = sql.NullFloat64{Float64: *r.Rate, Valid: true}
	}
	if _, err := s.conn().exec(ctx, `INSERT INTO project_settings (project_id, sampling_rate, sampling_environments, updated_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (project_id) DO UPDATE SET sampling_rate = excluded.sampling_rate,
			sampling_environments = excluded.sampling_environments, updated_at = excluded.updated_at`,
		projectID, rate, string(envs), s.micros()); err != nil {
		return sampling.Rates{}, fmt.Errorf("set sampling settings of %q: %w", projectID, classify(err))
	}
	s.changed(ctx, ChangeSampling)
	return s.GetSampling(ctx, projectID)
}

// ProjectSampling returns the sampling settings of every live project that
// has any: what the sampling processor reloads (it implements
// sampling.Source).
func (s *Store) ProjectSampling(ctx context.Context) (map[string]sampling.Rates, error) {
	rows, err := s.conn().query(ctx, `SELECT project_id, sampling_rate, sampling_environments FROM project_settings
		WHERE project_id IN (SELECT id FROM projects WHERE deleted_at IS NULL)`)
	if err != nil {
		return nil, fmt.Errorf("list sampling settings: %w", err)
	}
	defer rows.Close()
	out := map[string]sampling.Rates{}
	for rows.Next() {
		var (
			id   string
			rate sql.NullFloat64
			envs string
		)
		if err := rows.Scan(&id, &rate, &envs); err != nil {
			return nil, fmt.Errorf("list sampling settings: %w", err)
		}
		r, err := decodeRates(rate, envs)
		if err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rows.Err()
}

var _ sampling.Source = (*Store)(nil)

func decodeRates(rate sql.NullFloat64, envs string) (sampling.Rates, error) {
	var r sampling.Rates
	if rate.Valid {
		r.Rate = &rate.Float64
	}
	if err := json.Unmarshal([]byte(envs), &r.Environments); err != nil {
		return sampling.Rates{}, fmt.Errorf("sampling environments: %w", err)
	}
	return r, nil
}

func checkRates(r sampling.Rates) (sampling.Rates, error) {
	valid := func(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }
	if r.Rate != nil && !valid(*r.Rate) {
		return r, fmt.Errorf("%w: sampling rate %v must be between 0 and 1", ErrInvalid, *r.Rate)
	}
	envs := make(map[string]float64, len(r.Environments))
	for env, v := range r.Environments {
		name := strings.ToLower(strings.TrimSpace(env))
		if name == "" {
			return r, fmt.Errorf("%w: environment names must not be empty", ErrInvalid)
		}
		if !valid(v) {
			return r, fmt.Errorf("%w: sampling rate %v of environment %q must be between 0 and 1", ErrInvalid, v, env)
		}
		envs[name] = v
	}
	r.Environments = envs
	return r, nil
}
