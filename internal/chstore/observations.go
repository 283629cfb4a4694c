package chstore

import (
	"context"
	"fmt"
	"strings"
)

// ObservationFilter selects a project's observations. Zero-valued fields do not filter.
type ObservationFilter struct {
	ProjectID string
	TraceID   string
	Name      string
	// UserID and SessionID match observations of traces that carried this
	// user id or session id.
	UserID    string
	SessionID string
	Type      string
	Level     string
	ParentID  string
	// Root, when set, keeps only the trace roots (true) or only the other
	// observations (false). A root has no parent or was marked the trace root.
	Root *bool
	// Environment matches any of the listed environments.
	Environment []string
	// From (inclusive) and To (exclusive) bound the start time, Unix µs.
	From    int64
	To      int64
	Version string
	// Filters are the structured `filter` parameter, over the observations view.
	Filters []Filter
	// Page > 0 selects page mode: a 1-based page plus the total count.
	// Otherwise the list runs in cursor mode, starting after Cursor (nil: from the newest).
	Page   int
	Cursor *ObservationCursor
	// Limit defaults to 50.
	Limit int
}

// ObservationCursor is the position after the last observation of a page, in
// the list order (newest start first).
type ObservationCursor struct {
	StartTime int64
	TraceID   string
	ID        string
}

// ObservationPage is one page of observations.
type ObservationPage struct {
	Observations []Observation
	// Total counts all matching observations in page mode; -1 in cursor mode.
	Total int
	// Next is where the following page starts in cursor mode; nil when this page was the last.
	Next *ObservationCursor
}

// observationReadColumns are read in scanObservation's order.
var observationReadColumns = strings.Join([]string{
	"project_id", "trace_id", "id", "parent_id", "type", "name",
	"start_time_us", "end_time_us", "completion_start_time_us",
	"level", "status_message", "input_value", "output_value", "metadata",
	"model", "model_parameters", "usage_keys", "usage_values", "cost_keys", "cost_values",
	"prompt_name", "prompt_version", "environment", "release", "version",
	"trace_name", "user_id", "session_id", "tags", "public", "trace_metadata", "trace_input", "trace_output", "is_root",
	"service_name", "scope_name", "scope_version", "sample_rate", "event_ts",
}, ", ")

// observationOutlineColumns read the same columns without the text of
// inputs, outputs and metadata: what drawing a trace's tree needs.
var observationOutlineColumns = strings.NewReplacer(
	"status_message, input_value, output_value, metadata,", "status_message, '' AS input_value, '' AS output_value, '{}' AS metadata,",
	"model_parameters,", "'' AS model_parameters,",
	"trace_metadata, trace_input, trace_output,", "'{}' AS trace_metadata, '' AS trace_input, '' AS trace_output,",
).Replace(observationReadColumns)

func scanObservation(r rowScanner) (Observation, error) {
	var (
		o                   Observation
		usageKeys, costKeys []string
		usageValues         []int64
		costValues          []float64
		public, isRoot      uint8
		storedAt            uint64
	)
	err := r.Scan(
		&o.ProjectID, &o.TraceID, &o.ID, &o.ParentID, &o.Type, &o.Name,
		&o.StartTime, &o.EndTime, &o.CompletionStartTime,
		&o.Level, &o.StatusMessage, &o.Input, &o.Output, &o.Metadata,
		&o.Model, &o.ModelParameters, &usageKeys, &usageValues, &costKeys, &costValues,
		&o.PromptName, &o.PromptVersion, &o.Environment, &o.Release, &o.Version,
		&o.TraceName, &o.UserID, &o.SessionID, &o.Tags, &public, &o.TraceMetadata, &o.TraceInput, &o.TraceOutput, &isRoot,
		&o.ServiceName, &o.ScopeName, &o.ScopeVersion, &o.SampleRate, &storedAt,
	)
	if err != nil {
		return Observation{}, err
	}
	o.UsageDetails = pairsMap(usageKeys, usageValues)
	o.CostDetails = pairsMap(costKeys, costValues)
	o.Public, o.IsRoot = public == 1, isRoot == 1
	o.StoredAt = int64(storedAt)
	return o, nil
}

func pairsMap[V any](keys []string, values []V) map[string]V {
	m := make(map[string]V, len(keys))
	for i, k := range keys {
		if i < len(values) {
			m[k] = values[i]
		}
	}
	return m
}

// observations reads the newest stored version of each matching observation,
// sorted by orderBy, with LIMIT offset, limit when limit > 0.
func (s *Store) observations(ctx context.Context, w *where, orderBy string, offset, limit int) ([]Observation, error) {
	return s.observationColumns(ctx, observationReadColumns, w, orderBy, offset, limit)
}

func (s *Store) observationColumns(ctx context.Context, columns string, w *where, orderBy string, offset, limit int) ([]Observation, error) {
	table := s.ddl.name(observationsTable)
	query := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s, event_ts DESC LIMIT 1 BY trace_id, id",
		columns, table, w, orderBy)
	args := w.args
	if limit > 0 {
		// A page is chosen on the key columns first and only its rows are
		// read whole: sorting every matching row with its input and output
		// would not fit in memory for a large project.
		page := fmt.Sprintf("SELECT trace_id, id FROM %s WHERE %s ORDER BY %s, event_ts DESC LIMIT 1 BY trace_id, id LIMIT ?, ?",
			table, w, orderBy)
		query = fmt.Sprintf("SELECT %s FROM %s WHERE %s AND (trace_id, id) GLOBAL IN (%s) ORDER BY %s, event_ts DESC LIMIT 1 BY trace_id, id",
			columns, table, w, page, orderBy)
		args = append(append(append([]any{}, w.args...), w.args...), offset, limit)
	}
	out := []Observation{}
	err := s.query(ctx, query, args, func(r rowScanner) error {
		o, err := scanObservation(r)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read observations: %w", err)
	}
	return out, nil
}

// GetObservation returns one observation by id, or ErrNotFound.
func (s *Store) GetObservation(ctx context.Context, projectID, observationID string) (Observation, error) {
	if projectID == "" || observationID == "" {
		return Observation{}, fmt.Errorf("%w: project id and observation id are required", ErrInvalid)
	}
	w := &where{}
	w.add("project_id = ? AND id = ?", projectID, observationID)
	s.notDeleted(w, projectID, observationDated)
	obs, err := s.observations(ctx, w, "start_time_us DESC, trace_id", 0, 1)
	if err != nil {
		return Observation{}, err
	}
	if len(obs) == 0 {
		return Observation{}, fmt.Errorf("observation %s: %w", observationID, ErrNotFound)
	}
	return obs[0], nil
}

// ListObservations returns a page of a project's observations, newest start first.
func (s *Store) ListObservations(ctx context.Context, f ObservationFilter) (ObservationPage, error) {
	if f.ProjectID == "" {
		return ObservationPage{}, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	w := &where{}
	w.add("project_id = ?", f.ProjectID)
	if f.From > 0 {
		w.add("start_time >= toDateTime(?) AND start_time_us >= ?", f.From/1e6, f.From)
	}
	if f.To > 0 {
		w.add("start_time < toDateTime(?) AND start_time_us < ?", ceilSeconds(f.To), f.To)
	}
	for _, c := range []struct{ column, value string }{
		{"trace_id", f.TraceID}, {"name", f.Name}, {"type", f.Type}, {"level", f.Level},
		{"parent_id", f.ParentID}, {"version", f.Version},
	} {
		if c.value != "" {
			w.add(c.column+" = ?", c.value)
		}
	}
	if len(f.Environment) > 0 {
		w.add("has(?, environment)", f.Environment)
	}
	for _, c := range []struct{ column, value string }{{"user_id", f.UserID}, {"session_id", f.SessionID}} {
		if c.value != "" {
			w.add("trace_id GLOBAL IN (SELECT trace_id FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND "+c.column+" = ?)",
				f.ProjectID, c.value)
		}
	}
	switch {
	case f.Root == nil:
	case *f.Root:
		w.add("(is_root = 1 OR parent_id = '')")
	default:
		w.add("is_root = 0 AND parent_id != ''")
	}
	s.notDeleted(w, f.ProjectID, observationDated)
	if len(f.Filters) > 0 {
		cond, args, err := s.filteredKeys(ViewObservations, f.ProjectID, window{from: f.From, to: f.To}, f.Filters, "trace_id, id")
		if err != nil {
			return ObservationPage{}, err
		}
		w.add(cond, args...)
	}

	const order = "start_time_us DESC, trace_id DESC, id DESC"
	_, limit := pageOf(1, f.Limit, defaultLimit)
	if f.Page > 0 {
		var total uint64
		err := s.query(ctx, "SELECT uniqExact(trace_id, id) FROM "+s.ddl.name(observationsTable)+" WHERE "+w.String(), w.args,
			func(r rowScanner) error { return r.Scan(&total) })
		if err != nil {
			return ObservationPage{}, fmt.Errorf("count observations: %w", err)
		}
		offset, limit := pageOf(f.Page, f.Limit, defaultLimit)
		obs, err := s.observations(ctx, w, order, offset, limit)
		if err != nil {
			return ObservationPage{}, err
		}
		return ObservationPage{Observations: obs, Total: int(total)}, nil
	}

	if c := f.Cursor; c != nil {
		w.add("(start_time_us, trace_id, id) < (?, ?, ?)", c.StartTime, c.TraceID, c.ID)
	}
	obs, err := s.observations(ctx, w, order, 0, limit)
	if err != nil {
		return ObservationPage{}, err
	}
	page := ObservationPage{Observations: obs, Total: -1}
	if len(obs) == limit {
		last := obs[len(obs)-1]
		page.Next = &ObservationCursor{StartTime: last.StartTime, TraceID: last.TraceID, ID: last.ID}
	}
	return page, nil
}
