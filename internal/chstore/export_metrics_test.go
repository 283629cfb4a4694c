package chstore

import (
	"context"
	"sort"
	"time"
)

// metricsViews lists the public views, in a stable order.
func metricsViews() []string {
	return []string{ViewTraces, ViewObservations, ViewScoresNumeric, ViewScoresBoolean, ViewScoresCategorical}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sampleFilters returns a filter of every type that applies to f.
func sampleFilters(name string, f field) []Filter {
	switch f.kind {
	case kindString:
		return []Filter{
			{Column: name, Type: "string", Operator: "=", Value: "x"},
			{Column: name, Type: "string", Operator: "contains", Value: "%_x"},
			{Column: name, Type: "string", Operator: "does not contain", Value: "x"},
			{Column: name, Type: "string", Operator: "starts with", Value: "x"},
			{Column: name, Type: "string", Operator: "ends with", Value: "x"},
			{Column: name, Type: "string", Operator: "matches", Value: "^x.*$"},
			{Column: name, Type: "stringOptions", Operator: "any of", Value: []any{"x", "y"}},
			{Column: name, Type: "stringOptions", Operator: "none of", Value: []any{"x"}},
			{Column: name, Type: "null", Operator: "is null"},
			{Column: name, Type: "null", Operator: "is not null"},
		}
	case kindNumber:
		return []Filter{
			{Column: name, Type: "number", Operator: ">=", Value: 1.5},
			{Column: name, Type: "null", Operator: "is not null"},
		}
	case kindDatetime:
		return []Filter{{Column: name, Type: "datetime", Operator: "<", Value: "2030-01-01T00:00:00Z"}}
	case kindArray:
		return []Filter{
			{Column: name, Type: "arrayOptions", Operator: "any of", Value: []any{"x"}},
			{Column: name, Type: "arrayOptions", Operator: "all of", Value: []any{"x", "y"}},
			{Column: name, Type: "arrayOptions", Operator: "none of", Value: []any{"x"}},
			{Column: name, Type: "null", Operator: "is null"},
		}
	case kindObject:
		return []Filter{
			{Column: name, Type: "stringObject", Key: "a.b", Operator: "contains", Value: "x"},
			{Column: name, Type: "stringObject", Key: "a", Operator: "does not contain", Value: "x"},
			{Column: name, Type: "numberObject", Key: "n", Operator: ">", Value: 1.0},
			{Column: name, Type: "booleanObject", Key: "ok", Operator: "=", Value: true},
			{Column: name, Type: "null", Key: "a", Operator: "is null"},
		}
	case kindBool:
		return []Filter{{Column: name, Type: "boolean", Operator: "=", Value: true}}
	case kindScoreNumber:
		return []Filter{{Column: name, Type: "numberObject", Key: "quality", Operator: ">=", Value: 0.5}}
	case kindScoreCategory:
		return []Filter{
			{Column: name, Type: "categoryOptions", Key: "verdict", Operator: "any of", Value: []any{"good"}},
			{Column: name, Type: "categoryOptions", Key: "verdict", Operator: "none of", Value: []any{"bad"}},
		}
	}
	return nil
}

// EveryMetricsQuery returns a query for every dimension of every view (by
// the hour), for every measure with each aggregation it takes (by the day),
// and for a filter of every type on every field.
func EveryMetricsQuery() []MetricsQuery {
	var out []MetricsQuery
	for _, name := range metricsViews() {
		v := views[name]
		for _, d := range keys(v.fields) {
			if v.fields[d].dimension {
				out = append(out, MetricsQuery{View: name, Dimensions: []string{d}, Metrics: []Metric{{"count", "count"}}, Granularity: "hour"})
			}
			for _, f := range sampleFilters(d, v.fields[d]) {
				out = append(out, MetricsQuery{View: name, Metrics: []Metric{{"count", "count"}}, Filters: []Filter{f}})
			}
		}
		for _, m := range keys(v.measures) {
			for _, agg := range keys(aggregations) {
				if _, _, err := aggregateSQL(Metric{m, agg}, v.measures[m], aggregations[agg]); err == nil {
					out = append(out, MetricsQuery{View: name, Metrics: []Metric{{m, agg}}, Granularity: "day"})
				}
			}
		}
	}
	return out
}

// RollupDaysRead is how many days of [from, to) a metrics query of the
// project would read (in part) from the rollups now.
func (s *Store) RollupDaysRead(ctx context.Context, projectID string, from, to time.Time) (int, error) {
	fresh, err := s.freshDays(ctx, projectID, s.rollupSpan(projectID, from, to, time.Now()).days)
	return len(fresh), err
}

// RollupRows counts the rollup rows of the days' current generations and
// those of older ones.
func (s *Store) RollupRows(ctx context.Context) (current, superseded uint64, err error) {
	err = s.query(ctx, "SELECT countIf(generation = cur), countIf(generation < cur) FROM "+s.ddl.name(metricsDailyTable)+
		" AS rolled ANY INNER JOIN (SELECT project_id, day, max(generation) AS cur FROM "+s.ddl.name(metricsDailyDaysTable)+
		" GROUP BY project_id, day) AS days USING (project_id, day)", nil, func(r rowScanner) error { return r.Scan(&current, &superseded) })
	return current, superseded, err
}

// SetRollupPruneGrace sets how long superseded rollup rows stay, and
// returns a function that restores it.
func SetRollupPruneGrace(d time.Duration) (restore func()) {
	old := rollupPruneGrace
	rollupPruneGrace = d
	return func() { rollupPruneGrace = old }
}

// ListTracesRaw is ListTraces without the score rollups.
func (s *Store) ListTracesRaw(ctx context.Context, f TraceFilter) ([]Trace, int, error) {
	return s.listTraces(ctx, f, false)
}

// ScoreRollupDaysRead is how many days a score filter on name of the
// project's trace list would read from the score rollups now (0: all raw).
func (s *Store) ScoreRollupDaysRead(ctx context.Context, projectID, name string) (int, error) {
	rows, err := s.scoreRollupRows(ctx, projectID, name, time.Now())
	if err != nil || rows == nil {
		return 0, err
	}
	return rows.days, nil
}
