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

// DatasetRun is one experiment over a dataset: a name unique within the
// dataset and the run items that link dataset items to the traces produced.
type DatasetRun struct {
	ID          string
	ProjectID   string
	DatasetID   string
	DatasetName string
	Name        string
	Description string
	Metadata    json.RawMessage // any JSON value; nil when none
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DatasetRunItem links a dataset item to the trace (and optionally the
// observation) a run produced for it. A run holds at most one per item: a
// newer link for the same item replaces the older one.
type DatasetRunItem struct {
	ID             string
	ProjectID      string
	DatasetRunID   string
	DatasetRunName string
	DatasetItemID  string
	TraceID        string
	ObservationID  string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// NewDatasetRunItem is the input of CreateDatasetRunItem. RunDescription and
// Metadata are used when the run is created and ignored afterwards.
type NewDatasetRunItem struct {
	RunName        string
	RunDescription string
	Metadata       json.RawMessage
	DatasetItemID  string
	TraceID        string
	ObservationID  string
	// CreatedAt is when the item ran (now when zero).
	CreatedAt time.Time
	// DatasetVersion, when set, is the dataset version the run used: the
	// item must have been active then.
	DatasetVersion time.Time
}

// CreateDatasetRunItem links an active dataset item to a trace under the
// named run of the item's dataset, creating the run on first use.
func (s *Store) CreateDatasetRunItem(ctx context.Context, projectID string, n NewDatasetRunItem) (DatasetRunItem, error) {
	runName, err := checkName("dataset run", n.RunName)
	if err != nil {
		return DatasetRunItem{}, fmt.Errorf("runName: %w", err)
	}
	if n.TraceID == "" {
		return DatasetRunItem{}, fmt.Errorf("%w: traceId is required", ErrInvalid)
	}
	metadata, err := normalizeJSON(n.Metadata, "null", "metadata")
	if err != nil {
		return DatasetRunItem{}, err
	}
	var ri DatasetRunItem
	err = s.inTx(ctx, func(c conn) error {
		item, err := getItem(ctx, c, projectID, n.DatasetItemID)
		if err != nil {
			return err
		}
		if item.Status != ItemActive {
			return fmt.Errorf("dataset item %q is %s: %w", item.ID, item.Status, ErrNotFound)
		}
		var version sql.NullInt64
		if !n.DatasetVersion.IsZero() {
			if err := itemActiveAt(ctx, c, projectID, item.ID, n.DatasetVersion); err != nil {
				return err
			}
			version = sql.NullInt64{Int64: n.DatasetVersion.UnixMicro(), Valid: true}
		}
		now := s.micros()
		createdAt := now
		if !n.CreatedAt.IsZero() {
			createdAt = n.CreatedAt.UnixMicro()
		}
		// Concurrent first uses race to create the run; the unique name
		// lets exactly one insert win and every caller read the winner.
		if _, err := c.exec(ctx, `INSERT INTO dataset_runs (id, project_id, dataset_id, name, description, metadata, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dataset_id, name) DO NOTHING`,
			uuid.NewString(), projectID, item.DatasetID, runName, n.RunDescription, nullJSON(nullIfJSONNull(metadata)), now, now); err != nil {
			return fmt.Errorf("create dataset run %q: %w", runName, classify(err))
		}
		run, err := getRun(ctx, c, `r.project_id = ? AND r.dataset_id = ? AND r.name = ?`, projectID, item.DatasetID, runName)
		if err != nil {
			return err
		}
		id := uuid.NewString()
		if _, err := c.exec(ctx, `INSERT INTO dataset_run_items
			(id, project_id, dataset_run_id, dataset_item_id, trace_id, observation_id, created_at, updated_at, dataset_version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dataset_run_id, dataset_item_id) DO UPDATE SET
				id = excluded.id, trace_id = excluded.trace_id, observation_id = excluded.observation_id,
				created_at = excluded.created_at, updated_at = excluded.updated_at, dataset_version = excluded.dataset_version`,
			id, projectID, run.ID, item.ID, n.TraceID, n.ObservationID, createdAt, now, version); err != nil {
			return fmt.Errorf("create dataset run item: %w", classify(err))
		}
		items, err := runItems(ctx, c, `ri.project_id = ? AND ri.id = ?`, []any{projectID, id}, 1, 0)
		if err != nil {
			return err
		}
		ri = items[0]
		return nil
	})
	return ri, err
}

// itemActiveAt checks that the item was active at the dataset version at.
func itemActiveAt(ctx context.Context, c conn, projectID, itemID string, at time.Time) error {
	var status string
	var deleted int
	err := c.queryRow(ctx, `SELECT status, deleted FROM dataset_item_versions WHERE project_id = ? AND item_id = ? AND valid_from <= ?
		ORDER BY valid_from DESC LIMIT 1`, projectID, itemID, at.UnixMicro()).Scan(&status, &deleted)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (deleted != 0 || status != ItemActive)) {
		return fmt.Errorf("%w: dataset item %q was not active at datasetVersion %s", ErrInvalid, itemID, at.UTC().Format(time.RFC3339Nano))
	}
	if err != nil {
		return fmt.Errorf("read dataset item %q as of %s: %w", itemID, at, err)
	}
	return nil
}

func nullIfJSONNull(raw json.RawMessage) json.RawMessage {
	if isNullJSON(raw) {
		return nil
	}
	return raw
}

const runColumns = `r.id, r.project_id, r.dataset_id, d.name, r.name, r.description, r.metadata, r.created_at, r.updated_at`

// GetDatasetRun returns a run of the named dataset.
func (s *Store) GetDatasetRun(ctx context.Context, projectID, datasetName, runName string) (DatasetRun, error) {
	return getRun(ctx, s.conn(), `r.project_id = ? AND d.name = ? AND r.name = ?`, projectID, datasetName, runName)
}

func getRun(ctx context.Context, c conn, where string, args ...any) (DatasetRun, error) {
	run, err := scanRun(c.queryRow(ctx, `SELECT `+runColumns+` FROM dataset_runs r JOIN datasets d ON d.id = r.dataset_id
		WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return DatasetRun{}, fmt.Errorf("dataset run %v: %w", args[len(args)-1], ErrNotFound)
	}
	if err != nil {
		return DatasetRun{}, fmt.Errorf("get dataset run: %w", err)
	}
	return run, nil
}

func scanRun(r scanner) (DatasetRun, error) {
	var (
		run                  DatasetRun
		metadata             sql.NullString
		createdAt, updatedAt int64
	)
	if err := r.Scan(&run.ID, &run.ProjectID, &run.DatasetID, &run.DatasetName, &run.Name, &run.Description, &metadata,
		&createdAt, &updatedAt); err != nil {
		return DatasetRun{}, err
	}
	run.Metadata = rawJSON(metadata)
	run.CreatedAt, run.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return run, nil
}

// ListDatasetRuns returns one page of the runs of the named dataset, newest
// first, and their number.
func (s *Store) ListDatasetRuns(ctx context.Context, projectID, datasetName string, offset, limit int) ([]DatasetRun, int, error) {
	c := s.conn()
	d, err := getDataset(ctx, c, `project_id = ? AND name = ?`, projectID, datasetName)
	if err != nil {
		return nil, 0, err
	}
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM dataset_runs WHERE project_id = ? AND dataset_id = ?`, projectID, d.ID).
		Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count dataset runs: %w", err)
	}
	rows, err := c.query(ctx, `SELECT `+runColumns+` FROM dataset_runs r JOIN datasets d ON d.id = r.dataset_id
		WHERE r.project_id = ? AND r.dataset_id = ? ORDER BY r.created_at DESC, r.id LIMIT ? OFFSET ?`,
		projectID, d.ID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list dataset runs: %w", err)
	}
	defer rows.Close()
	out := []DatasetRun{}
	for rows.Next() {
		run, err := scanRun(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list dataset runs: %w", err)
		}
		out = append(out, run)
	}
	return out, total, rows.Err()
}

// DeleteDatasetRun deletes a run of the named dataset; its run items go with it.
func (s *Store) DeleteDatasetRun(ctx context.Context, projectID, datasetName, runName string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM dataset_runs WHERE project_id = ? AND name = ? AND dataset_id IN (
		SELECT id FROM datasets WHERE project_id = ? AND name = ?)`, projectID, runName, projectID, datasetName)
	if err != nil {
		return fmt.Errorf("delete dataset run %q: %w", runName, err)
	}
	return requireOne(res, fmt.Sprintf("dataset run %q of dataset %q", runName, datasetName))
}

// DatasetRunItemFilter selects run items: those of RunID, or of the run
// named RunName in dataset DatasetID.
type DatasetRunItemFilter struct {
	RunID     string
	DatasetID string
	RunName   string
	Offset    int
	Limit     int
}

// ListDatasetRunItems returns one page of a run's items, oldest first, and
// their number. An unknown run is ErrNotFound.
func (s *Store) ListDatasetRunItems(ctx context.Context, projectID string, f DatasetRunItemFilter) ([]DatasetRunItem, int, error) {
	c := s.conn()
	runID := f.RunID
	if runID == "" {
		run, err := getRun(ctx, c, `r.project_id = ? AND r.dataset_id = ? AND r.name = ?`, projectID, f.DatasetID, f.RunName)
		if err != nil {
			return nil, 0, err
		}
		runID = run.ID
	}
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM dataset_run_items WHERE project_id = ? AND dataset_run_id = ?`,
		projectID, runID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count dataset run items: %w", err)
	}
	items, err := runItems(ctx, c, `ri.project_id = ? AND ri.dataset_run_id = ?`, []any{projectID, runID}, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

func runItems(ctx context.Context, c conn, where string, args []any, limit, offset int) ([]DatasetRunItem, error) {
	rows, err := c.query(ctx, `SELECT ri.id, ri.project_id, ri.dataset_run_id, r.name, ri.dataset_item_id, ri.trace_id,
		ri.observation_id, ri.created_at, ri.updated_at
		FROM dataset_run_items ri JOIN dataset_runs r ON r.id = ri.dataset_run_id
		WHERE `+where+` ORDER BY ri.created_at, ri.id LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	if err != nil {
		return nil, fmt.Errorf("list dataset run items: %w", err)
	}
	defer rows.Close()
	out := []DatasetRunItem{}
	for rows.Next() {
		var (
			ri                   DatasetRunItem
			createdAt, updatedAt int64
		)
		if err := rows.Scan(&ri.ID, &ri.ProjectID, &ri.DatasetRunID, &ri.DatasetRunName, &ri.DatasetItemID, &ri.TraceID,
			&ri.ObservationID, &createdAt, &updatedAt); err != nil {
			return nil, fmt.Errorf("list dataset run items: %w", err)
		}
		ri.CreatedAt, ri.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
		out = append(out, ri)
	}
	return out, rows.Err()
}
