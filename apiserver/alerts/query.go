// Package alerts serves alert rules over metrics queries
// (/api/public/alerts) and evaluates them on a schedule: each due alert's
// query runs through the metrics engine over its window, its value is
// compared with the threshold, and firing and resolving are posted to the
// alert's webhook.
package alerts // import "github.com/glassbox-dev/glassbox/apiserver/alerts"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Query is one value of the metrics language: a view, one metric with its
// aggregation and optional filters, over the alert's window. It has no
// dimensions and no time dimension, so it answers one number.
type Query struct {
	View    string           `json:"view"`
	Metric  Metric           `json:"metric"`
	Filters []chstore.Filter `json:"filters"`
}

// Metric is a measure with its aggregation, as in the metrics language.
type Metric struct {
	Measure     string `json:"measure"`
	Aggregation string `json:"aggregation"`
}

// Metrics is the metrics engine as alerts use it.
type Metrics interface {
	CheckMetrics(projectID string, q chstore.MetricsQuery) error
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

// metricsQuery is q over [from, to). Histograms answer many numbers, so
// they are refused here; the engine checks the rest.
func (q Query) metricsQuery(from, to time.Time) (chstore.MetricsQuery, error) {
	if q.Metric.Measure == "" || q.Metric.Aggregation == "" {
		return chstore.MetricsQuery{}, errors.New("metric needs measure and aggregation")
	}
	if q.Metric.Aggregation == "histogram" {
		return chstore.MetricsQuery{}, errors.New("aggregation histogram answers many numbers; an alert compares one")
	}
	filters := q.Filters
	if filters == nil {
		filters = []chstore.Filter{}
	}
	return chstore.MetricsQuery{View: q.View, Metrics: []chstore.Metric{{Measure: q.Metric.Measure, Aggregation: q.Metric.Aggregation}},
		Filters: filters, From: from, To: to}, nil
}

// decodeQuery reads a stored or sent query, refusing unknown fields.
func decodeQuery(raw json.RawMessage) (Query, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var q Query
	if err := dec.Decode(&q); err != nil {
		return Query{}, err
	}
	if q.Filters == nil {
		q.Filters = []chstore.Filter{}
	}
	return q, nil
}

// encodeQuery is the stored form of q.
func encodeQuery(q Query) json.RawMessage {
	if q.Filters == nil {
		q.Filters = []chstore.Filter{}
	}
	b, _ := json.Marshal(q) // a Query always marshals
	return b
}

// check validates q against the metrics engine with the alert's window
// ending at now; what names the query in the message.
func check(m Metrics, projectID, what string, q Query, window time.Duration, now time.Time) error {
	mq, err := q.metricsQuery(now.Add(-window), now)
	if err == nil {
		err = m.CheckMetrics(projectID, mq)
	}
	if err != nil {
		var qe *chstore.QueryError
		if errors.As(err, &qe) && qe.Code != "" {
			return fmt.Errorf("%s: %s: %s", what, qe.Code, qe.Message)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// value runs q over [from, to) and reads its one number; nil means no data
// (an average, minimum or percentile of no rows).
func value(ctx context.Context, m Metrics, projectID string, q Query, from, to time.Time) (*float64, error) {
	mq, err := q.metricsQuery(from, to)
	if err != nil {
		return nil, err
	}
	rows, err := m.Metrics(ctx, projectID, mq)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return number(rows[0][mq.Metrics[0].Key()])
}

// number reads a metrics cell: a JSON number, an integer written as a
// string, or null.
func number(v any) (*float64, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case float64:
		return &x, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nil, fmt.Errorf("metric value %q is not a number", x)
		}
		return &f, nil
	}
	return nil, fmt.Errorf("metric value %v (%T) is not a number", v, v)
}

// formatDuration writes a duration the way clients send it: 90s, 5m, 2h.
func formatDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// parseDuration reads a window or interval: Go's duration syntax (5m,
// 1h30m) or, as a JSON number, seconds.
func parseDuration(name string, raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a duration such as 5m or 1h", name, s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, fmt.Errorf("%s must be a duration such as \"5m\" or a number of seconds", name)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
