package tracing

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

type userData struct {
	UserID              string
	Traces              int
	FirstSeen, LastSeen time.Time
	Table               *web.Table
}

// user is one user's page: when they were first and last seen, how many
// traces they have, and the traces themselves, newest first, with the
// table's columns, sorting and pages.
func (h *handlers) user(r *web.Request) error {
	id := r.PathValue("userId")
	q := r.URL.Query()
	state := web.ReadTableState(q, traceColumns, "timestamp", true)
	f := chstore.TraceFilter{ProjectID: r.Project.ID, UserID: id, OrderBy: chstore.TraceOrder{Field: traceOrders[state.Sort], Desc: state.Desc},
		Page: state.Page, Limit: state.Limit}
	traces, total, err := h.store.ListTraces(r.Context(), f)
	if err != nil {
		return err
	}
	if total == 0 {
		return &web.Error{Status: http.StatusNotFound, Message: "No trace of this project carries this user id."}
	}
	d := userData{UserID: id, Traces: total}
	for _, desc := range []bool{false, true} {
		edge, _, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, UserID: id,
			OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderTimestamp, Desc: desc}, Limit: 1})
		if err != nil {
			return err
		}
		if len(edge) > 0 {
			at := time.UnixMicro(edge[0].Timestamp).UTC()
			if desc {
				d.LastSeen = at
			} else {
				d.FirstSeen = at
			}
		}
	}
	d.Table = web.NewTable("traces", r.Path("project", r.Project.ID, "users", id), traceColumns, state)
	d.Table.Total = total
	list := url.Values{"user": {id}, "range": {"1y"}}.Encode()
	for _, tr := range traces {
		d.Table.Rows = append(d.Table.Rows, traceRow(r, d.Table, tr, r.Path("project", r.Project.ID, "traces", tr.ID)+"?list="+url.QueryEscape(list)))
	}
	return r.Render(h.t, "user", d)
}

// maxUsers bounds the users list: the most active in the window.
const maxUsers = 200

var userColumns = []web.Column{
	{Key: "user", Label: "User"},
	{Key: "traces", Label: "Traces", Sortable: true, Numeric: true},
	{Key: "tokens", Label: "Tokens", Sortable: true, Numeric: true},
	{Key: "cost", Label: "Cost", Sortable: true, Numeric: true},
	{Key: "first", Label: "First seen", Sortable: true},
	{Key: "last", Label: "Last seen", Sortable: true},
}

// userMetrics are the users list's figures, by the column that sorts by
// each: one query of the metrics engine over the traces view.
var userMetrics = map[string]chstore.Metric{
	"traces": {Measure: "count", Aggregation: "count"},
	"tokens": {Measure: "totalTokens", Aggregation: "sum"},
	"cost":   {Measure: "totalCost", Aggregation: "sum"},
	"first":  {Measure: "timestamp", Aggregation: "min"},
	"last":   {Measure: "timestamp", Aggregation: "max"},
}

type usersData struct {
	Table *web.Table
	Range web.TimeRange
	// Capped says the window has more users than the list shows.
	Capped bool
}

// users lists the users of the window, most active first by the chosen
// column, with their traces, tokens, cost, first and last seen.
func (h *handlers) users(r *web.Request) error {
	q := r.URL.Query()
	state := web.ReadTableState(q, userColumns, "traces", true)
	tr := web.ReadTimeRange(q, "7d", h.now())
	query := chstore.MetricsQuery{View: chstore.ViewTraces, Dimensions: []string{"userId"}, From: tr.From, To: tr.To,
		Filters: []chstore.Filter{{Column: "userId", Type: "null", Operator: "is not null"}}, RowLimit: maxUsers + 1}
	for _, key := range []string{"traces", "tokens", "cost", "first", "last"} {
		query.Metrics = append(query.Metrics, userMetrics[key])
	}
	query.OrderBy = []chstore.MetricOrder{{Field: userMetrics[state.Sort].Key(), Desc: state.Desc}, {Field: "userId"}}
	rows, err := h.store.Metrics(r.Context(), r.Project.ID, query)
	if err != nil {
		return err
	}
	d := usersData{Range: tr, Capped: len(rows) > maxUsers}
	rows = rows[:min(len(rows), maxUsers)]
	d.Table = web.NewTable("users", r.Path("project", r.Project.ID, "users"), userColumns, state)
	d.Table.Total = len(rows)
	start := min((state.Page-1)*state.Limit, len(rows))
	rows = rows[start:min(start+state.Limit, len(rows))]
	d.Table.Empty = "No trace in " + strings.ToLower(tr.Label()) + " names a user. Traces carry a user id when the SDK is given one."
	for _, row := range rows {
		id := fmt.Sprint(row["userId"])
		href := r.Path("project", r.Project.ID, "users", id)
		out := web.Row{ID: id, Href: href}
		for _, c := range d.Table.Columns {
			v := row[userMetrics[c.Key].Key()]
			switch c.Key {
			case "user":
				out.Cells = append(out.Cells, web.Cell{Text: id, Href: href, Class: "mono"})
			case "traces", "tokens":
				n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
				out.Cells = append(out.Cells, web.Cell{Text: web.FormatInt(n)})
			case "cost":
				f, _ := v.(float64)
				out.Cells = append(out.Cells, web.Cell{Text: web.FormatCost(f)})
			case "first", "last":
				us, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
				out.Cells = append(out.Cells, web.Cell{Text: web.FormatTime(time.UnixMicro(us))})
			}
		}
		d.Table.Rows = append(d.Table.Rows, out)
	}
	return r.Render(h.t, "users", d)
}
