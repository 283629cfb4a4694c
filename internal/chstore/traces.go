package chstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Trace order fields, in the Langfuse API's spelling.
const (
	TraceOrderTimestamp = "timestamp"
	TraceOrderID        = "id"
	TraceOrderName      = "name"
	TraceOrderUserID    = "userId"
	TraceOrderSessionID = "sessionId"
	TraceOrderRelease   = "release"
	TraceOrderVersion   = "version"
	TraceOrderPublic    = "public"
)

// TraceOrder sorts a trace list; the zero value means newest first.
type TraceOrder struct {
	Field string // one of the TraceOrder* constants
	Desc  bool
}

// TraceFilter selects a project's traces. Zero-valued fields do not filter.
type TraceFilter struct {
	ProjectID string
	UserID    string
	Name      string
	SessionID string
	// Tags must all be present on the trace.
	Tags []string
	// From (inclusive) and To (exclusive) bound the trace timestamp, Unix µs.
	From int64
	To   int64
	// Environment matches any of the listed environments.
	Environment []string
	Release     string
	Version     string
	// Filters are the structured `filter` parameter, over the traces view.
	Filters []Filter
	OrderBy TraceOrder
	// Page is 1-based; Limit defaults to 50.
	Page  int
	Limit int
}

const defaultLimit = 50

// traceLookback is how much earlier than a window's start the spans of a
// trace are read to find its true start. A trace whose first span began longer
// before the window than this may be listed with a later timestamp.
const traceLookback = time.Hour

// traceExpr is one trace-level field as an aggregate over the trace's rows.
type traceExpr struct{ alias, expr string }

// Trace-level fields. Each gives the same value when a row is stored twice, so
// queries that only select, filter or sort by them need no dedupe.
var (
	exprStart       = traceExpr{"t_start", "min(start_time_us)"}
	exprEnd         = traceExpr{"t_end", "max(greatest(end_time_us, start_time_us))"}
	exprName        = traceExpr{"t_name", "if((argMaxIf(trace_name, start_time_us, trace_name != '') AS t_name_set) != '', t_name_set, argMinIf(name, start_time_us, is_root = 1))"}
	exprUserID      = latestSet("t_user_id", "user_id")
	exprSessionID   = latestSet("t_session_id", "session_id")
	exprRelease     = latestSet("t_release", "release")
	exprVersion     = latestSet("t_version", "version")
	exprInput       = latestSet("t_input", "trace_input")
	exprOutput      = latestSet("t_output", "trace_output")
	exprEnvironment = traceExpr{"t_environment", "argMin(environment, start_time_us)"}
	exprTags        = traceExpr{"t_tags", "arraySort(groupUniqArrayArray(tags))"}
	exprPublic      = traceExpr{"t_public", "max(public)"}
	// Metadata objects in start order; Go merges them (no JSON functions on 18.16).
	exprMetadata = traceExpr{"t_metadata", "arrayMap(m -> m.2, arraySort(m -> m.1, groupArrayIf((start_time_us, trace_metadata), trace_metadata != '{}')))"}

	// These count rows, so they run over deduplicated rows only.
	exprTotalCost = traceExpr{"t_total_cost", "sum(total_cost)"}
	exprObsIDs    = traceExpr{"t_observation_ids", "arrayMap(o -> o.2, arraySort(groupArray((start_time_us, id))))"}
	exprCreated   = traceExpr{"t_created", "min(event_ts)"}
	exprUpdated   = traceExpr{"t_updated", "max(event_ts)"}
	// The first and last day a trace's spans started on, among those read.
	exprFirstDay = traceExpr{"t_first_day", "min(toDate(start_time))"}
	exprLastDay  = traceExpr{"t_last_day", "max(toDate(start_time))"}
	// exprLevel is the trace's most severe observation level.
	exprLevel = traceExpr{"t_level", "multiIf(countIf(level = 'ERROR') > 0, 'ERROR', countIf(level = 'WARNING') > 0, 'WARNING', " +
		"countIf(level = 'DEFAULT') > 0, 'DEFAULT', count() > 0, 'DEBUG', 'DEFAULT')"}
)

func latestSet(alias, column string) traceExpr {
	return traceExpr{alias, fmt.Sprintf("argMaxIf(%s, start_time_us, %s != '')", column, column)}
}

var traceOrderExprs = map[string]traceExpr{
	TraceOrderTimestamp: exprStart,
	TraceOrderID:        {"trace_id", ""},
	TraceOrderName:      exprName,
	TraceOrderUserID:    exprUserID,
	TraceOrderSessionID: exprSessionID,
	TraceOrderRelease:   exprRelease,
	TraceOrderVersion:   exprVersion,
	TraceOrderPublic:    exprPublic,
}

// traceDetailExprs are selected, in this order, by traceDetails.
var traceDetailExprs = []traceExpr{
	exprStart, exprEnd, exprName, exprUserID, exprSessionID, exprRelease, exprVersion,
	exprInput, exprOutput, exprEnvironment, exprTags, exprPublic, exprMetadata,
	exprTotalCost, exprObsIDs, exprCreated, exprUpdated, exprLevel, exprTotalTokens,
}

// traceDetailColumns are the observation columns traceDetailExprs read.
const traceDetailColumns = "trace_id, id, name, start_time_us, end_time_us, trace_name, is_root, user_id, session_id, " +
	"release, version, trace_input, trace_output, environment, tags, public, trace_metadata, total_cost, event_ts, level, usage_keys, usage_values"

func selectList(exprs []traceExpr) string {
	parts := make([]string, 0, len(exprs))
	for _, e := range exprs {
		if e.expr == "" {
			continue
		}
		parts = append(parts, e.expr+" AS "+e.alias)
	}
	return strings.Join(parts, ", ")
}

// notDeleted excludes tombstoned traces and rows past the project's
// retention, dated by the column dated ("" for rows whose table was
// narrowed to the retention already). GLOBAL makes the tombstone set come
// from the whole cluster when tables are Distributed; on one node it is a
// plain subquery.
func (s *Store) notDeleted(w *where, projectID, dated string) {
	w.add("trace_id GLOBAL NOT IN (SELECT trace_id FROM "+s.ddl.name(deletedTracesTable)+" WHERE project_id = ?)", projectID)
	if cond := s.retainedCond(projectID, dated); cond != "" {
		w.add(cond)
	}
}

// ListTraces returns one page of a project's traces and the number of traces
// that match the filter.
func (s *Store) ListTraces(ctx context.Context, f TraceFilter) ([]Trace, int, error) {
	return s.listTraces(ctx, f, true)
}

// listTraces is ListTraces, reading score filters from the score rollups
// where they are current when rollups is set.
func (s *Store) listTraces(ctx context.Context, f TraceFilter, rollups bool) ([]Trace, int, error) {
	if f.ProjectID == "" {
		return nil, 0, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	order := f.OrderBy
	if order.Field == "" {
		order = TraceOrder{Field: TraceOrderTimestamp, Desc: true}
	}
	orderExpr, ok := traceOrderExprs[order.Field]
	if !ok {
		return nil, 0, fmt.Errorf("%w: cannot order traces by %q", ErrInvalid, order.Field)
	}

	// The spans of a trace are read from a lookback before the window, to
	// find where it starts, to as long after it; the filters, the order and
	// the simple conditions all see the same spans.
	rows := &where{}
	rows.add("project_id = ?", f.ProjectID)
	cond, args := observationWindow(window{from: f.From, to: f.To}, int64(traceLookback/time.Microsecond))
	rows.add(cond, args...)
	s.notDeleted(rows, f.ProjectID, observationDated)

	exprs := []traceExpr{exprStart, orderExpr}
	having := &where{}
	if f.From > 0 {
		having.add("t_start >= ?", f.From)
	}
	if f.To > 0 {
		having.add("t_start < ?", f.To)
	}
	for _, c := range []struct {
		value string
		expr  traceExpr
	}{{f.UserID, exprUserID}, {f.Name, exprName}, {f.SessionID, exprSessionID}, {f.Release, exprRelease}, {f.Version, exprVersion}} {
		if c.value != "" {
			exprs = append(exprs, c.expr)
			having.add(c.expr.alias+" = ?", c.value)
		}
	}
	if len(f.Tags) > 0 {
		exprs = append(exprs, exprTags)
		having.add("hasAll(t_tags, ?)", f.Tags)
	}
	if len(f.Environment) > 0 {
		exprs = append(exprs, exprEnvironment)
		having.add("has(?, t_environment)", f.Environment)
	}
	// The structured filters join the same grouping: a score filter
	// narrows the spans before they are grouped, the others test the
	// trace aggregates they name.
	plan := rowsPlan{}
	if rollups {
		if err := s.planScoreRollups(ctx, &plan, f.ProjectID, f.Filters); err != nil {
			return nil, 0, err
		}
	}
	for _, flt := range f.Filters {
		cond, err := s.filterSQL(tracesView, f.ProjectID, flt, &plan)
		if err != nil {
			return nil, 0, err
		}
		if fl := tracesView.fields[flt.Column]; fl.kind == kindScoreNumber || fl.kind == kindScoreCategory {
			rows.add(cond.String(), cond.args...)
		} else {
			having.add(cond.String(), cond.args...)
		}
	}
	exprs = dedupeExprs(append(exprs, append(plan.traceExprs, exprFirstDay, exprLastDay)...))
	source := s.ddl.name(observationsTable) + " WHERE " + rows.String()
	if countsRows(exprs) {
		columns := traceMetricColumns
		if plan.metadata {
			columns += ", trace_metadata"
		}
		if plan.text {
			columns += ", trace_input, trace_output"
		}
		source = "(SELECT " + columns + " FROM " + source + " LIMIT 1 BY trace_id, id)"
	}
	grouped := fmt.Sprintf("SELECT trace_id, %s FROM %s GROUP BY trace_id", selectList(exprs), source)
	if len(having.conds) > 0 {
		grouped += " HAVING " + having.String()
	}
	args = append(rows.args, having.args...)

	// The total and the page in one pass over the matching traces: each
	// pass groups the window's spans by trace, which is most of the cost.
	sortArray := "arraySort"
	if order.Desc {
		sortArray = "arrayReverseSort"
	}
	offset, limit := pageOf(f.Page, f.Limit, defaultLimit)
	query := "SELECT total, arrayMap(t -> t.2, page), arrayReduce('min', arrayMap(t -> t.3, page)), arrayReduce('max', arrayMap(t -> t.4, page)) " +
		"FROM (SELECT count() AS total, arraySlice(" + sortArray + "(groupArray((" + orderExpr.alias + ", trace_id, t_first_day, t_last_day))), ?, ?) AS page FROM (" +
		grouped + ") AS matching)"
	var (
		total uint64
		ids   []string
		seen  dayRange
	)
	err := s.query(ctx, query, append([]any{offset + 1, limit}, args...), func(r rowScanner) error { return r.Scan(&total, &ids, &seen.first, &seen.last) })
	if err != nil {
		return nil, 0, fmt.Errorf("list traces: %w", err)
	}
	traces, err := s.tracePage(ctx, f.ProjectID, ids, seen)
	if err != nil {
		return nil, 0, err
	}
	return traces, int(total), nil
}

// tracePage derives the traces of ids, in that order. seen is the days of
// the traces' spans that the list read: their details are read for those
// days while trace_index is asked for all their days, and read again only
// when the traces have spans on other days too, which saves the page a
// round trip after the index lookup.
func (s *Store) tracePage(ctx context.Context, projectID string, ids []string, seen dayRange) ([]Trace, error) {
	if len(ids) == 0 {
		return []Trace{}, nil
	}
	guess := async(func() (map[string]Trace, error) { return s.traceDetails(ctx, projectID, ids, seen) })
	days, err := s.traceDays(ctx, projectID, ids)
	details, detailsErr := guess()
	if errors.Is(err, ErrNotFound) {
		// Deleted between the two reads.
		return []Trace{}, nil
	}
	if err != nil {
		return nil, err
	}
	err = detailsErr
	if days.first.Before(seen.first) || days.last.After(seen.last) {
		details, err = s.traceDetails(ctx, projectID, ids, days)
	}
	if err != nil {
		return nil, err
	}
	traces := make([]Trace, 0, len(ids))
	for _, id := range ids {
		if t, ok := details[id]; ok {
			traces = append(traces, t)
		}
	}
	return traces, nil
}

// dedupeExprs drops repeated expressions while keeping order.
func dedupeExprs(exprs []traceExpr) []traceExpr {
	seen := map[string]bool{}
	out := exprs[:0:0]
	for _, e := range exprs {
		if !seen[e.alias] && e.expr != "" {
			seen[e.alias] = true
			out = append(out, e)
		}
	}
	return out
}

func ceilSeconds(us int64) int64 { return (us + 999_999) / 1e6 }

// traceDetails derives the full Trace for each id from its deduplicated rows.
func (s *Store) traceDetails(ctx context.Context, projectID string, ids []string, days dayRange) (map[string]Trace, error) {
	w := &where{}
	w.add("project_id = ?"+s.andRetained(projectID, observationDated), projectID)
	days.restrict(w)
	w.add("trace_id IN "+placeholders(len(ids)), anySlice(ids)...)
	query := fmt.Sprintf("SELECT trace_id, %s FROM (SELECT %s FROM %s WHERE %s ORDER BY event_ts DESC LIMIT 1 BY trace_id, id) AS rows GROUP BY trace_id",
		selectList(traceDetailExprs), traceDetailColumns, s.ddl.name(observationsTable), w)
	out := make(map[string]Trace, len(ids))
	err := s.query(ctx, query, w.args, func(r rowScanner) error {
		var (
			t         = Trace{ProjectID: projectID}
			end       int64
			public    uint8
			metadata  []string
			createdAt uint64
			updatedAt uint64
		)
		err := r.Scan(&t.ID, &t.Timestamp, &end, &t.Name, &t.UserID, &t.SessionID, &t.Release, &t.Version,
			&t.Input, &t.Output, &t.Environment, &t.Tags, &public, &metadata,
			&t.TotalCost, &t.ObservationIDs, &createdAt, &updatedAt, &t.Level, &t.TotalTokens)
		if err != nil {
			return err
		}
		t.Public = public == 1
		t.Metadata = mergeJSONObjects(metadata)
		t.LatencySeconds = float64(end-t.Timestamp) / 1e6
		t.CreatedAt, t.UpdatedAt = int64(createdAt), int64(updatedAt)
		out[t.ID] = t
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	return out, nil
}

// mergeJSONObjects merges JSON object texts in order, later keys winning.
// Texts that are not JSON objects are skipped.
func mergeJSONObjects(texts []string) string {
	merged := map[string]json.RawMessage{}
	for _, text := range texts {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &obj) != nil {
			continue
		}
		for k, v := range obj {
			merged[k] = v
		}
	}
	out, err := json.Marshal(merged)
	if err != nil {
		return "{}"
	}
	return string(out)
}

// GetTrace returns a trace with its observations, or ErrNotFound.
func (s *Store) GetTrace(ctx context.Context, projectID, traceID string) (TraceWithObservations, error) {
	return s.getTrace(ctx, projectID, traceID, observationReadColumns)
}

// maxTracesByID bounds the ids of one GetTraces call.
const maxTracesByID = 1000

// GetTraces reads many traces at once, without their observations: what a
// comparison of dataset runs shows per item. Ids that name no (live) trace
// are left out of the map.
func (s *Store) GetTraces(ctx context.Context, projectID string, traceIDs []string) (map[string]Trace, error) {
	if len(traceIDs) == 0 {
		return map[string]Trace{}, nil
	}
	if len(traceIDs) > maxTracesByID {
		return nil, fmt.Errorf("%w: at most %d traces at once", ErrInvalid, maxTracesByID)
	}
	days, err := s.traceDays(ctx, projectID, traceIDs)
	if errors.Is(err, ErrNotFound) {
		return map[string]Trace{}, nil
	}
	if err != nil {
		return nil, err
	}
	out, err := s.traceDetails(ctx, projectID, traceIDs, days)
	if err != nil {
		return nil, err
	}
	// The days come from live traces only; a deleted one among them still
	// has its rows until they are purged.
	w := &where{}
	w.add("project_id = ?", projectID)
	w.add("trace_id IN "+placeholders(len(traceIDs)), anySlice(traceIDs)...)
	err = s.query(ctx, "SELECT trace_id FROM "+s.ddl.name(deletedTracesTable)+" WHERE "+w.String(), w.args, func(r rowScanner) error {
		var id string
		if err := r.Scan(&id); err != nil {
			return err
		}
		delete(out, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deleted traces: %w", err)
	}
	return out, nil
}

// GetTraceOutline is GetTrace without the observations' inputs, outputs,
// metadata and model parameters: what a trace's tree and timeline need, a
// small part of the bytes of a large trace. GetTraceObservation reads one
// observation whole.
func (s *Store) GetTraceOutline(ctx context.Context, projectID, traceID string) (TraceWithObservations, error) {
	return s.getTrace(ctx, projectID, traceID, observationOutlineColumns)
}

func (s *Store) getTrace(ctx context.Context, projectID, traceID, columns string) (TraceWithObservations, error) {
	if projectID == "" || traceID == "" {
		return TraceWithObservations{}, fmt.Errorf("%w: project id and trace id are required", ErrInvalid)
	}
	days, err := s.traceDays(ctx, projectID, []string{traceID})
	if err != nil {
		return TraceWithObservations{}, err
	}
	details, err := s.traceDetails(ctx, projectID, []string{traceID}, days)
	if err != nil {
		return TraceWithObservations{}, err
	}
	t, ok := details[traceID]
	if !ok {
		return TraceWithObservations{}, fmt.Errorf("trace %s: %w", traceID, ErrNotFound)
	}
	w := &where{}
	w.add("project_id = ?"+s.andRetained(projectID, observationDated), projectID)
	days.restrict(w)
	w.add("trace_id = ?", traceID)
	obs, err := s.observationColumns(ctx, columns, w, "start_time_us, id", 0, 0)
	if err != nil {
		return TraceWithObservations{}, err
	}
	return TraceWithObservations{Trace: t, Observations: obs}, nil
}

// GetTraceObservation returns one observation of a trace, whole, or
// ErrNotFound.
func (s *Store) GetTraceObservation(ctx context.Context, projectID, traceID, observationID string) (Observation, error) {
	if projectID == "" || traceID == "" || observationID == "" {
		return Observation{}, fmt.Errorf("%w: project, trace and observation ids are required", ErrInvalid)
	}
	days, err := s.traceDays(ctx, projectID, []string{traceID})
	if err != nil {
		return Observation{}, err
	}
	w := &where{}
	w.add("project_id = ?", projectID)
	days.restrict(w)
	w.add("trace_id = ? AND id = ?", traceID, observationID)
	s.notDeleted(w, projectID, observationDated)
	obs, err := s.observations(ctx, w, "start_time_us, id", 0, 0)
	if err != nil {
		return Observation{}, err
	}
	if len(obs) == 0 {
		return Observation{}, fmt.Errorf("observation %s of trace %s: %w", observationID, traceID, ErrNotFound)
	}
	return obs[0], nil
}

// dayRange is the first and the last day (UTC) on which spans of some traces started.
type dayRange struct{ first, last time.Time }

// restrict narrows a read of observations to the days. The condition on
// toDate(start_time), the sort key's own expression, lets 18.16 narrow to the
// traces within each day, which a range on start_time alone does not; the
// start_time range prunes partitions.
func (d dayRange) restrict(w *where) {
	const day = 24 * 60 * 60
	w.add("start_time >= toDateTime(?) AND start_time < toDateTime(?)", d.first.Unix(), d.last.Unix()+day)
	w.add("toDate(start_time) >= ? AND toDate(start_time) <= ?", d.first.Format(time.DateOnly), d.last.Format(time.DateOnly))
}

// traceDays looks up the days the traces' spans started on. Deleted traces
// have none; ErrNotFound when none of the traces has any.
func (s *Store) traceDays(ctx context.Context, projectID string, traceIDs []string) (dayRange, error) {
	w := &where{}
	w.add("project_id = ?", projectID)
	w.add("trace_id IN "+placeholders(len(traceIDs)), anySlice(traceIDs)...)
	s.notDeleted(w, projectID, dayColumn)
	var (
		n    uint64
		days dayRange
	)
	err := s.query(ctx, "SELECT count(), min(day), max(day) FROM "+s.ddl.name(traceIndexTable)+" WHERE "+w.String(), w.args,
		func(r rowScanner) error { return r.Scan(&n, &days.first, &days.last) })
	if err != nil {
		return dayRange{}, fmt.Errorf("look up traces: %w", err)
	}
	if n == 0 {
		return dayRange{}, fmt.Errorf("trace %s: %w", strings.Join(traceIDs, ", "), ErrNotFound)
	}
	return days, nil
}
