package chstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// MetricsQuery is one query of the metrics language (v1 and v2), already
// decoded; Metrics validates and compiles it.
type MetricsQuery struct {
	View       string
	Dimensions []string
	Metrics    []Metric
	Filters    []Filter
	// Granularity is the time dimension: "" for none, auto, minute, hour,
	// day, week or month.
	Granularity string
	From, To    time.Time
	OrderBy     []MetricOrder
	// RowLimit is config.row_limit; 0 when not given.
	RowLimit int
	// Bins is config.bins for histograms; 0 means 10.
	Bins int
	// V2 applies v2's rules: no traces view, top-N for high-cardinality
	// dimensions, a default row limit.
	V2 bool
}

// Metric is one measure with its aggregation; its result key is
// <aggregation>_<measure>.
type Metric struct {
	Measure     string
	Aggregation string
}

// Key is the metric's key in a result row.
func (m Metric) Key() string { return m.Aggregation + "_" + m.Measure }

// MetricOrder sorts the result by a dimension, a metric key or
// time_dimension.
type MetricOrder struct {
	Field string
	Desc  bool
}

// TimeDimensionKey holds a row's time bucket.
const TimeDimensionKey = "time_dimension"

// Limits of one metrics query. A query past one is refused with what to
// change, rather than left to time out.
const (
	// MaxMetricRows bounds the rows of one answer.
	MaxMetricRows = 10_000
	// MaxTimeBuckets bounds the buckets of a time dimension over the window.
	MaxTimeBuckets = 2_000
	// V2DefaultRowLimit is v2's row limit when config.row_limit is absent.
	V2DefaultRowLimit = 100
	maxRowLimit       = 1000
	maxBins           = 100
	defaultBins       = 10
)

// Aggregations, in the query language's spelling.
var aggregations = map[string]string{
	"sum": "sum", "avg": "avg", "min": "min", "max": "max", "count": "count", "uniq": "uniqExact",
	"p50": "quantileExact(0.5)", "p75": "quantileExact(0.75)", "p90": "quantileExact(0.9)",
	"p95": "quantileExact(0.95)", "p99": "quantileExact(0.99)", "histogram": "groupArray",
}

var granularities = map[string]bool{"auto": true, "minute": true, "hour": true, "day": true, "week": true, "month": true}

// outKind is how one result column is read and written.
type outKind int

const (
	outString outKind = iota
	outNumber         // Nullable(Float64)
	outBool
	outArray
	outCount     // UInt64, written as a string like Langfuse's
	outInteger   // Nullable(Float64) holding an integer, written as a string
	outHistogram // Array(Float64) of the values, binned in Go
)

type outColumn struct {
	key  string
	kind outKind
	// fill is the value of a bucket without rows.
	fill any
}

// compiledMetrics is a query ready to run.
type compiledMetrics struct {
	sql        *sqlb
	columns    []outColumn
	dimensions int // the first columns are the dimensions
	timed      string
	from, to   time.Time
	fill       bool
	limit      int
	bins       int
	// rollup is set when the daily rollups can answer the query.
	rollup *rollupPlan
}

// Metrics runs a metrics query over one project's data.
func (s *Store) Metrics(ctx context.Context, projectID string, q MetricsQuery) ([]map[string]any, error) {
	if projectID == "" {
		return nil, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	c, err := s.compileMetrics(projectID, q)
	if err != nil {
		return nil, err
	}
	if c.rollup != nil {
		span := s.rollupSpan(projectID, c.from, c.to, time.Now())
		fresh, err := s.freshDays(ctx, projectID, span.days)
		if err != nil {
			return nil, err
		}
		if len(fresh) > 0 {
			c.sql = s.rollupSQL(c, span, fresh)
		}
	}
	rows, err := s.runMetrics(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.fill {
		rows = fillBuckets(c, rows)
	}
	if c.limit > 0 && len(rows) > c.limit {
		rows = rows[:c.limit]
	}
	return rows, nil
}

// CheckMetrics validates a metrics query as Metrics would, without running
// it, so that a saved query (an alert's) is refused when it is saved.
func (s *Store) CheckMetrics(projectID string, q MetricsQuery) error {
	_, err := s.compileMetrics(projectID, q)
	return err
}

func (s *Store) compileMetrics(projectID string, q MetricsQuery) (*compiledMetrics, error) {
	v, ok := views[q.View]
	if !ok || q.View == viewScores {
		return nil, invalidQuery("", "unknown view %q; the views are observations, scores-numeric, scores-boolean, scores-categorical and (v1) traces", q.View)
	}
	if q.V2 && q.View == ViewTraces {
		return nil, invalidQuery("", "view traces is not part of v2; query the observations view (isRootObservation for traces) or use /api/public/metrics")
	}
	if len(q.Metrics) == 0 {
		return nil, invalidQuery("", "metrics: at least one metric is required")
	}
	if q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To) {
		return nil, invalidQuery("", "fromTimestamp and toTimestamp are required and fromTimestamp must be before toTimestamp")
	}
	if q.RowLimit < 0 || q.RowLimit > maxRowLimit {
		return nil, invalidQuery("", "config.row_limit must be between 1 and %d", maxRowLimit)
	}
	bins := q.Bins
	if bins == 0 {
		bins = defaultBins
	}
	if bins < 1 || bins > maxBins {
		return nil, invalidQuery("", "config.bins must be between 1 and %d", maxBins)
	}

	c := &compiledMetrics{from: q.From.UTC(), to: q.To.UTC(), bins: bins}
	plan := rowsPlan{}
	var selects, groupBy []string
	args := []any{}
	highCardinality := ""
	seen := map[string]bool{}
	// rollup stays true while every part of the query is answerable from
	// the daily rollups.
	rollup := q.View == ViewObservations
	for i, name := range q.Dimensions {
		rollup = rollup && rollupDimensions[name]
		f, err := v.field(name)
		if err != nil {
			return nil, err
		}
		if !f.dimension {
			return nil, invalidQuery("", "%q cannot be a dimension of view %s", name, v.name)
		}
		if seen[name] {
			return nil, invalidQuery("", "dimension %q is given twice", name)
		}
		seen[name] = true
		if f.highCardinality && highCardinality == "" {
			highCardinality = name
		}
		plan.needField(f)
		alias := "d" + strconv.Itoa(i)
		var kind outKind
		expr := f.expr
		switch f.kind {
		case kindNumber:
			kind, expr = outNumber, "CAST("+f.expr+" AS Nullable(Float64))"
		case kindBool:
			kind, expr = outBool, "toUInt8("+f.expr+")"
		case kindArray:
			kind = outArray
		default:
			expr = "toString(" + f.expr + ")"
		}
		selects = append(selects, expr+" AS "+alias)
		groupBy = append(groupBy, alias)
		c.columns = append(c.columns, outColumn{key: name, kind: kind})
	}
	c.dimensions = len(c.columns)

	if q.Granularity != "" {
		if !granularities[q.Granularity] {
			return nil, invalidQuery("", "timeDimension.granularity %q; use auto, minute, hour, day, week or month", q.Granularity)
		}
		c.timed = q.Granularity
		if c.timed == "auto" {
			c.timed = autoGranularity(c.to.Sub(c.from))
		}
		rollup = rollup && rollupGranularity(c.timed)
		if n := countBuckets(c.timed, c.from, c.to); n > MaxTimeBuckets {
			return nil, invalidQuery("limit", "the window holds %d %s buckets, more than the limit of %d; choose a coarser granularity or a shorter window",
				n, c.timed, MaxTimeBuckets)
		}
		tf := v.fields[v.timeField]
		plan.needField(tf)
		source := "start_time"
		switch v.name {
		case ViewTraces:
			plan.traceExprs = append(plan.traceExprs, exprStartTime)
			source = "t_start_time"
		case ViewScoresNumeric, ViewScoresBoolean, ViewScoresCategorical:
			source = "timestamp"
		}
		selects = append(selects, bucketSQL(c.timed, source)+" AS td")
		groupBy = append(groupBy, "td")
	}

	metricAliases := map[string]string{}
	var rollupMetrics []rollupMetric
	for i, m := range q.Metrics {
		ms, err := v.measure(m.Measure)
		if err != nil {
			return nil, err
		}
		agg, ok := aggregations[m.Aggregation]
		if !ok {
			return nil, invalidQuery("", "unknown aggregation %q; the aggregations are %s", m.Aggregation, sortedKeys(aggregations))
		}
		if metricAliases[m.Key()] != "" {
			return nil, invalidQuery("", "metric %s is given twice", m.Key())
		}
		plan.needMeasure(ms)
		alias := "m" + strconv.Itoa(i)
		metricAliases[m.Key()] = alias
		sql, kind, err := aggregateSQL(m, ms, agg)
		if err != nil {
			return nil, err
		}
		selects = append(selects, sql+" AS "+alias)
		if rm, ok := planRollupMetric(m, ms); ok {
			rollupMetrics = append(rollupMetrics, rm)
		} else {
			rollup = false
		}
		col := outColumn{key: m.Key(), kind: kind}
		switch kind {
		case outCount:
			col.fill = "0"
		case outInteger:
			if m.Aggregation == "sum" {
				col.fill = "0"
			}
		case outHistogram:
			col.fill = []any{}
		case outNumber:
			if m.Aggregation == "sum" {
				col.fill = 0.0
			}
		}
		c.columns = append(c.columns, col)
	}

	if q.V2 && highCardinality != "" {
		if c.timed != "" {
			return nil, invalidQuery("time_dimension", "high-cardinality dimension %q cannot be combined with timeDimension; remove one of them", highCardinality)
		}
		if q.RowLimit == 0 || len(q.OrderBy) == 0 {
			return nil, invalidQuery("missing_top_n", "high-cardinality dimension %q needs a top-N query: set config.row_limit and orderBy a metric descending", highCardinality)
		}
		if metricAliases[q.OrderBy[0].Field] == "" || !q.OrderBy[0].Desc {
			return nil, invalidQuery("invalid_order_by", "high-cardinality dimension %q needs orderBy on a metric, descending; got %q", highCardinality, q.OrderBy[0].Field)
		}
	}

	var orderBy []string
	for _, o := range q.OrderBy {
		alias := metricAliases[o.Field]
		if alias == "" {
			if o.Field == TimeDimensionKey && c.timed != "" {
				alias = "td"
			} else if i := slices.Index(q.Dimensions, o.Field); i >= 0 {
				alias = "d" + strconv.Itoa(i)
			} else {
				return nil, invalidQuery("invalid_order_by", "orderBy field %q is neither a dimension, a metric key (<aggregation>_<measure>) nor time_dimension of this query", o.Field)
			}
		}
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		orderBy = append(orderBy, alias+dir)
	}
	if len(orderBy) == 0 {
		// Buckets in time order, then the dimensions: a stable answer.
		if c.timed != "" {
			orderBy = append(orderBy, "td")
		}
		for i := range q.Dimensions {
			orderBy = append(orderBy, "d"+strconv.Itoa(i))
		}
		c.fill = c.timed != ""
	}

	var conds []string
	for _, f := range q.Filters {
		rollup = rollup && rollupDimensions[f.Column]
		cond, err := s.filterSQL(v, projectID, f, &plan)
		if err != nil {
			return nil, err
		}
		conds = append(conds, cond.String())
		args = append(args, cond.args...)
	}
	if plan.joins&joinCostTypes != 0 && plan.joins&joinUsageTypes != 0 {
		return nil, invalidQuery("", "costType/costByType and usageType/usageByType cannot be combined in one query")
	}

	c.limit = q.RowLimit
	if q.V2 && c.limit == 0 {
		c.limit = V2DefaultRowLimit
	}
	sqlLimit := c.limit
	if c.fill || sqlLimit == 0 {
		// One more than the cap tells an answer that is too large.
		sqlLimit = MaxMetricRows + 1
	}

	rows := s.viewRows(v, projectID, window{from: c.from.UnixMicro(), to: c.to.UnixMicro()}, plan)
	query := &sqlb{}
	query.add("SELECT " + strings.Join(selects, ", ") + " FROM (").sub(rows).add(")")
	switch {
	case plan.joins&joinCostTypes != 0:
		query.add(" ARRAY JOIN cost_keys AS cost_type, cost_values AS cost_by_type")
	case plan.joins&joinUsageTypes != 0:
		query.add(" ARRAY JOIN usage_keys AS usage_type, usage_values AS usage_by_type")
	}
	if len(conds) > 0 {
		query.add(" WHERE "+strings.Join(conds, " AND "), args...)
	}
	if len(groupBy) > 0 {
		query.add(" GROUP BY " + strings.Join(groupBy, ", "))
	}
	if len(orderBy) > 0 {
		query.add(" ORDER BY " + strings.Join(orderBy, ", "))
	}
	query.add(" LIMIT ?", sqlLimit)
	c.sql = query
	if rollup && plan.joins == 0 {
		c.rollup = newRollupPlan(projectID, c, selects, groupBy, orderBy, conds, args, rollupMetrics, plan, sqlLimit)
	}
	return c, nil
}

// aggregateSQL renders one metric and says how its value is read.
func aggregateSQL(m Metric, ms measure, agg string) (string, outKind, error) {
	x := ms.expr
	switch {
	case m.Measure == "count":
		if m.Aggregation != "count" {
			return "", 0, invalidQuery("", "measure count takes the aggregation count, not %q", m.Aggregation)
		}
		return "count()", outCount, nil
	case !ms.numeric:
		if m.Aggregation != "count" && m.Aggregation != "uniq" {
			return "", 0, invalidQuery("", "measure %q is not numeric: it takes count or uniq, not %q", m.Measure, m.Aggregation)
		}
		return "uniqExactIf(" + x + ", " + x + " != '')", outCount, nil
	}
	switch m.Aggregation {
	case "count":
		return "count(" + x + ")", outCount, nil
	case "uniq":
		// A group of only NULLs counts NULL, not 0, on 18.16.
		return "ifNull(uniqExact(" + x + "), 0)", outCount, nil
	case "histogram":
		return "arraySort(groupArray(toFloat64(" + x + ")))", outHistogram, nil
	}
	kind := outNumber
	if ms.integer && m.Aggregation != "avg" {
		kind = outInteger
	}
	// Over no values a sum is 0 and the others are null, whether the group
	// is empty or its values are.
	if m.Aggregation == "sum" {
		return "CAST(ifNull(sum(" + x + "), 0) AS Nullable(Float64))", kind, nil
	}
	return "if(count(" + x + ") = 0, NULL, CAST(" + agg + "(" + x + ") AS Nullable(Float64)))", kind, nil
}

// bucketSQL renders the start of a time bucket, Unix seconds, of a UTC
// DateTime column.
func bucketSQL(granularity, column string) string {
	switch granularity {
	case "minute":
		return "toUInt64(toStartOfMinute(" + column + "))"
	case "hour":
		return "toUInt64(toStartOfHour(" + column + "))"
	case "day":
		return "toUInt64(toDate(" + column + ")) * 86400"
	case "week":
		return "toUInt64(toMonday(" + column + ")) * 86400"
	}
	return "toUInt64(toStartOfMonth(" + column + ")) * 86400"
}

// autoGranularity is Langfuse's rule: minutes under 2 h, hours under 72 h,
// days under 60 d, weeks under a year, months beyond.
func autoGranularity(span time.Duration) string {
	switch {
	case span < 2*time.Hour:
		return "minute"
	case span < 72*time.Hour:
		return "hour"
	case span < 60*24*time.Hour:
		return "day"
	case span < 365*24*time.Hour:
		return "week"
	}
	return "month"
}

// bucketStart is the bucket of t, as bucketSQL computes it.
func bucketStart(granularity string, t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch granularity {
	case "minute":
		return t.Truncate(time.Minute)
	case "hour":
		return t.Truncate(time.Hour)
	case "day":
		return day
	case "week":
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	}
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func nextBucket(granularity string, t time.Time) time.Time {
	switch granularity {
	case "minute":
		return t.Add(time.Minute)
	case "hour":
		return t.Add(time.Hour)
	case "day":
		return t.AddDate(0, 0, 1)
	case "week":
		return t.AddDate(0, 0, 7)
	}
	return t.AddDate(0, 1, 0)
}

// countBuckets counts the buckets of [from, to), stopping past the limit.
func countBuckets(granularity string, from, to time.Time) int {
	n := 0
	for b := bucketStart(granularity, from); b.Before(to) && n <= MaxTimeBuckets; b = nextBucket(granularity, b) {
		n++
	}
	return n
}

func formatBucket(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// runMetrics runs the compiled query under the store's deadline and read
// limit, and turns ClickHouse's refusals into errors that say what to narrow.
func (s *Store) runMetrics(ctx context.Context, c *compiledMetrics) ([]map[string]any, error) {
	// Integer settings only: 18.16's protocol sends no strings, and the
	// overflow modes default to throw.
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
		"max_rows_to_read":   int(s.cfg.MetricsMaxRowsToRead),
		"max_execution_time": int(s.cfg.QueryTimeout / time.Second),
	}))
	out := []map[string]any{}
	err := s.query(ctx, c.sql.String(), c.sql.args, func(r rowScanner) error {
		if len(out) == MaxMetricRows {
			return invalidQuery("limit", "the answer has more than %d rows; add filters, use fewer or coarser dimensions, or set config.row_limit", MaxMetricRows)
		}
		row, err := scanMetricRow(r, c)
		if err != nil {
			return err
		}
		out = append(out, row)
		return nil
	})
	var ex *clickhouse.Exception
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ex) && ex.Code == 158: // TOO_MANY_ROWS
		return nil, invalidQuery("limit", "the query would read more than %d rows; narrow fromTimestamp/toTimestamp or add filters", s.cfg.MetricsMaxRowsToRead)
	case errors.As(err, &ex) && ex.Code == 159: // TIMEOUT_EXCEEDED
		return nil, invalidQuery("limit", "the query ran past the %s limit; narrow fromTimestamp/toTimestamp or add filters", s.cfg.QueryTimeout)
	}
	return nil, fmt.Errorf("run metrics query: %w", err)
}

func scanMetricRow(r rowScanner, c *compiledMetrics) (map[string]any, error) {
	dest := make([]any, 0, len(c.columns)+1)
	add := func(kind outKind) {
		switch kind {
		case outString:
			dest = append(dest, new(string))
		case outBool:
			dest = append(dest, new(uint8))
		case outArray:
			dest = append(dest, new([]string))
		case outCount:
			dest = append(dest, new(uint64))
		case outHistogram:
			dest = append(dest, new([]float64))
		default:
			dest = append(dest, new(*float64))
		}
	}
	for _, col := range c.columns[:c.dimensions] {
		add(col.kind)
	}
	var bucket uint64
	if c.timed != "" {
		dest = append(dest, &bucket)
	}
	for _, col := range c.columns[c.dimensions:] {
		add(col.kind)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	row := make(map[string]any, len(dest))
	if c.timed != "" {
		row[TimeDimensionKey] = formatBucket(time.Unix(int64(bucket), 0))
		dest = slices.Delete(dest, c.dimensions, c.dimensions+1)
	}
	for i, col := range c.columns {
		row[col.key] = metricValue(col.kind, dest[i], c.bins)
	}
	return row, nil
}

func metricValue(kind outKind, p any, bins int) any {
	switch kind {
	case outString:
		return *p.(*string)
	case outBool:
		return *p.(*uint8) == 1
	case outArray:
		if v := *p.(*[]string); v != nil {
			return v
		}
		return []string{}
	case outCount:
		return strconv.FormatUint(*p.(*uint64), 10)
	case outHistogram:
		return histogram(*p.(*[]float64), bins)
	}
	v := *p.(**float64)
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return nil
	}
	if kind == outInteger {
		return strconv.FormatInt(int64(math.Round(*v)), 10)
	}
	return *v
}

// histogram bins values into equal-width bins between their minimum and
// maximum: [lower, upper, count] each, as Langfuse answers.
func histogram(values []float64, bins int) []any {
	out := []any{}
	if len(values) == 0 {
		return out
	}
	lo, hi := slices.Min(values), slices.Max(values)
	if lo == hi {
		return append(out, []any{lo, hi, len(values)})
	}
	counts := make([]int, bins)
	width := (hi - lo) / float64(bins)
	for _, v := range values {
		i := int((v - lo) / width)
		if i >= bins {
			i = bins - 1
		}
		counts[i]++
	}
	for i, n := range counts {
		upper := lo + float64(i+1)*width
		if i == bins-1 {
			upper = hi
		}
		out = append(out, []any{lo + float64(i)*width, upper, n})
	}
	return out
}

// fillBuckets adds the empty buckets of the window to every series (one
// combination of dimension values), in the order the series first appear.
func fillBuckets(c *compiledMetrics, rows []map[string]any) []map[string]any {
	type series struct {
		dims   map[string]any
		byTime map[string]map[string]any
	}
	var order []string
	all := map[string]*series{}
	for _, row := range rows {
		key := seriesKey(c, row)
		s := all[key]
		if s == nil {
			s = &series{dims: row, byTime: map[string]map[string]any{}}
			all[key] = s
			order = append(order, key)
		}
		s.byTime[row[TimeDimensionKey].(string)] = row
	}
	if len(rows) == 0 && c.dimensions == 0 {
		order, all[""] = []string{""}, &series{byTime: map[string]map[string]any{}}
	}
	out := make([]map[string]any, 0, len(rows))
	for _, key := range order {
		s := all[key]
		for b := bucketStart(c.timed, c.from); b.Before(c.to); b = nextBucket(c.timed, b) {
			at := formatBucket(b)
			if row, ok := s.byTime[at]; ok {
				out = append(out, row)
				continue
			}
			row := map[string]any{TimeDimensionKey: at}
			for i, col := range c.columns {
				if i < c.dimensions {
					row[col.key] = s.dims[col.key]
				} else {
					row[col.key] = col.fill
				}
			}
			out = append(out, row)
		}
	}
	return out
}

func seriesKey(c *compiledMetrics, row map[string]any) string {
	var b strings.Builder
	for _, col := range c.columns[:c.dimensions] {
		fmt.Fprintf(&b, "%v\x00", row[col.key])
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != viewScores {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
