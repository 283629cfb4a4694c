// Package scorelist serves the project's scores page: every score with
// filters (name, source, data type, value, config, queue, time), and score
// analytics from the metrics engine: the distribution of a score name, and
// how far two score names agree on the traces that have both.
package scorelist // import "github.com/glassbox-dev/glassbox/apiserver/ui/scorelist"

import (
	"context"
	"embed"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Scores reads scores and runs metrics queries; *chstore.Store implements it.
type Scores interface {
	SearchScores(ctx context.Context, s chstore.ScoreSearch) ([]chstore.Score, int, error)
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

// Configs names score configs and queues; *controlplane.Store implements it.
type Configs interface {
	ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]controlplane.ScoreConfig, int, error)
	ListAnnotationQueues(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AnnotationQueue, int, error)
}

type handlers struct {
	scores  Scores
	configs Configs
	t       *web.Templates
	now     func() time.Time
}

// Routes registers the scores page and its sidebar entry.
func Routes(app *web.App, scores Scores, configs Configs) error {
	t, err := app.Parse(pages, "scores.html")
	if err != nil {
		return err
	}
	h := &handlers{scores: scores, configs: configs, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Evaluation", Label: "Scores", Path: "scores", Action: access.ProjectRead, Order: 330})
	return app.Handle(web.Route{Method: http.MethodGet, Path: "/project/{projectId}/scores", Access: web.InProject, Action: access.ProjectRead, Handler: h.page})
}

var columns = []web.Column{
	{Key: "time", Label: "Time"},
	{Key: "name", Label: "Name"},
	{Key: "value", Label: "Value", Numeric: true},
	{Key: "source", Label: "Source"},
	{Key: "type", Label: "Data type"},
	{Key: "target", Label: "Scored"},
	{Key: "comment", Label: "Comment"},
	{Key: "config", Label: "Config", Hidden: true},
	{Key: "queue", Label: "Queue", Hidden: true},
	{Key: "author", Label: "Author", Hidden: true},
}

// filters are the page's filter form as typed.
type filters struct {
	Name, Source, DataType, Config, Queue, Operator, Value string
}

type option struct{ Value, Label string }

type pageData struct {
	Table   *web.Table
	Range   web.TimeRange
	Filters filters
	Configs []option
	Queues  []option
	Names   []string
	Error   string
	// Analytics of the chosen name (and the second name to compare).
	Distribution *distribution
	Agreement    *agreement
	Compare      string
	// Choices of the filter form.
	Sources, Types, Ops []string
}

var valueOps = []string{">=", ">", "=", "!=", "<", "<="}

// maxNames bounds the score names offered for the analytics.
const maxNames = 100

func (h *handlers) page(r *web.Request) error {
	q := r.URL.Query()
	state := web.ReadTableState(q, columns, "time", true)
	d := pageData{Range: web.ReadTimeRange(q, "7d", h.now()), Compare: q.Get("compare"), Ops: valueOps,
		Sources: []string{chstore.SourceAPI, chstore.SourceEval, chstore.SourceAnnotation},
		Types:   []string{chstore.ScoreNumeric, chstore.ScoreCategorical, chstore.ScoreBoolean, chstore.ScoreText, chstore.ScoreCorrection},
		Filters: filters{Name: strings.TrimSpace(q.Get("name")), Source: q.Get("source"), DataType: q.Get("dataType"),
			Config: q.Get("configId"), Queue: q.Get("queueId"), Operator: q.Get("op"), Value: strings.TrimSpace(q.Get("value"))}}
	s := chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: r.Project.ID, Name: d.Filters.Name, Source: d.Filters.Source,
		DataType: d.Filters.DataType, ConfigID: d.Filters.Config, From: d.Range.From.UnixMicro(), To: d.Range.To.UnixMicro(),
		Page: state.Page, Limit: state.Limit}, QueueID: d.Filters.Queue}
	if d.Filters.Value != "" {
		v, err := strconv.ParseFloat(d.Filters.Value, 64)
		if err != nil || !slices.Contains(valueOps, d.Filters.Operator) {
			return web.BadRequest("The value filter needs an operator and a number.")
		}
		s.Operator, s.Value = d.Filters.Operator, v
	}
	list, total, err := h.scores.SearchScores(r.Context(), s)
	if err != nil {
		return err
	}
	cs, _, err := h.configs.ListScoreConfigs(r.Context(), r.Project.ID, 0, maxNames)
	if err != nil {
		return err
	}
	configNames := map[string]string{}
	for _, c := range cs {
		d.Configs = append(d.Configs, option{c.ID, c.Name})
		configNames[c.ID] = c.Name
	}
	qs, _, err := h.configs.ListAnnotationQueues(r.Context(), r.Project.ID, 0, maxNames)
	if err != nil {
		return err
	}
	queueNames := map[string]string{}
	for _, x := range qs {
		d.Queues = append(d.Queues, option{x.ID, x.Name})
		queueNames[x.ID] = x.Name
	}
	d.Table = web.NewTable("scores", r.Path("project", r.Project.ID, "scores"), columns, state)
	d.Table.Total = total
	d.Table.Empty = "No score in " + strings.ToLower(d.Range.Label()) + " matches."
	for _, sc := range list {
		row := web.Row{ID: sc.ID}
		for _, c := range d.Table.Columns {
			row.Cells = append(row.Cells, h.cell(r, c.Key, sc, configNames, queueNames))
		}
		d.Table.Rows = append(d.Table.Rows, row)
	}
	if d.Names, err = h.names(r, d.Range); err != nil {
		return err
	}
	if d.Filters.Name != "" {
		if d.Distribution, err = h.distribution(r, d.Filters.Name, d.Range); err != nil {
			return err
		}
		if d.Compare != "" && d.Compare != d.Filters.Name {
			if d.Agreement, err = h.agreement(r, d.Filters.Name, d.Compare, d.Range); err != nil {
				return err
			}
		}
	}
	return r.Render(h.t, "scores", d)
}

func (h *handlers) cell(r *web.Request, key string, sc chstore.Score, configs, queues map[string]string) web.Cell {
	switch key {
	case "time":
		return web.Cell{Text: web.FormatTime(time.UnixMicro(sc.Timestamp))}
	case "name":
		return web.Cell{Text: sc.Name}
	case "value":
		if sc.StringValue != "" {
			return web.Cell{Text: sc.StringValue}
		}
		return web.Cell{Text: web.FormatFloat(sc.Value)}
	case "source":
		return web.Cell{Text: sc.Source}
	case "type":
		return web.Cell{Text: sc.DataType}
	case "target":
		switch {
		case sc.ObservationID != "":
			return web.Cell{Text: "observation " + sc.ObservationID, Href: r.Path("project", r.Project.ID, "traces", sc.TraceID) + "?observation=" + sc.ObservationID, Class: "mono"}
		case sc.TraceID != "":
			return web.Cell{Text: "trace " + sc.TraceID, Href: r.Path("project", r.Project.ID, "traces", sc.TraceID), Class: "mono"}
		case sc.SessionID != "":
			return web.Cell{Text: "session " + sc.SessionID, Href: r.Path("project", r.Project.ID, "sessions", sc.SessionID), Class: "mono"}
		}
		return web.Cell{Text: "dataset run " + sc.DatasetRunID, Class: "mono"}
	case "comment":
		return web.Cell{Text: web.Truncate(120, sc.Comment), Title: sc.Comment}
	case "config":
		return web.Cell{Text: configs[sc.ConfigID]}
	case "queue":
		return web.Cell{Text: queues[sc.QueueID]}
	case "author":
		return web.Cell{Text: sc.AuthorUserID}
	}
	return web.Cell{}
}

// names are the score names of the window, most frequent first.
func (h *handlers) names(r *web.Request, tr web.TimeRange) ([]string, error) {
	var out []string
	for _, view := range []string{chstore.ViewScoresNumeric, chstore.ViewScoresBoolean, chstore.ViewScoresCategorical} {
		rows, err := h.scores.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: view, Dimensions: []string{"name"},
			Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}}, From: tr.From, To: tr.To, RowLimit: maxNames,
			OrderBy: []chstore.MetricOrder{{Field: "count_count", Desc: true}}})
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if n := fmt.Sprint(row["name"]); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// distribution is one score name's values in the window: a histogram of
// numbers, or the count of each category (booleans as categories).
type distribution struct {
	Name  string
	Bins  []bin
	Max   float64
	Total float64
}

type bin struct {
	Label string
	Count float64
}

func (h *handlers) distribution(r *web.Request, name string, tr web.TimeRange) (*distribution, error) {
	d := &distribution{Name: name}
	nameIs := []chstore.Filter{{Column: "name", Type: "string", Operator: "=", Value: name}}
	rows, err := h.scores.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewScoresNumeric,
		Metrics: []chstore.Metric{{Measure: "value", Aggregation: "histogram"}}, Filters: nameIs, From: tr.From, To: tr.To, Bins: 10})
	if err != nil {
		return nil, err
	}
	if len(rows) == 1 {
		if hist, ok := rows[0]["histogram_value"].([]any); ok {
			for _, b := range hist {
				edges, ok := b.([]any)
				if !ok || len(edges) != 3 {
					continue
				}
				lo, hi, n := toFloat(edges[0]), toFloat(edges[1]), toFloat(edges[2])
				d.Bins = append(d.Bins, bin{Label: web.FormatFloat(lo) + "–" + web.FormatFloat(hi), Count: n})
			}
		}
	}
	if len(d.Bins) == 0 {
		for _, view := range []string{chstore.ViewScoresCategorical, chstore.ViewScoresBoolean} {
			rows, err := h.scores.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: view, Dimensions: []string{"stringValue"},
				Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}}, Filters: nameIs, From: tr.From, To: tr.To,
				OrderBy: []chstore.MetricOrder{{Field: "count_count", Desc: true}}})
			if err != nil {
				return nil, err
			}
			for _, row := range rows {
				d.Bins = append(d.Bins, bin{Label: fmt.Sprint(row["stringValue"]), Count: toFloat(row["count_count"])})
			}
		}
	}
	for _, b := range d.Bins {
		d.Max, d.Total = math.Max(d.Max, b.Count), d.Total+b.Count
	}
	return d, nil
}

// agreement compares two score names on the traces scored with both: how
// many, how often they agree exactly, and for numbers (booleans as 0 and
// 1) their mean absolute difference and correlation.
type agreement struct {
	A, B        string
	Pairs       int
	Exact       float64 // share of pairs with equal values
	MeanAbsDiff float64
	Correlation float64
	// HasNumbers is false for categories, which have no difference; and
	// HasCorrelation is false when a side does not vary.
	HasNumbers, HasCorrelation bool
}

// maxAgreementTraces bounds the traces compared: two rows each, within
// the engine's row limit of 1000.
const maxAgreementTraces = 500

func (h *handlers) agreement(r *web.Request, a, b string, tr web.TimeRange) (*agreement, error) {
	both := []chstore.Filter{{Column: "name", Type: "stringOptions", Operator: "any of", Value: []any{a, b}}}
	// Each trace's value per name: numbers (booleans as 0 and 1) averaged,
	// categories by their most frequent label.
	num := map[string]map[string]float64{}
	label := map[string]map[string]string{}
	put := func(m map[string]map[string]string, trace, name, v string) {
		if m[trace] == nil {
			m[trace] = map[string]string{}
		}
		m[trace][name] = v
	}
	for _, view := range []string{chstore.ViewScoresNumeric, chstore.ViewScoresBoolean} {
		rows, err := h.scores.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: view, Dimensions: []string{"traceId", "name"},
			Metrics: []chstore.Metric{{Measure: "value", Aggregation: "avg"}}, From: tr.From, To: tr.To, RowLimit: 2 * maxAgreementTraces, Filters: both})
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			trace, name, v := fmt.Sprint(row["traceId"]), fmt.Sprint(row["name"]), toFloat(row["avg_value"])
			if num[trace] == nil {
				num[trace] = map[string]float64{}
			}
			num[trace][name] = v
			put(label, trace, name, web.FormatFloat(v))
		}
	}
	rows, err := h.scores.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewScoresCategorical,
		Dimensions: []string{"traceId", "name", "stringValue"}, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}},
		From: tr.From, To: tr.To, RowLimit: 2 * maxAgreementTraces, Filters: both, OrderBy: []chstore.MetricOrder{{Field: "count_count"}}})
	if err != nil {
		return nil, err
	}
	for _, row := range rows { // ascending counts: the most frequent label is written last
		put(label, fmt.Sprint(row["traceId"]), fmt.Sprint(row["name"]), fmt.Sprint(row["stringValue"]))
	}
	out := &agreement{A: a, B: b}
	var xs, ys []float64
	exact := 0
	for trace, v := range label {
		la, okA := v[a]
		lb, okB := v[b]
		if !okA || !okB || trace == "" {
			continue
		}
		out.Pairs++
		if la == lb {
			exact++
		}
		if x, ok := num[trace][a]; ok {
			if y, ok := num[trace][b]; ok {
				xs, ys = append(xs, x), append(ys, y)
			}
		}
	}
	if out.Pairs == 0 {
		return out, nil
	}
	out.Exact = float64(exact) / float64(out.Pairs)
	if len(xs) > 0 {
		var diff float64
		for i := range xs {
			diff += math.Abs(xs[i] - ys[i])
		}
		out.MeanAbsDiff, out.HasNumbers = diff/float64(len(xs)), true
		out.Correlation, out.HasCorrelation = pearson(xs, ys)
	}
	return out, nil
}

func pearson(xs, ys []float64) (float64, bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

func toFloat(v any) float64 {
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}
