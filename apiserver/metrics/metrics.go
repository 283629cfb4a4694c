// Package metrics serves the metrics query language, v1 and v2 shapes from
// one engine (chstore.Metrics), and the daily metrics.
package metrics // import "github.com/glassbox-dev/glassbox/apiserver/metrics"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Store is what the routes need from the ClickHouse store.
type Store interface {
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

// Response is a metrics answer: one object per group, keyed by dimension
// field, time_dimension and <aggregation>_<measure>.
type Response struct {
	Data []map[string]any `json:"data"`
}

// Query is the `query` parameter's JSON.
type Query struct {
	View          string           `json:"view"`
	Dimensions    []Dimension      `json:"dimensions"`
	Metrics       []Metric         `json:"metrics"`
	Filters       []chstore.Filter `json:"filters"`
	TimeDimension *TimeDimension   `json:"timeDimension"`
	FromTimestamp string           `json:"fromTimestamp"`
	ToTimestamp   string           `json:"toTimestamp"`
	OrderBy       []Order          `json:"orderBy"`
	Config        *Config          `json:"config"`
}

// Dimension groups by one field.
type Dimension struct {
	Field string `json:"field"`
}

// Metric aggregates one measure.
type Metric struct {
	Measure     string `json:"measure"`
	Aggregation string `json:"aggregation"`
}

// TimeDimension buckets by time.
type TimeDimension struct {
	Granularity string `json:"granularity"`
}

// Order sorts by a dimension, a metric key or time_dimension.
type Order struct {
	Field     string `json:"field"`
	Direction string `json:"direction"`
}

// Config holds the histogram bins and the row limit.
type Config struct {
	Bins     *int `json:"bins"`
	RowLimit *int `json:"row_limit"`
}

// Routes returns the metrics routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	queryParam := []httpx.Param{{Name: "query", Type: httpx.TypeString, Required: true,
		Description: "URL-encoded JSON: {view, dimensions, metrics, filters, timeDimension, fromTimestamp, toTimestamp, orderBy, config} (docs/metrics.md)."}}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/metrics", Access: httpx.ProjectKey, Handler: h.v1,
			Doc: httpx.Doc{OperationID: "metrics_metrics", Tag: "Metrics", Query: queryParam, Response: Response{},
				Summary: "Aggregates the project's traces, observations or scores (v1 query language)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/metrics", Access: httpx.ProjectKey, Handler: h.v2,
			Doc: httpx.Doc{OperationID: "metricsV2_metrics", Tag: "Metrics", Query: queryParam, Response: Response{},
				Summary: "Aggregates the project's observations or scores (v2 query language: top-N rules for high-cardinality dimensions, row limit 100 by default)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/metrics/daily", Access: httpx.ProjectKey, Handler: h.daily,
			Doc: httpx.Doc{OperationID: "metrics_daily", Tag: "Metrics", Response: httpx.List[Day]{},
				Query: append(append([]httpx.Param{}, httpx.PageParams...),
					httpx.Param{Name: "traceName", Type: httpx.TypeString},
					httpx.Param{Name: "userId", Type: httpx.TypeString},
					httpx.Param{Name: "tags", Type: httpx.TypeString, Repeated: true, Description: "Traces with all of these tags."},
					httpx.Param{Name: "environment", Type: httpx.TypeString, Repeated: true, Description: "Any of these environments."},
					httpx.Param{Name: "fromTimestamp", Type: httpx.TypeDateTime, Description: "Days from (ISO 8601); default 365 days before toTimestamp."},
					httpx.Param{Name: "toTimestamp", Type: httpx.TypeDateTime, Description: "Days before (ISO 8601); default now."},
				),
				Summary: "Per day, newest first: traces, observations, cost and usage by model."},
		},
	}
}

type handlers struct {
	store Store
}

func (h handlers) v1(r *http.Request) (any, error) { return h.run(r, false) }
func (h handlers) v2(r *http.Request) (any, error) { return h.run(r, true) }

func (h handlers) run(r *http.Request, v2 bool) (any, error) {
	q, err := parseQuery(httpx.QueryOf(r).String("query"), v2)
	if err != nil {
		return nil, err
	}
	rows, err := h.store.Metrics(r.Context(), httpx.ProjectID(r), q)
	if err != nil {
		return nil, queryError(err)
	}
	return Response{Data: rows}, nil
}

// parseQuery decodes and checks the `query` parameter's shape; the store
// checks its fields against the view.
func parseQuery(text string, v2 bool) (chstore.MetricsQuery, error) {
	if text == "" {
		return chstore.MetricsQuery{}, httpx.BadRequest("Query parameter query is required: URL-encoded JSON of the metrics query")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var in Query
	if err := dec.Decode(&in); err != nil {
		return chstore.MetricsQuery{}, httpx.BadRequest("Invalid JSON in query parameter: %v", err)
	}
	out := chstore.MetricsQuery{View: in.View, Filters: in.Filters, V2: v2}
	for i, d := range in.Dimensions {
		if d.Field == "" {
			return out, httpx.BadRequest("dimensions[%d].field is required", i)
		}
		out.Dimensions = append(out.Dimensions, d.Field)
	}
	for i, m := range in.Metrics {
		if m.Measure == "" || m.Aggregation == "" {
			return out, httpx.BadRequest("metrics[%d] needs measure and aggregation", i)
		}
		out.Metrics = append(out.Metrics, chstore.Metric{Measure: m.Measure, Aggregation: m.Aggregation})
	}
	if in.TimeDimension != nil {
		if in.TimeDimension.Granularity == "" {
			return out, httpx.BadRequest("timeDimension.granularity is required: auto, minute, hour, day, week or month")
		}
		out.Granularity = in.TimeDimension.Granularity
	}
	var err error
	if out.From, err = timestamp("fromTimestamp", in.FromTimestamp); err != nil {
		return out, err
	}
	if out.To, err = timestamp("toTimestamp", in.ToTimestamp); err != nil {
		return out, err
	}
	for i, o := range in.OrderBy {
		switch o.Direction {
		case "asc", "desc":
		default:
			return out, httpx.BadRequest("orderBy[%d].direction must be asc or desc", i)
		}
		out.OrderBy = append(out.OrderBy, chstore.MetricOrder{Field: o.Field, Desc: o.Direction == "desc"})
	}
	if c := in.Config; c != nil {
		if c.Bins != nil {
			if *c.Bins < 1 {
				return out, httpx.BadRequest("config.bins must be between 1 and 100")
			}
			out.Bins = *c.Bins
		}
		if c.RowLimit != nil {
			if *c.RowLimit < 1 {
				return out, httpx.BadRequest("config.row_limit must be between 1 and 1000")
			}
			out.RowLimit = *c.RowLimit
		}
	}
	return out, nil
}

func timestamp(name, text string) (time.Time, error) {
	if text == "" {
		return time.Time{}, httpx.BadRequest("%s is required (ISO 8601 with a zone)", name)
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, httpx.BadRequest("%s %q is not an ISO 8601 timestamp with a zone", name, text)
	}
	return t, nil
}

// queryError turns the engine's refusals into 400s; v2's rule codes lead
// the message, as `<code>: ...`.
func queryError(err error) error {
	var qe *chstore.QueryError
	if errors.As(err, &qe) {
		if qe.Code != "" {
			return httpx.BadRequest("%s: %s", qe.Code, qe.Message)
		}
		return httpx.BadRequest("%s", qe.Message)
	}
	return err
}

// Day is one day of the daily metrics.
type Day struct {
	Date              string       `json:"date"`
	CountTraces       int64        `json:"countTraces"`
	CountObservations int64        `json:"countObservations"`
	TotalCost         float64      `json:"totalCost"`
	Usage             []ModelUsage `json:"usage"`
}

// ModelUsage is one model's usage on a day.
type ModelUsage struct {
	Model             string  `json:"model"`
	InputUsage        int64   `json:"inputUsage"`
	OutputUsage       int64   `json:"outputUsage"`
	TotalUsage        int64   `json:"totalUsage"`
	CountObservations int64   `json:"countObservations"`
	CountTraces       int64   `json:"countTraces"`
	TotalCost         float64 `json:"totalCost"`
}

// dailyWindow is the default span of the daily metrics.
const dailyWindow = 365 * 24 * time.Hour

func (h handlers) daily(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	to := time.Now().UTC()
	if q.Has("toTimestamp") {
		if to, err = timestamp("toTimestamp", q.String("toTimestamp")); err != nil {
			return nil, err
		}
	}
	from := to.Add(-dailyWindow)
	if q.Has("fromTimestamp") {
		if from, err = timestamp("fromTimestamp", q.String("fromTimestamp")); err != nil {
			return nil, err
		}
	}
	var filters []chstore.Filter
	if name := q.String("traceName"); name != "" {
		filters = append(filters, chstore.Filter{Column: "traceName", Type: "string", Operator: "=", Value: name})
	}
	if user := q.String("userId"); user != "" {
		filters = append(filters, chstore.Filter{Column: "userId", Type: "string", Operator: "=", Value: user})
	}
	if tags := q.Strings("tags"); len(tags) > 0 {
		filters = append(filters, chstore.Filter{Column: "tags", Type: "arrayOptions", Operator: "all of", Value: anyList(tags)})
	}
	if envs := q.Strings("environment"); len(envs) > 0 {
		filters = append(filters, chstore.Filter{Column: "environment", Type: "stringOptions", Operator: "any of", Value: anyList(envs)})
	}
	// One query by model and day; the day totals are their sums, except
	// traces, which a day counts once across models.
	metrics := []chstore.Metric{
		{Measure: "count", Aggregation: "count"}, {Measure: "uniqueTraceIds", Aggregation: "uniq"},
		{Measure: "inputTokens", Aggregation: "sum"}, {Measure: "outputTokens", Aggregation: "sum"},
		{Measure: "totalTokens", Aggregation: "sum"}, {Measure: "totalCost", Aggregation: "sum"},
	}
	query := chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: metrics, Filters: filters, Granularity: "day",
		From: from, To: to, OrderBy: []chstore.MetricOrder{{Field: chstore.TimeDimensionKey, Desc: true}}}
	totals, err := h.store.Metrics(r.Context(), httpx.ProjectID(r), query)
	if err != nil {
		return nil, queryError(err)
	}
	query.Dimensions = []string{"providedModelName"}
	byModel, err := h.store.Metrics(r.Context(), httpx.ProjectID(r), query)
	if err != nil {
		return nil, queryError(err)
	}
	days := make([]Day, 0, len(totals))
	index := map[string]int{}
	for _, row := range totals {
		at := row[chstore.TimeDimensionKey].(string)
		index[at] = len(days)
		days = append(days, Day{Date: at[:10], CountTraces: integer(row["uniq_uniqueTraceIds"]),
			CountObservations: integer(row["count_count"]), TotalCost: number(row["sum_totalCost"]), Usage: []ModelUsage{}})
	}
	for _, row := range byModel {
		i, ok := index[row[chstore.TimeDimensionKey].(string)]
		if !ok || row["providedModelName"] == "" {
			continue
		}
		days[i].Usage = append(days[i].Usage, ModelUsage{
			Model: row["providedModelName"].(string), InputUsage: integer(row["sum_inputTokens"]),
			OutputUsage: integer(row["sum_outputTokens"]), TotalUsage: integer(row["sum_totalTokens"]),
			CountObservations: integer(row["count_count"]), CountTraces: integer(row["uniq_uniqueTraceIds"]),
			TotalCost: number(row["sum_totalCost"]),
		})
	}
	for i := range days {
		sort.Slice(days[i].Usage, func(a, b int) bool { return days[i].Usage[a].Model < days[i].Usage[b].Model })
	}
	start := min((page.Number-1)*page.Limit, len(days))
	end := min(start+page.Limit, len(days))
	return httpx.NewList(days[start:end], page, int64(len(days))), nil
}

func anyList(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

// integer reads a count or an integer sum, which the engine writes as a
// string.
func integer(v any) int64 {
	s, _ := v.(string)
	var n int64
	_ = json.Unmarshal([]byte(s), &n)
	return n
}

func number(v any) float64 {
	f, _ := v.(float64)
	return f
}
