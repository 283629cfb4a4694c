package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/evalqueue"
)

// maxExperimentItems bounds the dataset items one experiment queues.
const maxExperimentItems = 10000

// Experiment runs a stored prompt version over a dataset through an LLM
// connection and scores the outputs with evaluators; its results are the
// dataset run named RunName.
type Experiment struct {
	ID            string
	ProjectID     string
	DatasetID     string
	DatasetName   string
	RunName       string
	Description   string
	PromptName    string
	PromptVersion int
	ConnectionID  string
	// Model and ModelParams override the connection's defaults and the
	// prompt's config.
	Model        string
	ModelParams  json.RawMessage
	EvaluatorIDs []string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// NewExperiment is the input of CreateExperiment. The prompt version is
// PromptVersion, else the one labelled PromptLabel, else production.
type NewExperiment struct {
	DatasetName   string
	RunName       string
	Description   string
	PromptName    string
	PromptVersion int
	PromptLabel   string
	ConnectionID  string
	Model         string
	ModelParams   json.RawMessage
	EvaluatorIDs  []string
}

const experimentColumns = `x.id, x.project_id, x.dataset_id, d.name, x.run_name, x.description, x.prompt_name,
	x.prompt_version, x.connection_id, x.model, x.model_params, x.evaluator_ids, x.created_at, x.updated_at`

// CreateExperiment stores an experiment and queues one job per active item
// of its dataset, all in one transaction.
func (s *Store) CreateExperiment(ctx context.Context, projectID string, n NewExperiment) (Experiment, error) {
	runName, err := checkName("experiment run", n.RunName)
	if err != nil {
		return Experiment{}, fmt.Errorf("runName: %w", err)
	}
	if n.ModelParams != nil && !isJSONObject(n.ModelParams) {
		return Experiment{}, fmt.Errorf("%w: modelParams must be a JSON object", ErrInvalid)
	}
	if n.ModelParams == nil {
		n.ModelParams = json.RawMessage(`{}`)
	}
	if n.EvaluatorIDs == nil {
		n.EvaluatorIDs = []string{}
	}
	var out Experiment
	err = s.inTx(ctx, func(c conn) error {
		d, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, n.DatasetName)
		if err != nil {
			return err
		}
		var taken int
		if err := c.queryRow(ctx, `SELECT COUNT(*) FROM dataset_runs WHERE dataset_id = ? AND name = ?`, d.ID, runName).
			Scan(&taken); err != nil {
			return fmt.Errorf("check dataset run %q: %w", runName, err)
		}
		if taken > 0 {
			return fmt.Errorf("%w: dataset %q already has a run named %q", ErrConflict, d.Name, runName)
		}
		p, err := getPrompt(ctx, c, projectID, n.PromptName, PromptSelector{Version: n.PromptVersion, Label: n.PromptLabel})
		if err != nil {
			return err
		}
		if _, _, _, err := getLLMConnection(ctx, c, `project_id = ? AND id = ?`, projectID, n.ConnectionID); err != nil {
			return err
		}
		for i, id := range n.EvaluatorIDs {
			if slices.Index(n.EvaluatorIDs, id) != i {
				return fmt.Errorf("%w: evaluator %q is listed twice", ErrInvalid, id)
			}
			e, err := getEvaluator(ctx, c, projectID, id)
			if err != nil {
				return err
			}
			connection := ""
			if e.Kind == EvaluatorLLM {
				connection = n.ConnectionID
			}
			if err := checkEvaluatorUse(ctx, c, e, projectID, connection, nil); err != nil {
				return err
			}
		}
		items, err := activeItemIDs(ctx, c, projectID, d.ID)
		if err != nil {
			return err
		}
		evaluators, _ := json.Marshal(n.EvaluatorIDs)
		id, now := uuid.NewString(), s.micros()
		if _, err := c.exec(ctx, `INSERT INTO eval_experiments (id, project_id, dataset_id, run_name, description, prompt_name,
			prompt_version, connection_id, model, model_params, evaluator_ids, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, projectID, d.ID, runName, n.Description, p.Name, p.Version, n.ConnectionID, n.Model, string(n.ModelParams),
			string(evaluators), now, now); err != nil {
			return fmt.Errorf("create experiment %q: %w", runName, classify(err))
		}
		jobs := make([]evalqueue.NewJob, len(items))
		for i, item := range items {
			jobs[i] = evalqueue.NewJob{Kind: evalqueue.KindExperimentItem, ExperimentID: id, DatasetItemID: item, Due: fromMicros(now)}
		}
		if err := s.EnqueueIn(ctx, c.Conn, projectID, jobs...); err != nil {
			return err
		}
		out, err = getExperiment(ctx, c, projectID, id)
		return err
	})
	return out, err
}

func activeItemIDs(ctx context.Context, c conn, projectID, datasetID string) ([]string, error) {
	rows, err := c.query(ctx, `SELECT id FROM dataset_items WHERE project_id = ? AND dataset_id = ? AND status = ?
		ORDER BY created_at, id LIMIT ?`, projectID, datasetID, ItemActive, maxExperimentItems+1)
	if err != nil {
		return nil, fmt.Errorf("dataset items: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("dataset items: %w", err)
		}
		ids = append(ids, id)
	}
	if len(ids) > maxExperimentItems {
		return nil, fmt.Errorf("%w: an experiment runs over at most %d dataset items", ErrInvalid, maxExperimentItems)
	}
	return ids, rows.Err()
}

// GetExperiment returns an experiment of the project.
func (s *Store) GetExperiment(ctx context.Context, projectID, id string) (Experiment, error) {
	return getExperiment(ctx, s.conn(), projectID, id)
}

func getExperiment(ctx context.Context, c conn, projectID, id string) (Experiment, error) {
	x, err := scanExperiment(c.queryRow(ctx, `SELECT `+experimentColumns+` FROM eval_experiments x
		JOIN datasets d ON d.id = x.dataset_id WHERE x.project_id = ? AND x.id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Experiment{}, fmt.Errorf("experiment %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Experiment{}, fmt.Errorf("get experiment %q: %w", id, err)
	}
	return x, nil
}

func scanExperiment(r scanner) (Experiment, error) {
	var (
		x                    Experiment
		params, evaluators   string
		createdAt, updatedAt int64
	)
	if err := r.Scan(&x.ID, &x.ProjectID, &x.DatasetID, &x.DatasetName, &x.RunName, &x.Description, &x.PromptName,
		&x.PromptVersion, &x.ConnectionID, &x.Model, &params, &evaluators, &createdAt, &updatedAt); err != nil {
		return Experiment{}, err
	}
	if err := json.Unmarshal([]byte(evaluators), &x.EvaluatorIDs); err != nil {
		return Experiment{}, fmt.Errorf("experiment %q: %w", x.ID, err)
	}
	x.ModelParams = json.RawMessage(params)
	x.CreatedAt, x.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return x, nil
}

// ListExperiments returns one page of the project's experiments, newest
// first, and their number.
func (s *Store) ListExperiments(ctx context.Context, projectID string, offset, limit int) ([]Experiment, int, error) {
	c := s.conn()
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM eval_experiments WHERE project_id = ?`, projectID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count experiments: %w", err)
	}
	rows, err := c.query(ctx, `SELECT `+experimentColumns+` FROM eval_experiments x JOIN datasets d ON d.id = x.dataset_id
		WHERE x.project_id = ? ORDER BY x.created_at DESC, x.id LIMIT ? OFFSET ?`, projectID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list experiments: %w", err)
	}
	defer rows.Close()
	out := []Experiment{}
	for rows.Next() {
		x, err := scanExperiment(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list experiments: %w", err)
		}
		out = append(out, x)
	}
	return out, total, rows.Err()
}

// DatasetItemOfTrace returns the dataset item a run linked to the trace
// (the newest link when several runs did), so that evaluators of
// experiment traces can read the expected output.
func (s *Store) DatasetItemOfTrace(ctx context.Context, projectID, traceID string) (DatasetItem, error) {
	c := s.conn()
	var itemID string
	err := c.queryRow(ctx, `SELECT dataset_item_id FROM dataset_run_items WHERE project_id = ? AND trace_id = ?
		ORDER BY created_at DESC, id LIMIT 1`, projectID, traceID).Scan(&itemID)
	if errors.Is(err, sql.ErrNoRows) {
		return DatasetItem{}, fmt.Errorf("dataset item of trace %q: %w", traceID, ErrNotFound)
	}
	if err != nil {
		return DatasetItem{}, fmt.Errorf("dataset item of trace %q: %w", traceID, err)
	}
	return getItem(ctx, c, projectID, itemID)
}
