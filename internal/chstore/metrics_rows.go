package chstore

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// sqlb builds one statement and its binds in step, so that every `?` meets
// its value in order.
type sqlb struct {
	b    strings.Builder
	args []any
}

func (q *sqlb) add(sql string, args ...any) *sqlb {
	q.b.WriteString(sql)
	q.args = append(q.args, args...)
	return q
}

// sub appends another statement's SQL and binds.
func (q *sqlb) sub(o *sqlb) *sqlb { return q.add(o.b.String(), o.args...) }

func (q *sqlb) String() string { return q.b.String() }

// window bounds a view's rows by its time field, Unix µs; a zero bound is
// open. ranges, when set, narrows observation rows further to those
// whole-second ranges [start, end): what a query reads raw beside a rollup.
type window struct {
	from, to int64
	ranges   [][2]time.Time
}

// rowsPlan is what the view's rows must carry for one query.
type rowsPlan struct {
	joins      join
	traceExprs []traceExpr
	metadata   bool // the JSON columns a metadata filter reads
	text       bool // the trace input and output a full-text filter reads
	// scores are the rows of score filters that may read the score
	// rollups, by score name (scoreRollupRows).
	scores map[string]*scoreRows
}

func (p *rowsPlan) needField(f field) {
	p.joins |= f.joins
	p.traceExprs = append(p.traceExprs, f.traceExprs...)
	if f.kind == kindObject {
		p.metadata = true
	}
	if slices.Contains(f.traceExprs, exprInput) {
		p.text = true
	}
}

func (p *rowsPlan) needMeasure(m measure) {
	p.joins |= m.joins
	p.traceExprs = append(p.traceExprs, m.traceExprs...)
}

// traceDimExprs are the trace aggregates the trace join brings.
var traceDimExprs = []traceExpr{exprName, exprTags, exprUserID, exprSessionID, exprRelease, exprVersion}

// observationMetricColumns are the observation columns the observations
// view reads: all but the large texts.
const observationMetricColumns = "trace_id, id, parent_id, type, name, start_time, start_time_us, end_time_us, " +
	"completion_start_time_us, level, status_message, model, usage_keys, usage_values, cost_keys, cost_values, total_cost, " +
	"prompt_name, prompt_version, environment, release, version, is_root, " +
	"experiment_id, experiment_name, experiment_dataset_id, experiment_item_id, experiment_item_root_id"

// traceMetricColumns are the observation columns the trace aggregates read.
const traceMetricColumns = "trace_id, id, name, start_time, start_time_us, end_time_us, trace_name, is_root, user_id, " +
	"session_id, release, version, environment, tags, public, total_cost, usage_keys, usage_values, event_ts"

const scoreMetricColumns = "id, trace_id, observation_id, session_id, dataset_run_id, environment, name, source, data_type, " +
	"config_id, queue_id, author_user_id, timestamp, timestamp_us, value, string_value, comment, event_ts"

// observationWindow narrows observation rows to a start-time window: the
// DateTime bound for the primary key, the µs bound for exactness.
func observationWindow(w window, slack int64) (string, []any) {
	var conds []string
	var args []any
	if w.from > 0 {
		conds = append(conds, "start_time >= toDateTime(?) AND start_time_us >= ?")
		args = append(args, (w.from-slack)/1e6, w.from-slack)
	}
	if w.to > 0 {
		conds = append(conds, "start_time < toDateTime(?) AND start_time_us < ?")
		args = append(args, ceilSeconds(w.to+slack), w.to+slack)
	}
	if len(w.ranges) > 0 {
		// With the days on toDate(start_time), the sort key's expression,
		// so that the primary key skips the other days.
		ranges := make([]string, len(w.ranges))
		for i, r := range w.ranges {
			ranges[i] = "(start_time >= toDateTime(?) AND start_time < toDateTime(?) AND toDate(start_time) >= ? AND toDate(start_time) <= ?)"
			args = append(args, r[0].Unix(), r[1].Unix(), r[0].UTC().Format(dayLayout), r[1].Add(-time.Second).UTC().Format(dayLayout))
		}
		conds = append(conds, "("+strings.Join(ranges, " OR ")+")")
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), args
}

func scoreWindow(w window) (string, []any) {
	var conds []string
	var args []any
	if w.from > 0 {
		conds = append(conds, "timestamp >= toDateTime(?) AND timestamp_us >= ?")
		args = append(args, w.from/1e6, w.from)
	}
	if w.to > 0 {
		conds = append(conds, "timestamp < toDateTime(?) AND timestamp_us < ?")
		args = append(args, ceilSeconds(w.to), w.to)
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), args
}

// viewRows renders the subquery of one view's rows in the window, with the
// columns and joins the plan needs. Every table it reads is narrowed to the
// project, and deleted traces and scores are left out.
func (s *Store) viewRows(v view, projectID string, w window, plan rowsPlan) *sqlb {
	switch v.name {
	case ViewTraces:
		return s.traceRows(projectID, w, plan)
	case ViewObservations:
		return s.observationRows(projectID, w, plan)
	}
	return s.scoreRows(v, projectID, w, plan)
}

func (s *Store) observationRows(projectID string, w window, plan rowsPlan) *sqlb {
	columns := observationMetricColumns
	if plan.metadata {
		columns += ", metadata"
	}
	cond, args := observationWindow(w, 0)
	rows := &sqlb{}
	rows.add("SELECT "+columns+" FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND ", projectID).add(cond, args...)
	rows.add(" AND trace_id GLOBAL NOT IN (SELECT trace_id FROM "+s.ddl.name(deletedTracesTable)+" WHERE project_id = ?)"+
		s.andRetained(projectID, observationDated), projectID)
	// Rows stored twice are the same span; any one of them stands for it.
	rows.add(" LIMIT 1 BY trace_id, id")

	traceIDs := func() *sqlb {
		ids := &sqlb{}
		return ids.add("SELECT trace_id FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND ", projectID).add(cond, args...)
	}
	if plan.joins&joinTrace != 0 {
		rows = s.joinTraces(rows, columns, projectID, traceIDs())
		columns += ", " + aliases(traceDimExprs)
	}
	if plan.joins&joinScoreCount != 0 {
		rows = s.joinScoreCounts(rows, columns, projectID, traceIDs(), true)
	}
	return rows
}

func (s *Store) traceRows(projectID string, w window, plan rowsPlan) *sqlb {
	columns := traceMetricColumns
	if plan.metadata {
		columns += ", trace_metadata"
	}
	if plan.text {
		columns += ", trace_input, trace_output"
	}
	// A trace's timestamp is its first span's start: rows are read from a
	// lookback before the window so that a trace that began before it is
	// recognised and left out, and as long after it for its later spans.
	slack := int64(traceLookback / time.Microsecond)
	cond, args := observationWindow(w, slack)
	inner := &sqlb{}
	inner.add("SELECT "+columns+" FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND ", projectID).add(cond, args...)
	inner.add(" AND trace_id GLOBAL NOT IN (SELECT trace_id FROM "+s.ddl.name(deletedTracesTable)+" WHERE project_id = ?)"+
		s.andRetained(projectID, observationDated), projectID)
	exprs := dedupeExprs(append([]traceExpr{exprStart}, plan.traceExprs...))
	if countsRows(exprs) {
		inner.add(" LIMIT 1 BY trace_id, id")
	}

	rows := &sqlb{}
	rows.add("SELECT trace_id, " + selectList(exprs) + " FROM (").sub(inner).add(") GROUP BY trace_id")
	var having []string
	if w.from > 0 {
		having = append(having, "t_start >= ?")
		rows.args = append(rows.args, w.from)
	}
	if w.to > 0 {
		having = append(having, "t_start < ?")
		rows.args = append(rows.args, w.to)
	}
	if len(having) > 0 {
		rows.add(" HAVING " + strings.Join(having, " AND "))
	}
	if plan.joins&joinScoreCount != 0 {
		ids := &sqlb{}
		ids.add("SELECT trace_id FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND ", projectID).add(cond, args...)
		rows = s.joinScoreCounts(rows, "trace_id, "+aliases(exprs), projectID, ids, false)
	}
	return rows
}

func (s *Store) scoreRows(v view, projectID string, w window, plan rowsPlan) *sqlb {
	cond, args := scoreWindow(w)
	latest := &sqlb{}
	latest.add("SELECT "+scoreMetricColumns+", metadata FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ?"+
		s.andRetained(projectID, scoreDated)+" AND ", projectID).add(cond, args...)
	latest.add(" ORDER BY event_ts DESC LIMIT 1 BY id")
	visible := &where{}
	s.visibleScores(visible, projectID)
	if v.dataType != "" {
		visible.add("data_type = ?", v.dataType)
	}
	columns := scoreMetricColumns + ", metadata"
	rows := &sqlb{}
	rows.add("SELECT "+columns+" FROM (").sub(latest).add(") WHERE "+visible.String(), visible.args...)

	traceIDs := func() *sqlb {
		ids := &sqlb{}
		return ids.add("SELECT trace_id FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ? AND trace_id != '' AND ", projectID).add(cond, args...)
	}
	if plan.joins&joinTrace != 0 {
		rows = s.joinTraces(rows, columns, projectID, traceIDs())
		columns += ", " + aliases(traceDimExprs)
	}
	if plan.joins&joinObservation != 0 {
		ids := traceIDs()
		days := &sqlb{}
		days.add("SELECT day FROM "+s.ddl.name(traceIndexTable)+" WHERE project_id = ? AND trace_id IN (", projectID).sub(ids).add(")")
		obs := &sqlb{}
		obs.add("SELECT trace_id, id AS observation_id, name AS ob_name, model AS ob_model, prompt_name AS ob_prompt_name, "+
			"prompt_version AS ob_prompt_version FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND toDate(start_time) IN (", projectID).
			sub(days).add(") AND trace_id IN (").sub(traceIDs()).add(") LIMIT 1 BY trace_id, id")
		joined := &sqlb{}
		joined.add("SELECT " + columns + ", ob_name, ob_model, ob_prompt_name, ob_prompt_version FROM (").sub(rows).
			add(") AS rows ANY LEFT JOIN (").sub(obs).add(") AS joined USING (trace_id, observation_id)")
		rows = joined
	}
	return rows
}

// joinTraces adds the trace aggregates of traceDimExprs to rows, over all of
// each trace's spans: the trace index narrows the read to their days.
func (s *Store) joinTraces(rows *sqlb, columns, projectID string, traceIDs *sqlb) *sqlb {
	days := &sqlb{}
	days.add("SELECT day FROM "+s.ddl.name(traceIndexTable)+" WHERE project_id = ? AND trace_id IN (", projectID).sub(traceIDs).add(")")
	traces := &sqlb{}
	traces.add("SELECT trace_id, "+selectList(traceDimExprs)+" FROM "+s.ddl.name(observationsTable)+
		" WHERE project_id = ? AND toDate(start_time) IN (", projectID).sub(days).add(") AND trace_id IN (").sub(traceIDs).add(") GROUP BY trace_id")
	joined := &sqlb{}
	return joined.add("SELECT " + columns + ", " + aliases(traceDimExprs) + " FROM (").sub(rows).
		add(") AS rows ANY LEFT JOIN (").sub(traces).add(") AS joined USING trace_id")
}

// joinScoreCounts adds sc_count, the number of visible scores of each row's
// observation (byObservation) or trace.
func (s *Store) joinScoreCounts(rows *sqlb, columns, projectID string, traceIDs *sqlb, byObservation bool) *sqlb {
	latest := &sqlb{}
	latest.add("SELECT id, trace_id, observation_id, event_ts FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ?"+
		s.andRetained(projectID, scoreDated)+" AND trace_id IN (", projectID).
		sub(traceIDs).add(") ORDER BY event_ts DESC LIMIT 1 BY id")
	visible := &where{}
	s.visibleScores(visible, projectID)
	keys, group := "trace_id", "trace_id"
	if byObservation {
		visible.add("observation_id != ''")
		keys, group = "(trace_id, id)", "trace_id, observation_id"
	}
	counts := &sqlb{}
	counts.add("SELECT "+group+", count() AS sc_count FROM (").sub(latest).add(") WHERE "+visible.String(), visible.args...).
		add(" GROUP BY " + group)
	if byObservation {
		counts = (&sqlb{}).add("SELECT trace_id, observation_id AS id, sc_count FROM (").sub(counts).add(")")
	}
	joined := &sqlb{}
	return joined.add("SELECT " + columns + ", sc_count FROM (").sub(rows).add(") AS rows ANY LEFT JOIN (").sub(counts).add(") AS joined USING " + keys)
}

// rowCountingExprs are the trace aggregates that a span stored twice would
// change; the others (first, last, latest set, any) see the same value
// twice, so traces read for them alone need no deduplication, the larger
// part of their cost.
var rowCountingExprs = []traceExpr{exprTotalCost, exprObsCount, exprTotalTokens, exprObsIDs, exprCreated, exprUpdated}

func countsRows(exprs []traceExpr) bool {
	for _, e := range exprs {
		for _, c := range rowCountingExprs {
			if e.alias == c.alias {
				return true
			}
		}
	}
	return false
}

func aliases(exprs []traceExpr) string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = e.alias
	}
	return strings.Join(out, ", ")
}

// scoreSubject renders the semi-join of a scores filter: the rows whose
// trace (traces view) or observation has visible scores of name matching
// cond, a condition over the score's value or string_value. single and
// grouped are the same condition over scoreRows' s, c and cats, of one row
// and of a group, used for the traces view when the plan holds rows of the
// score rollups for name.
func (s *Store) scoreSubject(v view, projectID, name string, plan *rowsPlan, having, single, grouped string, args ...any) (*sqlb, error) {
	if src := plan.scores[name]; src != nil && v.name == ViewTraces {
		return (&sqlb{}).add("trace_id GLOBAL IN (").sub(src.passingTraces(single, grouped, args...)).add(")"), nil
	}
	latest := &sqlb{}
	latest.add("SELECT id, trace_id, observation_id, value, string_value, event_ts FROM "+s.ddl.name(scoresTable)+
		" WHERE project_id = ? AND name = ?"+s.andRetained(projectID, scoreDated)+" ORDER BY event_ts DESC LIMIT 1 BY id", projectID, name)
	// Only the score tombstones: the rows this semi-join narrows leave out
	// deleted traces already, and each tombstone check over every score of
	// the name is a visible share of a list's time.
	visible := &where{}
	visible.add("(id, event_ts) GLOBAL NOT IN (SELECT id, event_ts FROM "+s.ddl.name(deletedScoresTable)+" WHERE project_id = ?)", projectID)
	q := &sqlb{}
	switch v.name {
	case ViewTraces:
		q.add("trace_id GLOBAL IN (SELECT trace_id FROM (").sub(latest).add(") WHERE "+visible.String(), visible.args...).
			add(" GROUP BY trace_id HAVING "+having+")", args...)
	case ViewObservations:
		q.add("(trace_id, id) GLOBAL IN (SELECT trace_id, observation_id FROM (").sub(latest).add(") WHERE "+visible.String(), visible.args...).
			add(" AND observation_id != '' GROUP BY trace_id, observation_id HAVING "+having+")", args...)
	default:
		return nil, fmt.Errorf("%w: score filters apply to traces and observations", ErrInvalid)
	}
	return q, nil
}
