// Package alerts serves the project's alert pages: the alerts with their
// state, a form that builds one (a metric of a view with filters, or its
// ratio to another metric, a comparison, a window and a webhook), pausing,
// deleting, and each alert's history. The rules are apiserver/alerts', the
// same the API applies.
package alerts // import "github.com/glassbox-dev/glassbox/apiserver/ui/alerts"

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

type handlers struct {
	svc alerts.Service
	t   *web.Templates
}

// Routes registers the alert pages.
func Routes(app *web.App, svc alerts.Service) error {
	t, err := app.Parse(pages, "alerts.html", "alert.html")
	if err != nil {
		return err
	}
	h := &handlers{svc: svc, t: t}
	app.AddNav(web.NavItem{Section: "Observability", Label: "Alerts", Path: "alerts", Action: access.AlertsRead, Order: 95})
	base := "/project/{projectId}/alerts"
	read := func(path string, fn func(*web.Request) error) web.Route {
		return web.Route{Method: http.MethodGet, Path: path, Access: web.InProject, Action: access.AlertsRead, Handler: fn}
	}
	write := func(path string, fn func(*web.Request) error) web.Route {
		return web.Route{Method: http.MethodPost, Path: path, Access: web.InProject, Action: access.AlertsWrite, Handler: fn}
	}
	return app.Handle(
		read(base, h.list),
		write(base, h.create),
		read(base+"/{alertId}", h.alert),
		write(base+"/{alertId}/pause", h.pause),
		write(base+"/{alertId}/delete", h.delete),
	)
}

// views the form offers, and their aggregations (one number each).
var (
	views        = []string{chstore.ViewObservations, chstore.ViewTraces, chstore.ViewScoresNumeric, chstore.ViewScoresBoolean, chstore.ViewScoresCategorical}
	aggregations = slices.DeleteFunc(slices.Clone(controlplane.WidgetAggregations), func(a string) bool { return a == "histogram" })
	// operators of a filter row; the filter's type follows from it.
	filterOperators = []string{"=", "contains", "does not contain", "starts with", "ends with", "any of", "none of", ">", ">=", "<", "<="}
	windows         = []string{"5m", "15m", "30m", "1h", "6h", "24h"}
	intervals       = []string{"1m", "5m", "15m", "1h"}
)

// filterRows is how many filter rows the form has.
const filterRows = 3

type viewSchema struct {
	Dimensions []string
	Measures   []string
}

// row is one alert as the list shows it.
type row struct {
	alerts.Alert
	Stored    controlplane.Alert // its times, for the time helpers
	Condition string
	Host      string
}

type listData struct {
	Alerts []row
	Form   form
	Error  string
	// Choices fill the form.
	Views           []string
	Schemas         map[string]viewSchema
	Aggs            []string
	Comparisons     []string
	FilterOperators []string
	Windows         []string
	Intervals       []string
	Formats         []string
}

type form struct {
	Name, View, Measure, Agg, DenMeasure, DenAgg string
	Filters                                      []filterRow
	Operator, Threshold, Window, Interval, For   string
	URL, Format                                  string
}

type filterRow struct{ Column, Operator, Value string }

func defaultForm() form {
	f := form{View: chstore.ViewObservations, Measure: "latency", Agg: "p95", Operator: ">", Window: "15m", Interval: "1m", For: "1",
		Format: alerts.DefaultFormat}
	f.Filters = make([]filterRow, filterRows)
	return f
}

func (h *handlers) listData(r *web.Request, f form, formErr string) (*listData, error) {
	stored, _, err := h.svc.Store.ListAlerts(r.Context(), r.Project.ID, 0, 1000)
	if err != nil {
		return nil, err
	}
	d := &listData{Form: f, Error: formErr, Views: views, Aggs: aggregations, Comparisons: controlplane.AlertOperators,
		FilterOperators: filterOperators, Windows: windows, Intervals: intervals, Formats: controlplane.AlertFormats,
		Schemas: map[string]viewSchema{}}
	for _, a := range stored {
		v := alerts.ToAlert(a)
		d.Alerts = append(d.Alerts, row{Alert: v, Stored: a, Condition: condition(v), Host: host(v.Target.URL)})
	}
	for _, v := range views {
		dims, measures, _ := chstore.ViewSchema(v)
		s := viewSchema{Dimensions: dims}
		for m := range measures {
			s.Measures = append(s.Measures, m)
		}
		slices.Sort(s.Measures)
		d.Schemas[v] = s
	}
	return d, nil
}

// condition says what an alert compares, in words.
func condition(a alerts.Alert) string {
	describe := func(q alerts.Query) string {
		s := q.Metric.Aggregation + " " + q.Metric.Measure + " of " + q.View
		if n := len(q.Filters); n > 0 {
			var parts []string
			for _, f := range q.Filters {
				parts = append(parts, fmt.Sprintf("%s %s %v", f.Column, f.Operator, f.Value))
			}
			s += " where " + strings.Join(parts, " and ")
		}
		return s
	}
	s := describe(a.Query)
	if a.Denominator != nil {
		s = "(" + s + ") / (" + describe(*a.Denominator) + ")"
	}
	return fmt.Sprintf("%s %s %s over %s", s, a.Operator, strconv.FormatFloat(a.Threshold, 'g', -1, 64), a.Window)
}

// host is the part of a webhook URL the pages show: webhook URLs such as
// Slack's carry their secret in the path.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

func (h *handlers) list(r *web.Request) error {
	d, err := h.listData(r, defaultForm(), "")
	if err != nil {
		return err
	}
	return r.Render(h.t, "alerts", d)
}

// readForm reads the posted form into the API's request, so that the
// page and the API check alike.
func readForm(r *web.Request) (form, alerts.AlertRequest, error) {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := form{Name: v("name"), View: v("view"), Measure: v("measure"), Agg: v("agg"), DenMeasure: v("den_measure"), DenAgg: v("den_agg"),
		Operator: v("operator"), Threshold: v("threshold"), Window: v("window"), Interval: v("interval"), For: v("for"),
		URL: v("url"), Format: v("format")}
	cols, ops, vals := r.PostForm["filter_column"], r.PostForm["filter_operator"], r.PostForm["filter_value"]
	q := alerts.Query{View: f.View, Metric: alerts.Metric{Measure: f.Measure, Aggregation: f.Agg}, Filters: []chstore.Filter{}}
	var ferr error
	for i := range filterRows {
		fr := filterRow{}
		if i < len(cols) && i < len(ops) && i < len(vals) {
			fr = filterRow{Column: strings.TrimSpace(cols[i]), Operator: ops[i], Value: strings.TrimSpace(vals[i])}
		}
		f.Filters = append(f.Filters, fr)
		if fr.Column == "" {
			continue
		}
		flt, err := filterOf(fr)
		if err != nil && ferr == nil {
			ferr = err
		}
		q.Filters = append(q.Filters, flt)
	}
	threshold, err := strconv.ParseFloat(f.Threshold, 64)
	if err != nil && ferr == nil {
		ferr = fmt.Errorf("threshold %q is not a number", f.Threshold)
	}
	forCount, err := strconv.Atoi(cmpOr(f.For, "1"))
	if err != nil && ferr == nil {
		ferr = fmt.Errorf("for %q is not a whole number of evaluations", f.For)
	}
	req := alerts.AlertRequest{Name: &f.Name, Query: &q, Operator: &f.Operator, Threshold: &threshold, For: &forCount,
		Window: quoted(f.Window), Interval: quoted(cmpOr(f.Interval, "1m")), Target: &alerts.TargetRequest{URL: f.URL, Format: f.Format}}
	if f.DenAgg != "" {
		d := alerts.Query{View: f.View, Metric: alerts.Metric{Measure: f.DenMeasure, Aggregation: f.DenAgg}}
		req.Denominator, _ = json.Marshal(d)
	}
	return f, req, ferr
}

// filterOf reads a filter row; its operator decides the filter's type.
func filterOf(fr filterRow) (chstore.Filter, error) {
	flt := chstore.Filter{Column: fr.Column, Operator: fr.Operator, Type: "string", Value: fr.Value}
	switch fr.Operator {
	case "any of", "none of":
		var values []any
		for s := range strings.SplitSeq(fr.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				values = append(values, s)
			}
		}
		flt.Type, flt.Value = "stringOptions", values
	case ">", ">=", "<", "<=":
		n, err := strconv.ParseFloat(fr.Value, 64)
		if err != nil {
			return flt, fmt.Errorf("filter on %s: %q is not a number", fr.Column, fr.Value)
		}
		flt.Type, flt.Value = "number", n
	}
	return flt, nil
}

func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// message is what a form shows for a refusal; other errors go to the
// error page.
func message(err error) (string, error) {
	var he *httpx.Error
	if errors.As(err, &he) && he.Status == http.StatusBadRequest {
		return he.Message, nil
	}
	return "", err
}

func (h *handlers) create(r *web.Request) error {
	f, req, err := readForm(r)
	if err == nil {
		_, err = h.svc.Create(r.Context(), r.Project.ID, req)
		if err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "alerts"))
		}
		var msg string
		if msg, err = message(err); err != nil {
			return err
		}
		err = errors.New(msg)
	}
	d, lerr := h.listData(r, f, err.Error())
	if lerr != nil {
		return lerr
	}
	return r.RenderStatus(http.StatusBadRequest, h.t, "alerts", d)
}

type alertData struct {
	Alert     alerts.Alert
	Stored    controlplane.Alert
	Condition string
	Host      string
	History   []controlplane.AlertTransition
}

// historyLimit is how many transitions the page shows.
const historyLimit = 200

func (h *handlers) alert(r *web.Request) error {
	id := r.PathValue("alertId")
	a, err := h.svc.Store.GetAlert(r.Context(), r.Project.ID, id)
	if err != nil {
		return notFound(err)
	}
	hs, _, err := h.svc.Store.ListAlertHistory(r.Context(), r.Project.ID, id, 0, historyLimit)
	if err != nil {
		return notFound(err)
	}
	v := alerts.ToAlert(a)
	d := alertData{Alert: v, Stored: a, Condition: condition(v), Host: host(v.Target.URL), History: hs}
	return r.Render(h.t, "alert", d)
}

func notFound(err error) error {
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	return err
}

// pause pauses or resumes an alert (paused=true or false).
func (h *handlers) pause(r *web.Request) error {
	paused := r.PostFormValue("paused") == "true"
	id := r.PathValue("alertId")
	if _, err := h.svc.Update(r.Context(), r.Project.ID, id, alerts.AlertRequest{Paused: &paused}); err != nil {
		var he *httpx.Error
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			return web.ErrNotFound
		}
		if msg, err := message(err); err == nil {
			return web.BadRequest("%s", msg)
		}
		return err
	}
	return r.Redirect(back(r, id))
}

func (h *handlers) delete(r *web.Request) error {
	if err := h.svc.Store.DeleteAlert(r.Context(), r.Project.ID, r.PathValue("alertId")); err != nil {
		return notFound(err)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "alerts"))
}

// back is the page a pause came from: the alert's own, or the list.
func back(r *web.Request, id string) string {
	if r.PostFormValue("from") == "alert" {
		return r.Path("project", r.Project.ID, "alerts", id)
	}
	return r.Path("project", r.Project.ID, "alerts")
}
