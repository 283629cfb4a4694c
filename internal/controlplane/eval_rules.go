package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
)

// Rule defaults and bounds.
const (
	DefaultRuleDelay = 30 * time.Second
	maxRuleDelay     = 24 * time.Hour
)

// EvalRule runs an evaluator on the traces or observations of a project
// that match its filter, a sampled fraction of them, some time after they
// arrive.
type EvalRule struct {
	ID          string
	ProjectID   string
	Name        string
	EvaluatorID string
	// ConnectionID is the LLM connection of an llm evaluator; empty for code
	// evaluators.
	ConnectionID string
	Target       string // evaljobs.TargetTrace or evaljobs.TargetObservation
	Filter       evaljobs.Filter
	SamplingRate float64
	Delay        time.Duration
	Active       bool
	// Variables replace the evaluator's mappings of the same names.
	Variables []VariableMapping
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewEvalRule is the input of CreateEvalRule; nil pointers take the
// defaults (active, every match sampled, DefaultRuleDelay).
type NewEvalRule struct {
	Name         string
	EvaluatorID  string
	ConnectionID string
	Target       string
	Filter       evaljobs.Filter
	SamplingRate *float64
	Delay        *time.Duration
	Active       *bool
	Variables    []VariableMapping
}

// EvalRuleUpdate changes the fields that are set; the evaluator is fixed.
type EvalRuleUpdate struct {
	Name         *string
	ConnectionID *string
	Target       *string
	Filter       evaljobs.Filter // nil keeps it
	SamplingRate *float64
	Delay        *time.Duration
	Active       *bool
	Variables    []VariableMapping // nil keeps them
}

const ruleColumns = `id, project_id, name, evaluator_id, connection_id, target, filter, sampling_rate, delay_ms, active,
	variables, created_at, updated_at`

// CreateEvalRule validates and stores a rule; the collector's evaluator
// tap picks it up at its next refresh.
func (s *Store) CreateEvalRule(ctx context.Context, projectID string, n NewEvalRule) (EvalRule, error) {
	r := EvalRule{ID: uuid.NewString(), ProjectID: projectID, Name: n.Name, EvaluatorID: n.EvaluatorID,
		ConnectionID: n.ConnectionID, Target: n.Target, Filter: n.Filter, SamplingRate: 1, Delay: DefaultRuleDelay,
		Active: true, Variables: n.Variables}
	setIf(&r.SamplingRate, n.SamplingRate)
	setIf(&r.Delay, n.Delay)
	setIf(&r.Active, n.Active)
	var out EvalRule
	err := s.inTx(ctx, func(c conn) error {
		if err := checkRule(ctx, c, &r); err != nil {
			return err
		}
		filter, variables := ruleJSON(r)
		now := s.micros()
		if _, err := c.exec(ctx, `INSERT INTO eval_rules (`+ruleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, projectID, r.Name, r.EvaluatorID, nullString(r.ConnectionID), r.Target, filter, r.SamplingRate,
			r.Delay.Milliseconds(), boolInt(r.Active), variables, now, now); err != nil {
			return fmt.Errorf("create evaluator rule %q: %w", r.Name, classify(err))
		}
		var err error
		out, err = getRule(ctx, c, projectID, r.ID)
		return err
	})
	return out, s.changedIf(ctx, err, ChangeEvalRules)
}

func ruleJSON(r EvalRule) (filter, variables string) {
	f, _ := json.Marshal(r.Filter)
	v, _ := json.Marshal(r.Variables)
	return string(f), string(v)
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkRule validates a rule against its project's evaluator and connection.
func checkRule(ctx context.Context, c conn, r *EvalRule) error {
	var errs []error
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" || len(r.Name) > 255 {
		errs = append(errs, errors.New("name must be 1-255 characters"))
	}
	if err := evaljobs.CheckTarget(r.Target); err != nil {
		errs = append(errs, err)
	} else if err := r.Filter.Validate(r.Target); err != nil {
		errs = append(errs, err)
	}
	if r.Filter == nil {
		r.Filter = evaljobs.Filter{}
	}
	if math.IsNaN(r.SamplingRate) || r.SamplingRate < 0 || r.SamplingRate > 1 {
		errs = append(errs, errors.New("samplingRate must be from 0 to 1"))
	}
	if r.Delay < 0 || r.Delay > maxRuleDelay {
		errs = append(errs, fmt.Errorf("delay must be from 0 to %s", maxRuleDelay))
	}
	if r.Variables == nil {
		r.Variables = []VariableMapping{}
	}
	for _, v := range r.Variables {
		errs = append(errs, v.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	e, err := getEvaluator(ctx, c, r.ProjectID, r.EvaluatorID)
	if err != nil {
		return err
	}
	return checkEvaluatorUse(ctx, c, e, r.ProjectID, r.ConnectionID, r.Variables)
}

// checkEvaluatorUse checks that an evaluator can run with a connection (llm
// evaluators need one of the project's, code evaluators take none) and that
// its variables resolve with the user's overrides.
func checkEvaluatorUse(ctx context.Context, c conn, e Evaluator, projectID, connectionID string, overrides []VariableMapping) error {
	switch {
	case e.Kind == EvaluatorLLM && connectionID == "":
		return fmt.Errorf("%w: connectionId is required for the llm evaluator %q", ErrInvalid, e.Name)
	case e.Kind != EvaluatorLLM && connectionID != "":
		return fmt.Errorf("%w: the %s evaluator %q takes no connectionId", ErrInvalid, e.Kind, e.Name)
	case connectionID != "":
		if _, _, _, err := getLLMConnection(ctx, c, `project_id = ? AND id = ?`, projectID, connectionID); err != nil {
			return err
		}
	}
	if _, err := ResolveVariables(e.NeededVariables(), e.Variables, overrides); err != nil {
		return err
	}
	return nil
}

// GetEvalRule returns a rule of the project.
func (s *Store) GetEvalRule(ctx context.Context, projectID, id string) (EvalRule, error) {
	return getRule(ctx, s.conn(), projectID, id)
}

func getRule(ctx context.Context, c conn, projectID, id string) (EvalRule, error) {
	r, err := scanRule(c.queryRow(ctx, `SELECT `+ruleColumns+` FROM eval_rules WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return EvalRule{}, fmt.Errorf("evaluator rule %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return EvalRule{}, fmt.Errorf("get evaluator rule %q: %w", id, err)
	}
	return r, nil
}

func scanRule(r scanner) (EvalRule, error) {
	var (
		rule                 EvalRule
		connection           sql.NullString
		filter, variables    string
		delayMS              int64
		active               int
		createdAt, updatedAt int64
	)
	if err := r.Scan(&rule.ID, &rule.ProjectID, &rule.Name, &rule.EvaluatorID, &connection, &rule.Target, &filter,
		&rule.SamplingRate, &delayMS, &active, &variables, &createdAt, &updatedAt); err != nil {
		return EvalRule{}, err
	}
	if err := errors.Join(json.Unmarshal([]byte(filter), &rule.Filter), json.Unmarshal([]byte(variables), &rule.Variables)); err != nil {
		return EvalRule{}, fmt.Errorf("evaluator rule %q: %w", rule.ID, err)
	}
	rule.ConnectionID = connection.String
	rule.Delay = time.Duration(delayMS) * time.Millisecond
	rule.Active = active != 0
	rule.CreatedAt, rule.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return rule, nil
}

// ListEvalRules returns one page of the project's rules by name, and their number.
func (s *Store) ListEvalRules(ctx context.Context, projectID string, offset, limit int) ([]EvalRule, int, error) {
	return projectPage(ctx, s.conn(), "evaluator rules", "eval_rules", ruleColumns, "name, id", projectID, offset, limit, scanRule)
}

// UpdateEvalRule changes a rule; the result is validated as a whole.
func (s *Store) UpdateEvalRule(ctx context.Context, projectID, id string, u EvalRuleUpdate) (EvalRule, error) {
	var out EvalRule
	err := s.inTx(ctx, func(c conn) error {
		r, err := getRule(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		setIf(&r.Name, u.Name)
		setIf(&r.ConnectionID, u.ConnectionID)
		setIf(&r.Target, u.Target)
		setIf(&r.SamplingRate, u.SamplingRate)
		setIf(&r.Delay, u.Delay)
		setIf(&r.Active, u.Active)
		if u.Filter != nil {
			r.Filter = u.Filter
		}
		if u.Variables != nil {
			r.Variables = u.Variables
		}
		if err := checkRule(ctx, c, &r); err != nil {
			return err
		}
		filter, variables := ruleJSON(r)
		if _, err := c.exec(ctx, `UPDATE eval_rules SET name = ?, connection_id = ?, target = ?, filter = ?, sampling_rate = ?,
			delay_ms = ?, active = ?, variables = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
			r.Name, nullString(r.ConnectionID), r.Target, filter, r.SamplingRate, r.Delay.Milliseconds(), boolInt(r.Active),
			variables, s.micros(), projectID, id); err != nil {
			return fmt.Errorf("update evaluator rule %q: %w", id, classify(err))
		}
		out, err = getRule(ctx, c, projectID, id)
		return err
	})
	return out, s.changedIf(ctx, err, ChangeEvalRules)
}

// DeleteEvalRule deletes a rule and its jobs; scores it wrote stay.
func (s *Store) DeleteEvalRule(ctx context.Context, projectID, id string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM eval_rules WHERE project_id = ? AND id = ?`, projectID, id)
	if err != nil {
		return fmt.Errorf("delete evaluator rule %q: %w", id, err)
	}
	return s.changedIf(ctx, requireOne(res, "evaluator rule "+id), ChangeEvalRules)
}

// ActiveEvalRules implements evaljobs.RuleSource: the active rules of every
// live project.
func (s *Store) ActiveEvalRules(ctx context.Context) ([]evaljobs.Rule, error) {
	rows, err := s.conn().query(ctx, `SELECT r.id, r.project_id, r.target, r.filter, r.sampling_rate, r.delay_ms
		FROM eval_rules r JOIN projects p ON p.id = r.project_id
		WHERE r.active = 1 AND p.deleted_at IS NULL ORDER BY r.project_id, r.id`)
	if err != nil {
		return nil, fmt.Errorf("list active evaluator rules: %w", err)
	}
	defer rows.Close()
	var out []evaljobs.Rule
	for rows.Next() {
		var (
			r       evaljobs.Rule
			filter  string
			delayMS int64
		)
		if err := rows.Scan(&r.ID, &r.ProjectID, &r.Target, &filter, &r.SamplingRate, &delayMS); err != nil {
			return nil, fmt.Errorf("list active evaluator rules: %w", err)
		}
		if err := json.Unmarshal([]byte(filter), &r.Filter); err != nil {
			return nil, fmt.Errorf("filter of evaluator rule %q: %w", r.ID, err)
		}
		r.Delay = time.Duration(delayMS) * time.Millisecond
		out = append(out, r)
	}
	return out, rows.Err()
}
