package chstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// Rollups of the observations view: per project, hour of a closed day and
// combination of the low-cardinality dimensions, the count and the sums,
// minimums and maximums of the additive measures, computed from
// deduplicated, undeleted rows by RefreshRollups, a background job (no
// work at insert). A metrics query whose shape they answer reads them for
// the whole hours of its window that lie in closed days whose rollup is
// current, and the raw rows for the rest (partial hours at the window's
// edges, today, and any day that changed since it was rolled up), then
// combines both in one statement. Rows are per
// hour so that a window that starts or ends within a day, as a dashboard's
// "last 30 days" does, leaves at most an hour at each edge to read raw.
//
// A day's rollup is current when the day's stored rows still count and
// weigh (sum of event_ts) what they did when it was computed, and the
// number of its tombstoned traces is unchanged: a late span, a replayed
// duplicate, a purge, a retention delete or a new tombstone all change one
// of them. Every query checks this before reading a rollup, so answers
// stay exact whatever the job's lag; the lag only decides how much is read
// raw.

var (
	// metricsDaily holds the rollup rows of every computation, each under
	// its generation; metricsDailyDays names the generation that is
	// current for a day, with the fingerprint it was computed from.
	metricsDailyTable = table{
		name: "metrics_daily",
		columns: `
	project_id String,
	day Date,
	generation UInt64,
	hour DateTime('UTC'),
	type LowCardinality(String),
	name String,
	environment LowCardinality(String),
	model LowCardinality(String),
	level LowCardinality(String),
	prompt_name String,
	prompt_version Int64,
	release String,
	version String,
	rows UInt64` + rollupMeasureColumns(),
		partition:   "toYYYYMM(day)",
		orderBy:     "project_id, day, generation",
		granularity: 8192,
		shardKey:    "cityHash64(project_id)",
	}
	metricsDailyDaysTable = table{
		name: "metrics_daily_days",
		columns: `
	project_id String,
	day Date,
	generation UInt64,
	rows UInt64,
	event_ts_sum UInt64,
	deleted UInt64,
	computed_at DateTime('UTC')`,
		version:     "generation",
		orderBy:     "project_id, day",
		granularity: 8192,
		shardKey:    "cityHash64(project_id)",
	}
)

// rollupDimensions maps the observations view's dimensions the rollup
// keeps to its columns. Their field expressions read only these columns,
// so dimension and filter SQL runs unchanged over rollup rows.
var rollupDimensions = map[string]bool{
	"name": true, "type": true, "environment": true, "providedModelName": true, "level": true,
	"promptName": true, "promptVersion": true, "release": true, "version": true,
}

const rollupDimensionColumns = "type, name, environment, model, level, prompt_name, prompt_version, release, version"

// rollupMeasure is a measure the rollup keeps: <col>_sum, _min, _max and,
// for measures that may be NULL, _count (else rows counts them).
type rollupMeasure struct {
	col      string
	nullable bool
}

var rollupMeasures = map[string]rollupMeasure{
	"totalCost":        {col: "total_cost"},
	"inputCost":        {col: "input_cost"},
	"outputCost":       {col: "output_cost"},
	"inputTokens":      {col: "input_tokens"},
	"outputTokens":     {col: "output_tokens"},
	"totalTokens":      {col: "total_tokens"},
	"latency":          {col: "latency", nullable: true},
	"timeToFirstToken": {col: "first_token", nullable: true},
	"streamingLatency": {col: "streaming", nullable: true},
}

// rollupAggregations are those that combine from per-day partials.
var rollupAggregations = map[string]bool{"sum": true, "avg": true, "count": true, "min": true, "max": true}

func rollupMeasureColumns() string {
	var b strings.Builder
	for _, n := range keysInOrder(nil, rollupMeasures) {
		m := rollupMeasures[n]
		fmt.Fprintf(&b, ",\n\t%[1]s_sum Float64,\n\t%[1]s_min Nullable(Float64),\n\t%[1]s_max Nullable(Float64)", m.col)
		if m.nullable {
			fmt.Fprintf(&b, ",\n\t%s_count UInt64", m.col)
		}
	}
	return b.String()
}

// rollupCount is the rollup column that counts a measure's values.
func (m rollupMeasure) count() string {
	if m.nullable {
		return m.col + "_count"
	}
	return "rows"
}

// partial is one column of a metric's partial aggregate: raw over
// observation rows, rolled over rollup rows; final combines the partials.
type partial struct{ raw, rolled string }

// rollupMetric is how one metric is computed from partials.
type rollupMetric struct {
	partials []partial
	// final renders the metric from its partials' aliases.
	final func(p []string) string
}

// planRollupMetric returns how a metric combines from partials, or false
// when the rollup cannot answer it.
func planRollupMetric(m Metric, ms measure) (rollupMetric, bool) {
	if m.Measure == "count" {
		return rollupMetric{partials: []partial{{raw: "count()", rolled: "sum(rows)"}},
			final: func(p []string) string { return "sum(" + p[0] + ")" }}, true
	}
	rm, ok := rollupMeasures[m.Measure]
	if !ok || !rollupAggregations[m.Aggregation] {
		return rollupMetric{}, false
	}
	x := ms.expr
	count := partial{raw: "count(" + x + ")", rolled: "sum(" + rm.count() + ")"}
	sum := partial{raw: "CAST(sum(" + x + ") AS Nullable(Float64))", rolled: "CAST(sum(" + rm.col + "_sum) AS Nullable(Float64))"}
	switch m.Aggregation {
	case "count":
		return rollupMetric{partials: []partial{count}, final: func(p []string) string { return "sum(" + p[0] + ")" }}, true
	case "sum":
		// Over no values a sum is 0, as on the raw path.
		return rollupMetric{partials: []partial{sum}, final: func(p []string) string {
			return "CAST(ifNull(sum(" + p[0] + "), 0) AS Nullable(Float64))"
		}}, true
	case "avg":
		return rollupMetric{partials: []partial{sum, count}, final: func(p []string) string {
			return "if(sum(" + p[1] + ") = 0, NULL, CAST(sum(" + p[0] + ") / sum(" + p[1] + ") AS Nullable(Float64)))"
		}}, true
	}
	// min or max; NULL over no values, as 18.16 answers 0 for a side
	// without rows when nothing groups it.
	f := m.Aggregation
	ext := partial{
		raw:    "if(" + count.raw + " = 0, NULL, CAST(" + f + "(" + x + ") AS Nullable(Float64)))",
		rolled: "if(" + count.rolled + " = 0, NULL, CAST(" + f + "(" + rm.col + "_" + f + ") AS Nullable(Float64)))",
	}
	return rollupMetric{partials: []partial{ext, count}, final: func(p []string) string {
		return "if(sum(" + p[1] + ") = 0, NULL, CAST(" + f + "(" + p[0] + ") AS Nullable(Float64)))"
	}}, true
}

// rollupPlan is what a query that the rollup can answer needs to be
// rendered as the combination of rollup and raw rows.
type rollupPlan struct {
	projectID  string
	dimSelects []string // expr AS dN
	groupBy    []string
	metrics    []rollupMetric
	conds      *sqlb // the filters, over either kind of row
	plan       rowsPlan
	selects    []string // the outer select: dN, td, finals AS mN
	tail       *sqlb    // GROUP BY, ORDER BY, LIMIT of the outer query
}

// rollupGranularity reports whether buckets of g are unions of hours.
func rollupGranularity(g string) bool {
	return g != "minute"
}

// dayFingerprint is what a day's rollup was computed from.
type dayFingerprint struct {
	rows, eventTSSum, deleted uint64
}

// freshDay is a day whose current rollup generation may be read.
type freshDay struct {
	day        time.Time
	generation uint64
}

const dayLayout = time.DateOnly

// rollupSpan is the part of a window that rollups may answer: the whole
// hours [from, to) of the window that lie in closed days (before today,
// UTC) and within the project's retention, and those days.
type rollupSpan struct {
	from, to time.Time
	days     []time.Time
}

func (s *Store) rollupSpan(projectID string, from, to, now time.Time) rollupSpan {
	first := from.UTC().Truncate(time.Hour)
	if first.Before(from) {
		first = first.Add(time.Hour)
	}
	if since := s.retainedSince(projectID); since > 0 && first.Unix() < since {
		// The hour the retention starts in is partly expired: raw.
		first = time.Unix(since, 0).UTC().Truncate(time.Hour).Add(time.Hour)
	}
	end := to.UTC().Truncate(time.Hour)
	if today := now.UTC().Truncate(24 * time.Hour); end.After(today) {
		end = today
	}
	span := rollupSpan{from: first, to: end}
	for d := first.Truncate(24 * time.Hour); d.Before(end); d = d.AddDate(0, 0, 1) {
		span.days = append(span.days, d)
	}
	return span
}

// freshDays returns the candidate days whose rollup is current.
func (s *Store) freshDays(ctx context.Context, projectID string, days []time.Time) ([]freshDay, error) {
	if len(days) == 0 {
		return nil, nil
	}
	first, last := days[0], days[len(days)-1]
	now, err := s.dayFingerprints(ctx, projectID, first, last)
	if err != nil {
		return nil, err
	}
	stored, err := s.storedRollupDays(ctx, projectID, first, last)
	if err != nil {
		return nil, err
	}
	var fresh []freshDay
	for _, d := range days {
		key := d.Format(dayLayout)
		if st, ok := stored[projectID][key]; ok && st.fp == now[projectID][key] {
			fresh = append(fresh, freshDay{day: d, generation: st.generation})
		}
	}
	return fresh, nil
}

// dayFingerprints reads, per project, the fingerprint of its days in
// [first, last]; projectID "" reads all projects. Days without rows are
// absent (the zero fingerprint).
func (s *Store) dayFingerprints(ctx context.Context, projectID string, first, last time.Time) (map[string]map[string]dayFingerprint, error) {
	lo, hi := first.Format(dayLayout), last.Format(dayLayout)
	// One project's days group by day alone: a String key beside the Date
	// would slow the pass over every row of a dashboard's window.
	// GLOBAL: on a cluster both tables are Distributed, and 18.16 refuses a
	// Distributed subquery inside a Distributed query without it.
	project, scope, groupBy := "project_id", "", "project_id, day"
	tombstones := "(project_id, trace_id) GLOBAL IN (SELECT project_id, trace_id FROM " + s.ddl.name(deletedTracesTable) + ")"
	obsArgs, indexArgs := []any{first.Unix(), last.AddDate(0, 0, 1).Unix(), lo, hi}, []any{lo, hi}
	if projectID != "" {
		project, scope, groupBy = "toString(?)", "project_id = ? AND ", "day"
		tombstones = "trace_id GLOBAL IN (SELECT trace_id FROM " + s.ddl.name(deletedTracesTable) + " WHERE project_id = ?)"
		obsArgs = append([]any{projectID, projectID}, obsArgs...)
		indexArgs = append([]any{projectID, projectID}, append(indexArgs, projectID)...)
	}
	q := "SELECT 0, " + project + ", toDate(start_time) AS day, count(), sum(event_ts) FROM " + s.ddl.name(observationsTable) +
		" WHERE " + scope + "start_time >= toDateTime(?) AND start_time < toDateTime(?) AND toDate(start_time) >= ? AND toDate(start_time) <= ? GROUP BY " + groupBy +
		" UNION ALL SELECT 1, " + project + ", day, uniqExact(trace_id), toUInt64(0) FROM " + s.ddl.name(traceIndexTable) +
		" WHERE " + scope + "day >= ? AND day <= ? AND " + tombstones + " GROUP BY " + groupBy
	out := map[string]map[string]dayFingerprint{}
	err := s.query(ctx, q, append(obsArgs, indexArgs...), func(r rowScanner) error {
		var (
			kind    uint8
			project string
			day     time.Time
			a, b    uint64
		)
		if err := r.Scan(&kind, &project, &day, &a, &b); err != nil {
			return err
		}
		if out[project] == nil {
			out[project] = map[string]dayFingerprint{}
		}
		key := day.Format(dayLayout)
		fp := out[project][key]
		if kind == 0 {
			fp.rows, fp.eventTSSum = a, b
		} else {
			fp.deleted = a
		}
		out[project][key] = fp
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the days' fingerprints: %w", err)
	}
	return out, nil
}

// storedRollupDay is the current rollup of a day.
type storedRollupDay struct {
	fp         dayFingerprint
	generation uint64
}

// storedRollupDays reads, per project, the current rollup of its days in
// [first, last]; projectID "" reads all projects.
func (s *Store) storedRollupDays(ctx context.Context, projectID string, first, last time.Time) (map[string]map[string]storedRollupDay, error) {
	scope, args := "", []any{first.Format(dayLayout), last.Format(dayLayout)}
	if projectID != "" {
		scope, args = "project_id = ? AND ", append([]any{projectID}, args...)
	}
	out := map[string]map[string]storedRollupDay{}
	err := s.query(ctx, "SELECT project_id, day, max(generation), argMax(rows, generation), argMax(event_ts_sum, generation), "+
		"argMax(deleted, generation) FROM "+s.ddl.name(metricsDailyDaysTable)+" WHERE "+scope+"day >= ? AND day <= ? GROUP BY project_id, day",
		args, func(r rowScanner) error {
			var (
				project string
				day     time.Time
				st      storedRollupDay
			)
			if err := r.Scan(&project, &day, &st.generation, &st.fp.rows, &st.fp.eventTSSum, &st.fp.deleted); err != nil {
				return err
			}
			if out[project] == nil {
				out[project] = map[string]storedRollupDay{}
			}
			out[project][day.Format(dayLayout)] = st
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read the rollup days: %w", err)
	}
	return out, nil
}

// rawRanges are the parts of [from, to) that the fresh days' rollups
// within span do not cover: what is read raw, as whole-second ranges.
func rawRanges(from, to time.Time, span rollupSpan, fresh []freshDay) [][2]time.Time {
	var out [][2]time.Time
	at := from.UTC().Truncate(time.Second)
	for _, f := range fresh {
		start, end := f.day, f.day.AddDate(0, 0, 1)
		start, end = later(start, span.from), earlier(end, span.to)
		if start.After(at) {
			out = append(out, [2]time.Time{at, start})
		}
		at = later(at, end)
	}
	if end := to.UTC().Add(time.Second - 1).Truncate(time.Second); end.After(at) {
		out = append(out, [2]time.Time{at, end})
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// rollupSQL renders c's query over the fresh days' rollups and the raw
// rows of the other days.
func (s *Store) rollupSQL(c *compiledMetrics, span rollupSpan, fresh []freshDay) *sqlb {
	r := c.rollup
	inner := func(source, bucket string, partialOf func(partial) string) string {
		cols := slices.Clone(r.dimSelects)
		if c.timed != "" {
			cols = append(cols, bucketSQL(c.timed, bucket)+" AS td")
		}
		for i, m := range r.metrics {
			for k, p := range m.partials {
				cols = append(cols, partialOf(p)+fmt.Sprintf(" AS p%d_%d", i, k))
			}
		}
		return "SELECT " + strings.Join(cols, ", ") + " FROM " + source
	}
	group := ""
	if len(r.groupBy) > 0 {
		group = " GROUP BY " + strings.Join(r.groupBy, ", ")
	}
	where := func(q *sqlb, first string, args ...any) {
		q.add(" WHERE "+first, args...)
		if r.conds != nil {
			q.add(" AND ").sub(r.conds)
		}
	}

	rolled := &sqlb{}
	rolled.add(inner(s.ddl.name(metricsDailyTable), "hour", func(p partial) string { return p.rolled }))
	pairs := make([]string, len(fresh))
	args := []any{c.rollup.projectID, span.from.Unix(), span.to.Unix()}
	for i, f := range fresh {
		pairs[i] = "(?, ?)"
		args = append(args, f.day.Format(dayLayout), f.generation)
	}
	where(rolled, "project_id = ? AND hour >= toDateTime(?) AND hour < toDateTime(?) AND (day, generation) IN ("+strings.Join(pairs, ", ")+")", args...)
	rolled.add(group)

	q := &sqlb{}
	q.add("SELECT " + strings.Join(r.selects, ", ") + " FROM (").sub(rolled)
	ranges := rawRanges(c.from, c.to, span, fresh)
	if len(ranges) == 0 {
		// The rollups cover the whole window.
		return q.add(")").sub(r.tail)
	}
	w := window{from: c.from.UnixMicro(), to: c.to.UnixMicro(), ranges: ranges}
	raw := &sqlb{}
	raw.add(inner("(", "start_time", func(p partial) string { return p.raw })).
		sub(s.observationRows(r.projectID, w, r.plan)).add(")")
	where(raw, "1")
	raw.add(group)

	return q.add(" UNION ALL ").sub(raw).add(")").sub(r.tail)
}

// newRollupPlan keeps the parts of a compiled query that its rollup form
// reuses: the dimension expressions and the filters read the same columns
// in rollup rows as in observation rows.
func newRollupPlan(projectID string, c *compiledMetrics, selects, groupBy, orderBy, conds []string, args []any,
	metrics []rollupMetric, plan rowsPlan, limit int) *rollupPlan {
	r := &rollupPlan{projectID: projectID, dimSelects: selects[:c.dimensions], groupBy: groupBy, metrics: metrics, plan: plan}
	if len(conds) > 0 {
		r.conds = (&sqlb{}).add(strings.Join(conds, " AND "), args...)
	}
	for i := range c.dimensions {
		r.selects = append(r.selects, fmt.Sprintf("d%d", i))
	}
	if c.timed != "" {
		r.selects = append(r.selects, "td")
	}
	for i, m := range metrics {
		aliases := make([]string, len(m.partials))
		for k := range m.partials {
			aliases[k] = fmt.Sprintf("p%d_%d", i, k)
		}
		r.selects = append(r.selects, m.final(aliases)+fmt.Sprintf(" AS m%d", i))
	}
	r.tail = &sqlb{}
	if len(groupBy) > 0 {
		r.tail.add(" GROUP BY " + strings.Join(groupBy, ", "))
	}
	if len(orderBy) > 0 {
		r.tail.add(" ORDER BY " + strings.Join(orderBy, ", "))
	}
	r.tail.add(" LIMIT ?", limit)
	return r
}

// RollupStats says what one RefreshRollups call did.
type RollupStats struct {
	// Days is the project days rolled up; Skipped those that changed while
	// they were, left to the next call.
	Days, Skipped int
	// ScoreDays and ScoreSkipped are the same for the score rollups.
	ScoreDays, ScoreSkipped int
}

// rollupBatchDays bounds the days of one project rolled up by one query.
const rollupBatchDays = 31

// RefreshRollups rolls up every closed project day whose rollup is missing
// or no longer current (see freshDays), at most maxDays of them (0: all),
// and prunes superseded generations; then the same for the score rollups
// (score_rollup.go), with its own maxDays. It is the background
// job behind the rollups; reads never depend on it for exactness.
func (s *Store) RefreshRollups(ctx context.Context, maxDays int) (RollupStats, error) {
	// A day's rows must be stored before the record that makes them
	// current; on a cluster, inserts into Distributed tables are otherwise
	// forwarded later, each table on its own.
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
	var st RollupStats
	stale, err := s.staleRollupDays(ctx, time.Now())
	if err != nil {
		return st, err
	}
	projects := make([]string, 0, len(stale))
	for p := range stale {
		projects = append(projects, p)
	}
	slices.Sort(projects)
projects:
	for _, project := range projects {
		days := stale[project]
		slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
		for len(days) > 0 {
			if maxDays > 0 && st.Days+st.Skipped >= maxDays {
				break projects
			}
			n := min(len(days), rollupBatchDays)
			if maxDays > 0 {
				n = min(n, maxDays-st.Days-st.Skipped)
			}
			done, skipped, err := s.rollUp(ctx, project, days[:n])
			if err != nil {
				return st, err
			}
			st.Days += done
			st.Skipped += skipped
			days = days[n:]
		}
	}
	if err := s.pruneRollups(ctx, metricsDailyTable, metricsDailyDaysTable); err != nil {
		return st, err
	}
	st.ScoreDays, st.ScoreSkipped, err = s.refreshScoreRollups(ctx, time.Now(), maxDays)
	return st, err
}

// pruneRollupDays bounds the days one pruning mutation names.
const pruneRollupDays = 500

// rollupPruneGrace is how long a superseded generation's rows stay after
// a newer one became current: a query that chose the older generation just
// before reads its rows in a second statement, well within this.
var rollupPruneGrace = 10 * time.Minute

// pruneRollups deletes the rollup rows of superseded generations (reads
// never see them: they name the current generation) once they outnumber
// the current ones, so that a mutation is rare. Rows of a generation newer
// than the day's current one may be in the making, and stay.
func (s *Store) pruneRollups(ctx context.Context, rowsTable, daysTable table) error {
	type day struct {
		project string
		day     time.Time
		current uint64
	}
	var (
		days       []day
		superseded uint64
		total      uint64
	)
	// GLOBAL: on a cluster both tables are Distributed (see dayFingerprints).
	err := s.query(ctx, "SELECT project_id, day, current, countIf(generation < current), count() FROM "+s.ddl.name(rowsTable)+
		" AS rolled GLOBAL ANY INNER JOIN (SELECT project_id, day, max(generation) AS current FROM "+s.ddl.name(daysTable)+
		" GROUP BY project_id, day HAVING argMax(computed_at, generation) < toDateTime(?)) AS days USING (project_id, day) GROUP BY project_id, day, current",
		[]any{time.Now().Add(-rollupPruneGrace).Unix()}, func(r rowScanner) error {
			var (
				d        day
				old, all uint64
			)
			if err := r.Scan(&d.project, &d.day, &d.current, &old, &all); err != nil {
				return err
			}
			if old > 0 && len(days) < pruneRollupDays {
				days = append(days, d)
			}
			superseded += old
			total += all
			return nil
		})
	if err != nil {
		return fmt.Errorf("count superseded rollup rows: %w", err)
	}
	if len(days) == 0 || superseded*2 < total {
		return nil
	}
	conds := make([]string, len(days))
	var args []any
	for i, d := range days {
		conds[i] = "(project_id = ? AND day = ? AND generation < ?)"
		args = append(args, d.project, d.day.Format(dayLayout), d.current)
	}
	return s.mutateDelete(ctx, rowsTable, strings.Join(conds, " OR "), args)
}

// staleRollupDays lists, per project, the closed days whose rollup is
// missing or not current.
func (s *Store) staleRollupDays(ctx context.Context, now time.Time) (map[string][]time.Time, error) {
	first, last := time.Unix(0, 0).UTC(), now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	current, err := s.dayFingerprints(ctx, "", first, last)
	if err != nil {
		return nil, err
	}
	stored, err := s.storedRollupDays(ctx, "", first, last)
	if err != nil {
		return nil, err
	}
	out := map[string][]time.Time{}
	add := func(project, key string) {
		day, _ := time.Parse(dayLayout, key)
		out[project] = append(out[project], day)
	}
	for project, days := range current {
		for key, fp := range days {
			if st, ok := stored[project][key]; !ok || st.fp != fp {
				add(project, key)
			}
		}
	}
	// Days whose rows are all gone (purged, expired) roll up to nothing.
	for project, days := range stored {
		for key, st := range days {
			if _, ok := current[project][key]; !ok && st.fp != (dayFingerprint{}) {
				add(project, key)
			}
		}
	}
	return out, nil
}

// rollUp computes the rollup of a project's days under a new generation
// and makes it current for the days whose fingerprint held still while it
// ran; it returns how many days it made current and how many it skipped.
func (s *Store) rollUp(ctx context.Context, projectID string, days []time.Time) (int, int, error) {
	first, last := days[0], days[len(days)-1]
	before, err := s.dayFingerprints(ctx, projectID, first, last)
	if err != nil {
		return 0, 0, err
	}
	generation := uint64(time.Now().UnixNano())
	dayArgs := make([]any, len(days))
	for i, d := range days {
		dayArgs[i] = d.Format(dayLayout)
	}
	var cols, aggs []string
	for _, n := range keysInOrder(nil, rollupMeasures) {
		rm, x := rollupMeasures[n], observationsView.measures[n].expr
		cols = append(cols, rm.col+"_sum", rm.col+"_min", rm.col+"_max")
		aggs = append(aggs, "toFloat64(ifNull(sum("+x+"), 0))", "CAST(min("+x+") AS Nullable(Float64))", "CAST(max("+x+") AS Nullable(Float64))")
		if rm.nullable {
			cols = append(cols, rm.col+"_count")
			aggs = append(aggs, "count("+x+")")
		}
	}
	// The rows as the raw path reads them: deduplicated, without deleted
	// traces; retention is applied when the rollup is read.
	rows := &sqlb{}
	rows.add("SELECT "+observationMetricColumns+" FROM "+s.ddl.name(observationsTable)+
		" WHERE project_id = ? AND start_time >= toDateTime(?) AND start_time < toDateTime(?) AND toDate(start_time) IN "+placeholders(len(days)),
		append([]any{projectID, first.Unix(), last.AddDate(0, 0, 1).Unix()}, dayArgs...)...)
	rows.add(" AND trace_id GLOBAL NOT IN (SELECT trace_id FROM "+s.ddl.name(deletedTracesTable)+" WHERE project_id = ?) LIMIT 1 BY trace_id, id", projectID)
	stmt := &sqlb{}
	stmt.add("INSERT INTO "+s.ddl.name(metricsDailyTable)+" (project_id, day, generation, hour, "+rollupDimensionColumns+", rows, "+strings.Join(cols, ", ")+
		") SELECT ?, toDate(start_time) AS day, ?, toStartOfHour(start_time) AS hour, "+rollupDimensionColumns+", count(), "+strings.Join(aggs, ", ")+" FROM (",
		projectID, generation).sub(rows).add(") GROUP BY day, hour, " + rollupDimensionColumns)
	if err := s.exec(ctx, stmt.String(), stmt.args...); err != nil {
		return 0, 0, fmt.Errorf("roll up %d days of project %s: %w", len(days), projectID, err)
	}
	after, err := s.dayFingerprints(ctx, projectID, first, last)
	if err != nil {
		return 0, 0, err
	}
	var current []time.Time
	for _, d := range days {
		if key := d.Format(dayLayout); before[projectID][key] == after[projectID][key] {
			current = append(current, d)
		}
	}
	if len(current) > 0 {
		now := time.Now().UTC()
		err = s.insert(ctx, s.ddl.name(metricsDailyDaysTable), []string{"project_id", "day", "generation", "rows", "event_ts_sum", "deleted", "computed_at"},
			len(current), func(i int) []any {
				fp := before[projectID][current[i].Format(dayLayout)]
				return []any{projectID, current[i], generation, fp.rows, fp.eventTSSum, fp.deleted, now}
			})
		if err != nil {
			return 0, 0, fmt.Errorf("record the rollup of %d days of project %s: %w", len(current), projectID, err)
		}
	}
	return len(current), len(days) - len(current), nil
}
