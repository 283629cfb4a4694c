// Package dashboards serves the project's home dashboard and the custom
// dashboards people build from widgets, each a query of the metrics engine
// drawn as a chart on the server (SVG, no chart library).
package dashboards // import "github.com/glassbox-dev/glassbox/apiserver/ui/dashboards"

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store is the control plane's dashboards and widgets.
type Store interface {
	ListDashboards(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dashboard, int, error)
	GetDashboard(ctx context.Context, projectID, id string) (controlplane.Dashboard, error)
	CreateDashboard(ctx context.Context, projectID string, n controlplane.NewDashboard) (controlplane.Dashboard, error)
	UpdateDashboard(ctx context.Context, projectID, id string, u controlplane.DashboardUpdate) (controlplane.Dashboard, error)
	DeleteDashboard(ctx context.Context, projectID, id string) error
	CreateWidget(ctx context.Context, projectID string, w controlplane.DashboardWidget) (controlplane.DashboardWidget, error)
	GetWidget(ctx context.Context, projectID, id string) (controlplane.DashboardWidget, error)
	AddPlacement(ctx context.Context, projectID, dashboardID string, p controlplane.Placement, positioned bool) (controlplane.Dashboard, string, error)
	DeletePlacement(ctx context.Context, projectID, dashboardID, placementID string) (controlplane.Dashboard, error)
}

// Metrics runs metrics queries; *chstore.Store implements it.
type Metrics interface {
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

type handlers struct {
	store   Store
	metrics Metrics
	t       *web.Templates
	now     func() time.Time
}

// Routes registers the dashboard pages and returns the handler of the
// project's home dashboard, which the landing page serves once the project
// has data.
func Routes(app *web.App, store Store, metrics Metrics) (home func(*web.Request) error, err error) {
	t, err := app.Parse(pages, "dashboards.html", "dashboard.html")
	if err != nil {
		return nil, err
	}
	h := &handlers{store: store, metrics: metrics, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Observability", Label: "Dashboards", Path: "dashboards", Action: access.ProjectRead, Order: 90})
	base := "/project/{projectId}/dashboards"
	read := func(method, path string, fn func(*web.Request) error) web.Route {
		return web.Route{Method: method, Path: path, Access: web.InProject, Action: access.ProjectRead, Handler: fn}
	}
	write := func(path string, fn func(*web.Request) error) web.Route {
		return web.Route{Method: http.MethodPost, Path: path, Access: web.InProject, Action: access.DashboardsWrite, Handler: fn}
	}
	return h.home, app.Handle(
		read(http.MethodGet, base, h.list),
		write(base, h.create),
		read(http.MethodGet, base+"/{dashboardId}", h.dashboard),
		write(base+"/{dashboardId}/delete", h.delete),
		write(base+"/{dashboardId}/widgets", h.addWidget),
		write(base+"/{dashboardId}/widgets/{placementId}/move", h.moveWidget),
		write(base+"/{dashboardId}/widgets/{placementId}/delete", h.removeWidget),
	)
}

// widget is one chart of a dashboard: a metrics query and how to draw it.
type widget struct {
	Name  string
	Chart string
	Query chstore.MetricsQuery
	// PlacementID identifies it on a custom dashboard; empty on the home.
	PlacementID string
	// Size is its width in columns of a 12-column grid.
	Size int
}

func metric(measure, agg string) chstore.Metric {
	return chstore.Metric{Measure: measure, Aggregation: agg}
}

var generationsOnly = []chstore.Filter{{Column: "type", Type: "string", Operator: "=", Value: "GENERATION"}}

// homeWidgets are the project home's charts: volume, cost, tokens, latency,
// quality and errors at a glance.
var homeWidgets = []widget{
	{Name: "Traces", Chart: chartNumber, Size: 3, Query: chstore.MetricsQuery{View: chstore.ViewTraces, Metrics: []chstore.Metric{metric("count", "count")}}},
	{Name: "Observations", Chart: chartNumber, Size: 3, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: []chstore.Metric{metric("count", "count")}}},
	{Name: "Total cost", Chart: chartNumber, Size: 3, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: []chstore.Metric{metric("totalCost", "sum")}}},
	{Name: "Users", Chart: chartNumber, Size: 3, Query: chstore.MetricsQuery{View: chstore.ViewTraces, Metrics: []chstore.Metric{metric("uniqueUserIds", "uniq")}}},
	{Name: "Traces over time", Chart: chartArea, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewTraces, Metrics: []chstore.Metric{metric("count", "count")}}},
	{Name: "Cost by model", Chart: chartHBar, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Dimensions: []string{"providedModelName"},
		Metrics: []chstore.Metric{metric("totalCost", "sum")}, Filters: generationsOnly}},
	{Name: "Tokens over time by model", Chart: chartLine, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Dimensions: []string{"providedModelName"},
		Metrics: []chstore.Metric{metric("totalTokens", "sum")}, Filters: generationsOnly}},
	{Name: "Traces by name", Chart: chartHBar, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewTraces, Dimensions: []string{"name"},
		Metrics: []chstore.Metric{metric("count", "count")}}},
	{Name: "Generation latency by name", Chart: chartTable, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Dimensions: []string{"name"},
		Metrics: []chstore.Metric{metric("latency", "p50"), metric("latency", "p95"), metric("count", "count")}, Filters: generationsOnly}},
	{Name: "Scores", Chart: chartTable, Size: 6, Query: chstore.MetricsQuery{View: chstore.ViewScoresNumeric, Dimensions: []string{"name"},
		Metrics: []chstore.Metric{metric("value", "avg"), metric("count", "count")}}},
	{Name: "Errors over time", Chart: chartBarTime, Size: 12, Query: chstore.MetricsQuery{View: chstore.ViewObservations, Metrics: []chstore.Metric{metric("count", "count")},
		Filters: []chstore.Filter{{Column: "level", Type: "string", Operator: "=", Value: "ERROR"}}}},
}

// renderedWidget is a widget with what its chart shows.
type renderedWidget struct {
	widget
	View chartView
}

type dashboardData struct {
	Dashboard controlplane.Dashboard
	Home      bool
	Range     web.TimeRange
	Widgets   []renderedWidget
	Form      widgetForm
	Error     string
	// Choices fill the widget form.
	Views      []string
	Schemas    map[string]viewSchema
	ChartTypes []struct{ Key, Label string }
	Aggs       []string
	Operators  []string
}

type viewSchema struct {
	Dimensions []string
	Measures   []string
}

// run queries every widget over the range; a widget whose query the engine
// refuses shows why, in its own tile.
func (h *handlers) run(r *web.Request, ws []widget, tr web.TimeRange) []renderedWidget {
	out := make([]renderedWidget, len(ws))
	for i, w := range ws {
		q := w.Query
		q.From, q.To = tr.From, tr.To
		if timeSeries(w.Chart) {
			q.Granularity = "auto"
		}
		rows, err := h.metrics.Metrics(r.Context(), r.Project.ID, q)
		var v chartView
		var qe *chstore.QueryError
		switch {
		case errors.As(err, &qe):
			v = chartView{Chart: w.Chart, Error: qe.Message}
		case errors.Is(err, chstore.ErrUnavailable):
			v = chartView{Chart: w.Chart, Error: "The trace store is unavailable right now."}
		case err != nil:
			v = chartView{Chart: w.Chart, Error: "This chart could not be loaded."}
			r.App().Logger().Warn("dashboard widget failed", zap.String("widget", w.Name), zap.Error(err))
		default:
			v = draw(w.Chart, q, rows)
		}
		out[i] = renderedWidget{widget: w, View: v}
	}
	return out
}

func (h *handlers) home(r *web.Request) error {
	tr := web.ReadTimeRange(r.URL.Query(), "7d", h.now())
	return r.Render(h.t, "dashboard", dashboardData{Home: true, Range: tr, Widgets: h.run(r, homeWidgets, tr),
		Dashboard: controlplane.Dashboard{Name: "Home"}})
}

type listData struct {
	Dashboards []controlplane.Dashboard
	Error      string
	Name       string
}

func (h *handlers) list(r *web.Request) error {
	return h.renderList(r, listData{})
}

func (h *handlers) renderList(r *web.Request, d listData) error {
	ds, _, err := h.store.ListDashboards(r.Context(), r.Project.ID, 0, 100)
	if err != nil {
		return err
	}
	d.Dashboards = ds
	return r.Render(h.t, "dashboards", d)
}

func (h *handlers) create(r *web.Request) error {
	name := strings.TrimSpace(r.PostFormValue("name"))
	d, err := h.store.CreateDashboard(r.Context(), r.Project.ID, controlplane.NewDashboard{Name: name,
		Description: strings.TrimSpace(r.PostFormValue("description"))})
	if errors.Is(err, controlplane.ErrInvalid) {
		return h.renderList(r, listData{Error: err.Error(), Name: name})
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "dashboards", d.ID))
}

func (h *handlers) delete(r *web.Request) error {
	if err := h.store.DeleteDashboard(r.Context(), r.Project.ID, r.PathValue("dashboardId")); err != nil {
		return notFound(err)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "dashboards"))
}

func notFound(err error) error {
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	return err
}

func (h *handlers) dashboard(r *web.Request) error {
	return h.renderDashboard(r, widgetForm{Chart: chartLine, View: chstore.ViewObservations, Measure: "count", Agg: "count"}, "")
}

func (h *handlers) renderDashboard(r *web.Request, form widgetForm, formErr string) error {
	d, err := h.store.GetDashboard(r.Context(), r.Project.ID, r.PathValue("dashboardId"))
	if err != nil {
		return notFound(err)
	}
	placements := slices.Clone(d.Definition.Widgets)
	slices.SortStableFunc(placements, func(a, b controlplane.Placement) int { return cmp.Or(cmp.Compare(a.Y, b.Y), cmp.Compare(a.X, b.X)) })
	var ws []widget
	for _, p := range placements {
		if p.Type != controlplane.PlacementWidget {
			continue
		}
		sw, err := h.store.GetWidget(r.Context(), r.Project.ID, p.WidgetID)
		if errors.Is(err, controlplane.ErrNotFound) {
			continue // deleted through the API; the tile goes with it
		}
		if err != nil {
			return err
		}
		w, err := fromStored(sw)
		if err != nil {
			w = widget{Name: sw.Name, Chart: chartTable}
		}
		w.PlacementID, w.Size = p.ID, min(max(p.XSize, 3), 12)
		ws = append(ws, w)
	}
	tr := web.ReadTimeRange(r.URL.Query(), "7d", h.now())
	data := dashboardData{Dashboard: d, Range: tr, Widgets: h.run(r, ws, tr), Form: form, Error: formErr,
		ChartTypes: chartTypes, Aggs: aggregations, Operators: operators, Schemas: map[string]viewSchema{}}
	for _, v := range widgetViews {
		dims, measures, _ := chstore.ViewSchema(v)
		s := viewSchema{Dimensions: dims}
		for m := range measures {
			s.Measures = append(s.Measures, m)
		}
		slices.Sort(s.Measures)
		data.Views = append(data.Views, v)
		data.Schemas[v] = s
	}
	return r.Render(h.t, "dashboard", data)
}

// widgetViews are the views a widget may query, as Langfuse's widgets allow.
var widgetViews = controlplane.WidgetViews

// operators are the form's string filter operators.
var operators = []string{"=", "contains", "starts with", "ends with", "does not contain"}

var aggregations = controlplane.WidgetAggregations

// storedDimension and storedMetric are the widget JSON Langfuse's API keeps.
type storedDimension struct {
	Field string `json:"field"`
}

type storedMetric struct {
	Measure string `json:"measure"`
	Agg     string `json:"agg"`
}

func fromStored(sw controlplane.DashboardWidget) (widget, error) {
	w := widget{Name: sw.Name, Chart: sw.ChartType, Query: chstore.MetricsQuery{View: sw.View}}
	var dims []storedDimension
	var metrics []storedMetric
	if err := errors.Join(unmarshal(sw.Dimensions, &dims), unmarshal(sw.Metrics, &metrics), unmarshal(sw.Filters, &w.Query.Filters)); err != nil {
		return widget{}, err
	}
	for _, d := range dims {
		w.Query.Dimensions = append(w.Query.Dimensions, d.Field)
	}
	for _, m := range metrics {
		w.Query.Metrics = append(w.Query.Metrics, chstore.Metric{Measure: m.Measure, Aggregation: m.Agg})
	}
	if len(w.Query.Metrics) == 0 {
		return widget{}, errors.New("no metric")
	}
	return w, nil
}

func unmarshal(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// widgetForm is the add-widget form: one metric, at most one dimension and
// one filter, which is what most charts need; the API takes more.
type widgetForm struct {
	Name, View, Measure, Agg, Dimension, Chart string
	FilterColumn, FilterOperator, FilterValue  string
}

func (f widgetForm) widget() (controlplane.DashboardWidget, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", controlplane.ErrInvalid, fmt.Sprintf(format, args...))
	}
	if f.Name == "" {
		return controlplane.DashboardWidget{}, bad("a widget needs a name")
	}
	dims, measures, ok := chstore.ViewSchema(f.View)
	if !ok || !slices.Contains(widgetViews, f.View) {
		return controlplane.DashboardWidget{}, bad("choose a view")
	}
	numeric, known := measures[f.Measure]
	switch {
	case !known:
		return controlplane.DashboardWidget{}, bad("the view %s has no measure %q", f.View, f.Measure)
	case !slices.Contains(aggregations, f.Agg):
		return controlplane.DashboardWidget{}, bad("choose an aggregation")
	case !numeric && f.Agg != "count" && f.Agg != "uniq":
		return controlplane.DashboardWidget{}, bad("%s can only be counted (count or uniq)", f.Measure)
	case f.Dimension != "" && !slices.Contains(dims, f.Dimension):
		return controlplane.DashboardWidget{}, bad("the view %s has no dimension %q", f.View, f.Dimension)
	case !slices.ContainsFunc(chartTypes, func(c struct{ Key, Label string }) bool { return c.Key == f.Chart }):
		return controlplane.DashboardWidget{}, bad("choose a chart type")
	case (f.Agg == "histogram") != (f.Chart == chartHistogram):
		return controlplane.DashboardWidget{}, bad("a histogram chart takes the histogram aggregation, and only it")
	}
	w := controlplane.DashboardWidget{Name: f.Name, View: f.View, ChartType: f.Chart,
		ChartConfig: json.RawMessage(`{"type":"` + f.Chart + `"}`)}
	w.Metrics, _ = json.Marshal([]storedMetric{{Measure: f.Measure, Agg: f.Agg}})
	var d []storedDimension
	if f.Dimension != "" {
		d = append(d, storedDimension{Field: f.Dimension})
	}
	w.Dimensions, _ = json.Marshal(d)
	var filters []chstore.Filter
	if f.FilterColumn != "" {
		if !slices.Contains(operators, f.FilterOperator) {
			return controlplane.DashboardWidget{}, bad("choose a filter operator")
		}
		filters = append(filters, chstore.Filter{Column: f.FilterColumn, Type: "string", Operator: f.FilterOperator, Value: f.FilterValue})
	}
	w.Filters, _ = json.Marshal(filters)
	return w, nil
}

func (h *handlers) addWidget(r *web.Request) error {
	f := widgetForm{Name: strings.TrimSpace(r.PostFormValue("name")), View: r.PostFormValue("view"), Measure: r.PostFormValue("measure"),
		Agg: r.PostFormValue("agg"), Dimension: r.PostFormValue("dimension"), Chart: r.PostFormValue("chart"),
		FilterColumn: r.PostFormValue("filter_column"), FilterOperator: r.PostFormValue("filter_operator"), FilterValue: strings.TrimSpace(r.PostFormValue("filter_value"))}
	dashboardID := r.PathValue("dashboardId")
	if _, err := h.store.GetDashboard(r.Context(), r.Project.ID, dashboardID); err != nil {
		return notFound(err)
	}
	sw, err := f.widget()
	if err == nil {
		// The engine checks the query before it is saved.
		var w widget
		if w, err = fromStored(sw); err == nil {
			q := w.Query
			q.From, q.To = h.now().Add(-time.Hour), h.now()
			_, err = h.metrics.Metrics(r.Context(), r.Project.ID, q)
			var qe *chstore.QueryError
			if errors.As(err, &qe) {
				err = fmt.Errorf("%w: %s", controlplane.ErrInvalid, qe.Message)
			}
		}
	}
	if err == nil {
		sw, err = h.store.CreateWidget(r.Context(), r.Project.ID, sw)
	}
	if err == nil {
		size := 6
		switch f.Chart {
		case chartNumber:
			size = 3
		case chartTable:
			size = 12
		}
		_, _, err = h.store.AddPlacement(r.Context(), r.Project.ID, dashboardID,
			controlplane.Placement{Type: controlplane.PlacementWidget, WidgetID: sw.ID, XSize: size, YSize: 5}, false)
	}
	if errors.Is(err, controlplane.ErrInvalid) {
		return h.renderDashboard(r, f, strings.TrimPrefix(err.Error(), controlplane.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "dashboards", dashboardID))
}

func (h *handlers) removeWidget(r *web.Request) error {
	dashboardID := r.PathValue("dashboardId")
	if _, err := h.store.DeletePlacement(r.Context(), r.Project.ID, dashboardID, r.PathValue("placementId")); err != nil {
		return notFound(err)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "dashboards", dashboardID))
}

// moveWidget swaps a tile with the one before or after it in reading order.
func (h *handlers) moveWidget(r *web.Request) error {
	dashboardID, placementID := r.PathValue("dashboardId"), r.PathValue("placementId")
	d, err := h.store.GetDashboard(r.Context(), r.Project.ID, dashboardID)
	if err != nil {
		return notFound(err)
	}
	ps := d.Definition.Widgets
	slices.SortStableFunc(ps, func(a, b controlplane.Placement) int { return cmp.Or(cmp.Compare(a.Y, b.Y), cmp.Compare(a.X, b.X)) })
	i := slices.IndexFunc(ps, func(p controlplane.Placement) bool { return p.ID == placementID })
	if i < 0 {
		return web.ErrNotFound
	}
	j := i + 1
	if r.PostFormValue("dir") == "up" {
		j = i - 1
	}
	if j >= 0 && j < len(ps) {
		ps[i].X, ps[j].X = ps[j].X, ps[i].X
		ps[i].Y, ps[j].Y = ps[j].Y, ps[i].Y
		def := controlplane.DashboardDefinition{Widgets: ps}
		if _, err := h.store.UpdateDashboard(r.Context(), r.Project.ID, dashboardID, controlplane.DashboardUpdate{Definition: &def}); err != nil {
			return err
		}
	}
	return r.Redirect(r.Path("project", r.Project.ID, "dashboards", dashboardID))
}
