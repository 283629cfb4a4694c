package tracing

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// traceColumns are the traces table's columns; the sortable ones map to
// the store's orders.
var traceColumns = []web.Column{
	{Key: "timestamp", Label: "Timestamp", Sortable: true},
	{Key: "name", Label: "Name", Sortable: true},
	{Key: "input", Label: "Input", Hidden: true},
	{Key: "output", Label: "Output", Hidden: true},
	{Key: "user", Label: "User", Sortable: true},
	{Key: "session", Label: "Session", Sortable: true},
	{Key: "tags", Label: "Tags"},
	{Key: "environment", Label: "Environment"},
	{Key: "level", Label: "Level"},
	{Key: "latency", Label: "Latency", Numeric: true},
	{Key: "tokens", Label: "Tokens", Numeric: true},
	{Key: "cost", Label: "Cost", Numeric: true},
	{Key: "observations", Label: "Observations", Numeric: true, Hidden: true},
	{Key: "release", Label: "Release", Sortable: true, Hidden: true},
	{Key: "version", Label: "Version", Sortable: true, Hidden: true},
	{Key: "id", Label: "Trace ID", Sortable: true, Hidden: true},
}

var traceOrders = map[string]string{
	"timestamp": chstore.TraceOrderTimestamp, "name": chstore.TraceOrderName, "user": chstore.TraceOrderUserID,
	"session": chstore.TraceOrderSessionID, "release": chstore.TraceOrderRelease, "version": chstore.TraceOrderVersion,
	"id": chstore.TraceOrderID,
}

type tracesData struct {
	Table   *web.Table
	List    listState
	Filters bool   // some filter besides the time range is set
	Notice  string // what the last bulk action did
	// Options is where a filter input fetches its values, with the
	// page's time range; the field is appended.
	Options string
}

func (h *handlers) traces(r *web.Request) error {
	q := r.URL.Query()
	if s := strings.TrimSpace(q.Get("q")); traceIDPattern.MatchString(s) {
		// An id in the search box opens that trace.
		if _, err := h.getTrace(r, s); err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "traces", s))
		}
	}
	list := readListState(q, h.now())
	// The score names (the score columns) are read while the traces are:
	// score columns do not sort, so the page's sort and paging come from
	// the fixed columns.
	type scoreNames struct {
		columns []web.Column
		err     error
	}
	names := make(chan scoreNames, 1)
	go func() {
		columns, err := h.scoreColumns(r, list.Range)
		names <- scoreNames{columns, err}
	}()
	state := web.ReadTableState(q, traceColumns, "timestamp", true)
	f, err := list.filter(r.Project.ID)
	if err != nil {
		return err
	}
	f.OrderBy = chstore.TraceOrder{Field: traceOrders[state.Sort], Desc: state.Desc}
	f.Page, f.Limit = state.Page, state.Limit
	traces, total, err := h.store.ListTraces(r.Context(), f)
	if err != nil {
		return err
	}
	if total == 0 && !list.filtered() && state.Page == 1 {
		// A project without any trace shows how to send one.
		any, _, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, Limit: 1})
		if err != nil {
			return err
		}
		if len(any) == 0 {
			return r.Redirect(r.Path("project", r.Project.ID))
		}
	}
	sn := <-names
	if sn.err != nil {
		return sn.err
	}
	columns := sn.columns
	state = web.ReadTableState(q, columns, "timestamp", true)
	table := web.NewTable("traces", r.Path("project", r.Project.ID, "traces"), columns, state)
	table.Total = total
	table.Empty = "No traces match these filters in " + strings.ToLower(list.Range.Label()) + "."
	if r.Can(access.TracesDelete) {
		table.Bulk = append(table.Bulk, web.BulkAction{Label: "Delete", Action: r.Path("project", r.Project.ID, "traces", "delete"),
			Confirm: "Delete the selected traces? This cannot be undone.", Danger: true})
	}
	if err := BulkTargets(r, h.cp, table, "traces"); err != nil {
		return err
	}
	notice := q.Get("notice")
	q.Del("notice")
	listQuery := q.Encode()
	averages, err := h.scoreAverages(r, traces, list.Range)
	if err != nil {
		return err
	}
	for _, tr := range traces {
		href := r.Path("project", r.Project.ID, "traces", tr.ID)
		if listQuery != "" {
			href += "?list=" + url.QueryEscape(listQuery)
		}
		row := traceRow(r, table, tr, href)
		for i, c := range table.Columns {
			if name, ok := strings.CutPrefix(c.Key, scoreColumnPrefix); ok {
				if avg, ok := averages[tr.ID][name]; ok {
					row.Cells[i] = web.Cell{Text: web.FormatFloat(avg)}
				}
			}
		}
		table.Rows = append(table.Rows, row)
	}
	opts := url.Values{}
	for _, k := range []string{"range", "from", "to"} {
		if v := q.Get(k); v != "" {
			opts.Set(k, v)
		}
	}
	// The field comes last: the template appends its name.
	optionsURL := r.Path("project", r.Project.ID, "traces", "filter-options") + "?"
	if len(opts) > 0 {
		optionsURL += opts.Encode() + "&"
	}
	return r.Render(h.t, "traces", tracesData{Table: table, List: list, Filters: list.filtered(), Notice: notice,
		Options: optionsURL + "field="})
}

func (s listState) filtered() bool {
	return s.Search != "" || s.Name != "" || s.User != "" || s.Session != "" || s.Release != "" || s.Version != "" ||
		len(s.Tags) > 0 || len(s.Envs) > 0 || s.MetaKey != "" || s.ScoreName != "" || s.CostMin != "" || s.CostMax != "" ||
		s.LatencyMin != "" || s.LatencyMax != "" || s.Text != "" || s.Advanced != ""
}

// scoreColumnPrefix keys the score columns: one per numeric score name of
// the window, holding each trace's average of that score.
const scoreColumnPrefix = "score:"

// maxScoreColumns bounds the score columns offered; the first few are
// shown, the rest are in the column chooser.
const (
	maxScoreColumns   = 20
	shownScoreColumns = 4
)

// scoreColumns are the trace columns plus one per numeric score name scored
// in the window, from the metrics engine.
func (h *handlers) scoreColumns(r *web.Request, tr web.TimeRange) ([]web.Column, error) {
	rows, err := h.store.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewScoresNumeric,
		Dimensions: []string{"name"}, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}},
		From: tr.From, To: h.now(), OrderBy: []chstore.MetricOrder{{Field: "count_count", Desc: true}, {Field: "name"}}, RowLimit: maxScoreColumns})
	if err != nil {
		return nil, err
	}
	columns := slices.Clone(traceColumns)
	for i, row := range rows {
		name := fmt.Sprint(row["name"])
		columns = append(columns, web.Column{Key: scoreColumnPrefix + name, Label: name, Numeric: true, Hidden: i >= shownScoreColumns})
	}
	return columns, nil
}

// scoreAverages is each listed trace's average of each numeric score.
func (h *handlers) scoreAverages(r *web.Request, traces []chstore.Trace, tr web.TimeRange) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	if len(traces) == 0 {
		return out, nil
	}
	ids := make([]any, len(traces))
	for i, t := range traces {
		ids[i] = t.ID
	}
	rows, err := h.store.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewScoresNumeric,
		Dimensions: []string{"traceId", "name"}, Metrics: []chstore.Metric{{Measure: "value", Aggregation: "avg"}},
		Filters: []chstore.Filter{{Column: "traceId", Type: "stringOptions", Operator: "any of", Value: ids}},
		From:    tr.From, To: h.now()})
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		trace, name := fmt.Sprint(row["traceId"]), fmt.Sprint(row["name"])
		if avg, ok := row["avg_value"].(float64); ok {
			if out[trace] == nil {
				out[trace] = map[string]float64{}
			}
			out[trace][name] = avg
		}
	}
	return out, nil
}

func traceRow(r *web.Request, t *web.Table, tr chstore.Trace, href string) web.Row {
	row := web.Row{ID: tr.ID, Href: href}
	p := r.Project.ID
	for _, c := range t.Columns {
		var cell web.Cell
		switch c.Key {
		case "timestamp":
			cell = web.Cell{Text: web.FormatTime(time.UnixMicro(tr.Timestamp)), Href: href}
		case "name":
			cell = web.Cell{Text: tr.Name, Title: tr.Name}
		case "input":
			cell = web.Cell{Text: web.Truncate(120, tr.Input), Title: web.Truncate(1000, tr.Input), Class: "mono"}
		case "output":
			cell = web.Cell{Text: web.Truncate(120, tr.Output), Title: web.Truncate(1000, tr.Output), Class: "mono"}
		case "user":
			cell = web.Cell{Text: tr.UserID}
			if tr.UserID != "" {
				cell.Href = r.Path("project", p, "users", tr.UserID)
			}
		case "session":
			cell = web.Cell{Text: tr.SessionID}
			if tr.SessionID != "" {
				cell.Href = r.Path("project", p, "sessions", tr.SessionID)
			}
		case "tags":
			cell = web.Cell{Tags: tr.Tags}
		case "environment":
			cell = web.Cell{Text: tr.Environment}
		case "level":
			cell = web.Cell{Text: tr.Level}
			if tr.Level == "ERROR" || tr.Level == "WARNING" {
				cell.Class = "level-" + tr.Level
			}
		case "latency":
			cell = web.Cell{Text: web.FormatMillis(tr.LatencySeconds * 1000)}
		case "tokens":
			cell = web.Cell{Text: web.FormatInt(tr.TotalTokens)}
		case "cost":
			cell = web.Cell{Text: web.FormatCost(tr.TotalCost)}
		case "observations":
			cell = web.Cell{Text: web.FormatInt(int64(len(tr.ObservationIDs)))}
		case "release":
			cell = web.Cell{Text: tr.Release}
		case "version":
			cell = web.Cell{Text: tr.Version}
		case "id":
			cell = web.Cell{Text: tr.ID, Class: "mono"}
		}
		row.Cells = append(row.Cells, cell)
	}
	return row
}

// deleteTraces deletes the selected traces of the project.
func (h *handlers) deleteTraces(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	ids := nonEmpty(r.PostForm["id"])
	if len(ids) == 0 {
		return web.BadRequest("Select the traces to delete.")
	}
	if len(ids) > 1000 {
		return web.BadRequest("Delete at most 1000 traces at once.")
	}
	if err := h.store.DeleteTraces(r.Context(), r.Project.ID, ids); err != nil {
		return err
	}
	// Back to the list as it was filtered, when the form came from it.
	back := r.Path("project", r.Project.ID, "traces")
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Path == back && ref.RawQuery != "" {
		back += "?" + ref.RawQuery
	}
	return r.Redirect(back)
}

// optionFields are the filters whose values are offered with their counts,
// by the traces view's dimension each reads.
var optionFields = map[string]string{"name": "name", "user": "userId", "session": "sessionId", "env": "environment", "release": "release"}

// maxOptions bounds the values offered for one filter.
const maxOptions = 50

type option struct {
	Value string
	Count string
}

type optionsData struct {
	Field   string
	Options []option
}

// filterOptions answers an input's first focus with the values of its
// field in the time range, most frequent first, with their trace counts:
// one metrics-engine query per field, only when someone looks.
func (h *handlers) filterOptions(r *web.Request) error {
	q := r.URL.Query()
	field := q.Get("field")
	dim, ok := optionFields[field]
	if !ok {
		return web.BadRequest("No options for %q.", field)
	}
	tr := web.ReadTimeRange(q, "7d", h.now())
	rows, err := h.store.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewTraces, Dimensions: []string{dim},
		Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}}, From: tr.From, To: tr.To, RowLimit: maxOptions,
		Filters: []chstore.Filter{{Column: dim, Type: "null", Operator: "is not null"}},
		OrderBy: []chstore.MetricOrder{{Field: "count_count", Desc: true}, {Field: dim}}})
	if err != nil {
		return err
	}
	d := optionsData{Field: field}
	for _, row := range rows {
		v := fmt.Sprint(row[dim])
		if v == "" {
			continue
		}
		n, _ := strconv.ParseInt(fmt.Sprint(row["count_count"]), 10, 64)
		d.Options = append(d.Options, option{Value: v, Count: web.FormatInt(n) + " traces"})
	}
	return r.RenderFragment(h.t, "traces", "options", d)
}
