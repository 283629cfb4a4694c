package chstore

import (
	"context"
	"fmt"
	"strings"
)

// Experiments are read from the spans an SDK's experiment runner sends
// (model.Experiment): an experiment is the spans that share an experiment
// id, an experiment item is one item's root span.

// ExperimentSearch selects experiments or experiment items of a project by
// the start time of their spans. Zero-valued fields do not filter.
type ExperimentSearch struct {
	ProjectID string
	// From and To (Unix µs) bound the spans' start; From is required, so
	// that a read covers a bounded window.
	From, To   int64
	IDs        []string // experiment ids
	Names      []string // experiment names
	DatasetIDs []string
	ItemIDs    []string // experiment item ids; items only
	// Filters are the structured `filter` parameter over the observations
	// view's experiment fields (experimentId, experimentName,
	// experimentDatasetId, experimentItemId).
	Filters []Filter
	Limit   int
	// After is the last row of the previous page; nil for the first.
	After *ExperimentCursor
	// Details reads the large text columns: the metadata of an experiment;
	// input, output, expected output, metadata and description of an item.
	Details bool
}

// ExperimentCursor is a position in a listing ordered by Time descending,
// then ID descending.
type ExperimentCursor struct {
	Time int64
	ID   string
}

// Experiment is one experiment within the searched window.
type Experiment struct {
	ID, Name, Description, DatasetID string
	Metadata                         string // JSON text, "" when absent
	StartTime, EndTime               int64  // Unix µs: first start, last end
	ItemCount                        int64
}

// ExperimentItem is one item's root span.
type ExperimentItem struct {
	ObservationID, TraceID string
	StartTime, EndTime     int64 // Unix µs; EndTime 0 when the span had none
	Level, Environment     string
	ExperimentID           string
	ExperimentName         string
	ItemID, DatasetID      string
	// With Details: JSON text (or plain text) as stored, "" when absent.
	Input, Output, ExpectedOutput, Metadata, ItemMetadata string
	ExperimentMetadata, ExperimentDescription             string
}

// experimentWhere narrows the project's observations to q's window,
// experiment spans, undeleted traces and q's filters.
func (s *Store) experimentWhere(q ExperimentSearch, items bool) (*where, error) {
	if q.ProjectID == "" || q.From <= 0 {
		return nil, fmt.Errorf("%w: project id and start of the window are required", ErrInvalid)
	}
	w := &where{}
	w.add("project_id = ?", q.ProjectID)
	cond, args := observationWindow(window{from: q.From, to: q.To}, 0)
	w.add(cond, args...)
	w.add("experiment_id != ''")
	if items {
		w.add("experiment_item_root_id = id")
	}
	for _, c := range []struct {
		column string
		values []string
	}{{"experiment_id", q.IDs}, {"experiment_name", q.Names}, {"experiment_dataset_id", q.DatasetIDs}, {"experiment_item_id", q.ItemIDs}} {
		if len(c.values) > 0 {
			w.add(c.column+" IN "+placeholders(len(c.values)), anySlice(c.values)...)
		}
	}
	// The experiment fields are plain columns, so a filter on them is a
	// condition on the stored rows themselves.
	plan := rowsPlan{}
	for _, f := range q.Filters {
		cond, err := s.filterSQL(observationsView, q.ProjectID, f, &plan)
		if err != nil {
			return nil, err
		}
		w.add(cond.String(), cond.args...)
	}
	if plan.joins != 0 || plan.metadata || len(plan.traceExprs) > 0 {
		return nil, invalidQuery("", "filter: only the experiment columns can be filtered here")
	}
	s.notDeleted(w, q.ProjectID, observationDated)
	return w, nil
}

// ListExperiments returns a page of the experiments whose spans started in
// the window, the most recently active first.
func (s *Store) ListExperiments(ctx context.Context, q ExperimentSearch) ([]Experiment, error) {
	w, err := s.experimentWhere(q, false)
	if err != nil {
		return nil, err
	}
	metadata := "''"
	if q.Details {
		metadata = "anyIf(experiment_metadata, experiment_metadata != '')"
	}
	// Rows stored twice change none of these aggregates.
	query := "SELECT experiment_id, anyIf(experiment_name, experiment_name != ''), " +
		"anyIf(experiment_dataset_id, experiment_dataset_id != ''), " +
		"anyIf(experiment_description, experiment_description != ''), " + metadata + ", " +
		"min(start_time_us) AS first_start, max(greatest(end_time_us, start_time_us)) AS last_end, " +
		"uniqExactIf(experiment_item_id, experiment_item_id != '') " +
		"FROM " + s.ddl.name(observationsTable) + " WHERE " + w.String() + " GROUP BY experiment_id"
	args := w.args
	if q.After != nil {
		query += " HAVING last_end < ? OR (last_end = ? AND experiment_id < ?)"
		args = append(args, q.After.Time, q.After.Time, q.After.ID)
	}
	query += " ORDER BY last_end DESC, experiment_id DESC LIMIT ?"
	args = append(args, q.Limit)
	out := []Experiment{}
	err = s.query(ctx, query, args, func(r rowScanner) error {
		var e Experiment
		var items uint64
		if err := r.Scan(&e.ID, &e.Name, &e.DatasetID, &e.Description, &e.Metadata, &e.StartTime, &e.EndTime, &items); err != nil {
			return err
		}
		e.ItemCount = int64(items)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list experiments: %w", err)
	}
	return out, nil
}

// ListExperimentItems returns a page of the experiment items whose root
// span started in the window, newest first.
func (s *Store) ListExperimentItems(ctx context.Context, q ExperimentSearch) ([]ExperimentItem, error) {
	w, err := s.experimentWhere(q, true)
	if err != nil {
		return nil, err
	}
	if q.After != nil {
		w.add("(start_time_us < ? OR (start_time_us = ? AND id < ?))", q.After.Time, q.After.Time, q.After.ID)
	}
	columns := []string{"id", "trace_id", "start_time_us", "end_time_us", "level", "environment",
		"experiment_id", "experiment_name", "experiment_item_id", "experiment_dataset_id"}
	details := []string{"input_value", "output_value", "experiment_item_expected_output", "metadata",
		"experiment_item_metadata", "experiment_metadata", "experiment_description"}
	if q.Details {
		columns = append(columns, details...)
	}
	query := "SELECT " + strings.Join(columns, ", ") + " FROM " + s.ddl.name(observationsTable) + " WHERE " + w.String() +
		" ORDER BY start_time_us DESC, id DESC LIMIT 1 BY trace_id, id LIMIT ?"
	out := []ExperimentItem{}
	err = s.query(ctx, query, append(w.args, q.Limit), func(r rowScanner) error {
		var it ExperimentItem
		dest := []any{&it.ObservationID, &it.TraceID, &it.StartTime, &it.EndTime, &it.Level, &it.Environment,
			&it.ExperimentID, &it.ExperimentName, &it.ItemID, &it.DatasetID}
		if q.Details {
			dest = append(dest, &it.Input, &it.Output, &it.ExpectedOutput, &it.Metadata,
				&it.ItemMetadata, &it.ExperimentMetadata, &it.ExperimentDescription)
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		out = append(out, it)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list experiment items: %w", err)
	}
	return out, nil
}

// ScoresOf returns, for each key, at most perKey of the project's visible
// scores, newest first: by dataset run id (the scores of experiments) when
// byRun, else by trace id.
func (s *Store) ScoresOf(ctx context.Context, projectID string, keys []string, byRun bool, perKey int) (map[string][]Score, error) {
	out := map[string][]Score{}
	if len(keys) == 0 {
		return out, nil
	}
	column := "trace_id"
	if byRun {
		column = "dataset_run_id"
	}
	inner := &where{}
	inner.add("project_id = ?"+s.andRetained(projectID, scoreDated), projectID)
	inner.add(column+" IN "+placeholders(len(keys)), anySlice(keys)...)
	latest := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY event_ts DESC LIMIT 1 BY id",
		scoreReadColumns, s.ddl.name(scoresTable), inner)
	outer := &where{}
	s.visibleScores(outer, projectID)
	query := "SELECT " + scoreReadColumns + " FROM (" + latest + ") AS latest WHERE " + outer.String() +
		" ORDER BY timestamp_us DESC, id DESC LIMIT ? BY " + column
	args := append(append(inner.args, outer.args...), perKey)
	err := s.query(ctx, query, args, func(r rowScanner) error {
		sc, err := scanScore(r)
		if err != nil {
			return err
		}
		key := sc.TraceID
		if byRun {
			key = sc.DatasetRunID
		}
		out[key] = append(out[key], sc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read scores of %d %ss: %w", len(keys), column, err)
	}
	return out, nil
}
