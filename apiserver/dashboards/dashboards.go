// Package dashboards serves Langfuse's unstable dashboards API: dashboards
// (a grid of placements with dashboard-wide filters) and dashboard widgets
// (saved metrics queries with a chart type), the same objects the web UI's
// dashboards show.
package dashboards // import "github.com/glassbox-dev/glassbox/apiserver/dashboards"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes read and write.
type Store interface {
	CreateDashboard(ctx context.Context, projectID string, n controlplane.NewDashboard) (controlplane.Dashboard, error)
	GetDashboard(ctx context.Context, projectID, id string) (controlplane.Dashboard, error)
	ListDashboards(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dashboard, int, error)
	UpdateDashboard(ctx context.Context, projectID, id string, u controlplane.DashboardUpdate) (controlplane.Dashboard, error)
	DeleteDashboard(ctx context.Context, projectID, id string) error
	AddPlacement(ctx context.Context, projectID, dashboardID string, p controlplane.Placement, positioned bool) (controlplane.Dashboard, string, error)
	UpdatePlacement(ctx context.Context, projectID, dashboardID string, p controlplane.Placement) (controlplane.Dashboard, error)
	DeletePlacement(ctx context.Context, projectID, dashboardID, placementID string) (controlplane.Dashboard, error)

	CreateWidget(ctx context.Context, projectID string, w controlplane.DashboardWidget) (controlplane.DashboardWidget, error)
	GetWidget(ctx context.Context, projectID, id string) (controlplane.DashboardWidget, error)
	ListWidgets(ctx context.Context, projectID string, offset, limit int) ([]controlplane.DashboardWidget, int, error)
	UpdateWidget(ctx context.Context, projectID, id string, u controlplane.DashboardWidgetUpdate) (controlplane.DashboardWidget, error)
	DeleteWidget(ctx context.Context, projectID, id string) error
}

// Dashboard is a dashboard as the API answers it.
type Dashboard struct {
	ID          string          `json:"id"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	UpdatedAt   httpx.Timestamp `json:"updatedAt"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Definition  Definition      `json:"definition"`
	Filters     json.RawMessage `json:"filters"`
}

// Definition is a dashboard's grid.
type Definition struct {
	Widgets []Placement `json:"widgets"`
}

// Placement is a tile as Langfuse's API writes it: its size is width and
// height (the store keeps Langfuse's column names, x_size and y_size).
type Placement struct {
	Type     string `json:"type"` // widget or preset
	ID       string `json:"id"`
	WidgetID string `json:"widgetId,omitempty"`
	PresetID string `json:"presetId,omitempty"`
	X        int    `json:"x"`
	Y        int    `json:"y"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

func toPlacement(p controlplane.Placement) Placement {
	return Placement{Type: p.Type, ID: p.ID, WidgetID: p.WidgetID, PresetID: p.PresetID, X: p.X, Y: p.Y, Width: p.XSize, Height: p.YSize}
}

func (p Placement) stored() controlplane.Placement {
	return controlplane.Placement{Type: p.Type, ID: p.ID, WidgetID: p.WidgetID, PresetID: p.PresetID, X: p.X, Y: p.Y, XSize: p.Width, YSize: p.Height}
}

// stored is the definition as the store keeps it; nil stays nil.
func (d *Definition) stored() *controlplane.DashboardDefinition {
	if d == nil {
		return nil
	}
	out := &controlplane.DashboardDefinition{Widgets: make([]controlplane.Placement, 0, len(d.Widgets))}
	for _, p := range d.Widgets {
		out.Widgets = append(out.Widgets, p.stored())
	}
	return out
}

// CreateDashboardRequest creates a dashboard.
type CreateDashboardRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Definition  *Definition     `json:"definition,omitempty"`
	Filters     json.RawMessage `json:"filters,omitempty"`
}

// UpdateDashboardRequest changes the fields it has.
type UpdateDashboardRequest struct {
	Name        *string         `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	Definition  *Definition     `json:"definition,omitempty"`
	Filters     json.RawMessage `json:"filters,omitempty"`
}

// PlacementRequest adds a placement; position and size are optional.
type PlacementRequest struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	WidgetID string `json:"widgetId,omitempty"`
	PresetID string `json:"presetId,omitempty"`
	PlacementUpdate
}

// PlacementUpdate moves or resizes a placement: the fields it has.
type PlacementUpdate struct {
	X      *int `json:"x,omitempty"`
	Y      *int `json:"y,omitempty"`
	Width  *int `json:"width,omitempty"`
	Height *int `json:"height,omitempty"`
}

// apply sets p's position and size from the fields u has.
func (u PlacementUpdate) apply(p *controlplane.Placement) {
	for _, f := range []struct {
		dst *int
		src *int
	}{{&p.X, u.X}, {&p.Y, u.Y}, {&p.XSize, u.Width}, {&p.YSize, u.Height}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

// Widget is a dashboard widget as the API answers it.
type Widget struct {
	ID          string          `json:"id"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	UpdatedAt   httpx.Timestamp `json:"updatedAt"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	View        string          `json:"view"`
	Dimensions  json.RawMessage `json:"dimensions"`
	Metrics     json.RawMessage `json:"metrics"`
	Filters     json.RawMessage `json:"filters"`
	ChartType   string          `json:"chartType"`
	ChartConfig json.RawMessage `json:"chartConfig"`
}

// WidgetRequest creates a widget, or (PATCH) changes the fields it has.
type WidgetRequest struct {
	Name        *string         `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	View        *string         `json:"view,omitempty"`
	Dimensions  []Dimension     `json:"dimensions,omitempty"`
	Metrics     []Metric        `json:"metrics,omitempty"`
	Filters     []Filter        `json:"filters,omitempty"`
	ChartType   *string         `json:"chartType,omitempty"`
	ChartConfig json.RawMessage `json:"chartConfig,omitempty"`
}

// Dimension groups a widget's query.
type Dimension struct {
	Field string `json:"field"`
}

// Metric is a measure with its aggregation.
type Metric struct {
	Measure string `json:"measure"`
	Agg     string `json:"agg"`
}

// Filter is one filter in Langfuse's filter-state shape.
type Filter struct {
	Column   string          `json:"column"`
	Operator string          `json:"operator"`
	Type     string          `json:"type"`
	Value    json.RawMessage `json:"value,omitempty"`
	Key      string          `json:"key,omitempty"`
}

// DeletionResponse confirms a deletion.
type DeletionResponse struct {
	Message string `json:"message"`
}

// What the API accepts, as in Langfuse's unstable API.
var (
	views        = controlplane.WidgetViews
	chartTypes   = controlplane.WidgetChartTypes
	aggregations = controlplane.WidgetAggregations
	filterTypes  = []string{"string", "number", "datetime", "boolean", "null", "stringOptions", "arrayOptions", "categoryOptions",
		"stringObject", "numberObject", "booleanObject"}
)

type handlers struct{ store Store }

// Routes returns the dashboard and widget routes (project keys).
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	const (
		key  = httpx.ProjectKey
		tag  = "Dashboards"
		base = "/api/public/unstable/dashboards"
		wb   = "/api/public/unstable/dashboard-widgets"
	)
	doc := func(id, summary string, body, response any) httpx.Doc {
		return httpx.Doc{OperationID: id, Tag: tag, Summary: summary, Body: body, Response: response}
	}
	return []httpx.Route{
		{Method: http.MethodGet, Path: base, Access: key, Handler: h.list,
			Doc: httpx.Doc{OperationID: "dashboards_list", Tag: tag, Summary: "The project's dashboards, most recently changed first.",
				Query: httpx.PageParams, Response: httpx.List[Dashboard]{}}},
		{Method: http.MethodPost, Path: base, Access: key, Handler: h.create,
			Doc: doc("dashboards_create", "Create a dashboard.", CreateDashboardRequest{}, Dashboard{})},
		{Method: http.MethodGet, Path: base + "/{dashboardId}", Access: key, Handler: h.get,
			Doc: doc("dashboards_get", "A dashboard with its grid.", nil, Dashboard{})},
		{Method: http.MethodPatch, Path: base + "/{dashboardId}", Access: key, Handler: h.update,
			Doc: doc("dashboards_update", "Change a dashboard's name, description, grid or filters.", UpdateDashboardRequest{}, Dashboard{})},
		{Method: http.MethodDelete, Path: base + "/{dashboardId}", Access: key, Handler: h.delete,
			Doc: doc("dashboards_delete", "Delete a dashboard (its widgets stay).", nil, DeletionResponse{})},
		{Method: http.MethodPost, Path: base + "/{dashboardId}/placements", Access: key, Handler: h.addPlacement,
			Doc: doc("dashboards_addPlacement", "Place a widget or a preset on the grid; without a position it goes below the rest, 6x6.",
				PlacementRequest{}, Placement{})},
		{Method: http.MethodPatch, Path: base + "/{dashboardId}/placements/{placementId}", Access: key, Handler: h.updatePlacement,
			Doc: doc("dashboards_updatePlacement", "Move or resize a placement.", PlacementUpdate{}, Placement{})},
		{Method: http.MethodDelete, Path: base + "/{dashboardId}/placements/{placementId}", Access: key, Handler: h.deletePlacement,
			Doc: doc("dashboards_deletePlacement", "Remove a placement from the grid.", nil, DeletionResponse{})},

		{Method: http.MethodGet, Path: wb, Access: key, Handler: h.listWidgets,
			Doc: httpx.Doc{OperationID: "dashboardWidgets_list", Tag: tag, Summary: "The project's widgets, most recently changed first.",
				Query: httpx.PageParams, Response: httpx.List[Widget]{}}},
		{Method: http.MethodPost, Path: wb, Access: key, Handler: h.createWidget,
			Doc: doc("dashboardWidgets_create", "Create a widget: a metrics query and a chart type.", WidgetRequest{}, Widget{})},
		{Method: http.MethodGet, Path: wb + "/{widgetId}", Access: key, Handler: h.getWidget,
			Doc: doc("dashboardWidgets_get", "A widget.", nil, Widget{})},
		{Method: http.MethodPatch, Path: wb + "/{widgetId}", Access: key, Handler: h.updateWidget,
			Doc: doc("dashboardWidgets_update", "Change a widget; a new chart type without a config resets the config.", WidgetRequest{}, Widget{})},
		{Method: http.MethodDelete, Path: wb + "/{widgetId}", Access: key, Handler: h.deleteWidget,
			Doc: doc("dashboardWidgets_delete", "Delete a widget no dashboard shows (409 otherwise).", nil, DeletionResponse{})},
	}
}

func toDashboard(d controlplane.Dashboard) Dashboard {
	def := Definition{Widgets: make([]Placement, 0, len(d.Definition.Widgets))}
	for _, p := range d.Definition.Widgets {
		def.Widgets = append(def.Widgets, toPlacement(p))
	}
	return Dashboard{ID: d.ID, CreatedAt: httpx.Timestamp(d.CreatedAt), UpdatedAt: httpx.Timestamp(d.UpdatedAt), Name: d.Name,
		Description: d.Description, Definition: def, Filters: d.Filters}
}

func toWidget(w controlplane.DashboardWidget) Widget {
	return Widget{ID: w.ID, CreatedAt: httpx.Timestamp(w.CreatedAt), UpdatedAt: httpx.Timestamp(w.UpdatedAt), Name: w.Name,
		Description: w.Description, View: w.View, Dimensions: w.Dimensions, Metrics: w.Metrics, Filters: w.Filters,
		ChartType: w.ChartType, ChartConfig: w.ChartConfig}
}

// storeError maps the store's refusals to answers.
func storeError(err error, what string) error {
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return httpx.NotFound("%s not found within authorized project", what)
	case errors.Is(err, controlplane.ErrConflict):
		return httpx.Conflict("%s", strings.TrimPrefix(err.Error(), controlplane.ErrConflict.Error()+": "))
	case errors.Is(err, controlplane.ErrInvalid):
		return httpx.BadRequest("%s", strings.TrimPrefix(err.Error(), controlplane.ErrInvalid.Error()+": "))
	}
	return err
}

func (h handlers) list(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListDashboards, toDashboard)
}

func (h handlers) create(r *http.Request) (any, error) {
	var req CreateDashboardRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	n := controlplane.NewDashboard{Name: req.Name, Description: req.Description, Filters: req.Filters}
	if def := req.Definition.stored(); def != nil {
		n.Definition = *def
	}
	d, err := h.store.CreateDashboard(r.Context(), httpx.ProjectID(r), n)
	if err != nil {
		return nil, storeError(err, "Dashboard")
	}
	return toDashboard(d), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	d, err := h.store.GetDashboard(r.Context(), httpx.ProjectID(r), r.PathValue("dashboardId"))
	if err != nil {
		return nil, storeError(err, "Dashboard")
	}
	return toDashboard(d), nil
}

func (h handlers) update(r *http.Request) (any, error) {
	var req UpdateDashboardRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	d, err := h.store.UpdateDashboard(r.Context(), httpx.ProjectID(r), r.PathValue("dashboardId"), controlplane.DashboardUpdate{
		Name: req.Name, Description: req.Description, Definition: req.Definition.stored(), Filters: req.Filters})
	if err != nil {
		return nil, storeError(err, "Dashboard")
	}
	return toDashboard(d), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	if err := h.store.DeleteDashboard(r.Context(), httpx.ProjectID(r), r.PathValue("dashboardId")); err != nil {
		return nil, storeError(err, "Dashboard")
	}
	return DeletionResponse{Message: "Dashboard successfully deleted"}, nil
}

func (h handlers) addPlacement(r *http.Request) (any, error) {
	var req PlacementRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	p := controlplane.Placement{Type: req.Type, ID: req.ID, WidgetID: req.WidgetID, PresetID: req.PresetID}
	req.apply(&p)
	d, id, err := h.store.AddPlacement(r.Context(), httpx.ProjectID(r), r.PathValue("dashboardId"), p, req.Y != nil)
	if err != nil {
		return nil, storeError(err, "Dashboard or widget")
	}
	return placementOf(d, id)
}

func (h handlers) updatePlacement(r *http.Request) (any, error) {
	var req PlacementUpdate
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	project, dashboardID, id := httpx.ProjectID(r), r.PathValue("dashboardId"), r.PathValue("placementId")
	d, err := h.store.GetDashboard(r.Context(), project, dashboardID)
	if err != nil {
		return nil, storeError(err, "Dashboard")
	}
	i := slices.IndexFunc(d.Definition.Widgets, func(p controlplane.Placement) bool { return p.ID == id })
	if i < 0 {
		return nil, httpx.NotFound("Placement %s not found on the dashboard", id)
	}
	p := d.Definition.Widgets[i]
	req.apply(&p)
	if d, err = h.store.UpdatePlacement(r.Context(), project, dashboardID, p); err != nil {
		return nil, storeError(err, "Dashboard or placement")
	}
	return placementOf(d, id)
}

// placementOf answers the placement id of d.
func placementOf(d controlplane.Dashboard, id string) (Placement, error) {
	for _, p := range d.Definition.Widgets {
		if p.ID == id {
			return toPlacement(p), nil
		}
	}
	return Placement{}, httpx.NotFound("Placement %s not found on the dashboard", id)
}

func (h handlers) deletePlacement(r *http.Request) (any, error) {
	if _, err := h.store.DeletePlacement(r.Context(), httpx.ProjectID(r), r.PathValue("dashboardId"), r.PathValue("placementId")); err != nil {
		return nil, storeError(err, "Dashboard or placement")
	}
	return DeletionResponse{Message: "Placement successfully deleted"}, nil
}

func (h handlers) listWidgets(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListWidgets, toWidget)
}

// checkWidget applies the unstable API's rules to the fields a request
// has: known views, chart types, aggregations and filter types, and a
// chartConfig.type that matches the chart type. The fields and measures
// themselves are the metrics engine's to check.
func checkWidget(req WidgetRequest, chartType string, create bool) (config json.RawMessage, err error) {
	if create {
		switch {
		case req.Name == nil || strings.TrimSpace(*req.Name) == "":
			return nil, httpx.BadRequest("Invalid request body: name is required")
		case req.View == nil:
			return nil, httpx.BadRequest("Invalid request body: view is required")
		case req.ChartType == nil:
			return nil, httpx.BadRequest("Invalid request body: chartType is required")
		case len(req.Metrics) == 0:
			return nil, httpx.BadRequest("Invalid request body: metrics needs at least one measure")
		}
	}
	if req.View != nil && !slices.Contains(views, *req.View) {
		return nil, httpx.BadRequest("Invalid view %q: expected one of %s (traces widgets cannot be created)", *req.View, strings.Join(views, ", "))
	}
	if !slices.Contains(chartTypes, chartType) {
		return nil, httpx.BadRequest("Invalid chartType %q: expected one of %s", chartType, strings.Join(chartTypes, ", "))
	}
	for i, d := range req.Dimensions {
		if strings.TrimSpace(d.Field) == "" {
			return nil, httpx.BadRequest("Invalid dimensions[%d]: field is required", i)
		}
	}
	for i, m := range req.Metrics {
		if strings.TrimSpace(m.Measure) == "" || !slices.Contains(aggregations, m.Agg) {
			return nil, httpx.BadRequest("Invalid metrics[%d]: a measure and an agg of %s are required", i, strings.Join(aggregations, ", "))
		}
	}
	for i, f := range req.Filters {
		if f.Column == "" || f.Operator == "" || !slices.Contains(filterTypes, f.Type) {
			return nil, httpx.BadRequest("Invalid filters[%d]: column, operator and a type of %s are required", i, strings.Join(filterTypes, ", "))
		}
	}
	if req.ChartConfig == nil {
		if req.ChartType == nil && !create {
			return nil, nil
		}
		return json.RawMessage(`{"type":"` + chartType + `"}`), nil
	}
	var cfg map[string]any
	if json.Unmarshal(req.ChartConfig, &cfg) != nil || cfg == nil {
		return nil, httpx.BadRequest("Invalid chartConfig: expected an object")
	}
	if t, ok := cfg["type"]; ok && t != chartType {
		return nil, httpx.BadRequest("Invalid chartConfig.type %v: it must match chartType %s", t, chartType)
	}
	cfg["type"] = chartType
	out, _ := json.Marshal(cfg)
	return out, nil
}

func marshal[T any](v []T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

func (h handlers) createWidget(r *http.Request) (any, error) {
	var req WidgetRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	chartType := ""
	if req.ChartType != nil {
		chartType = *req.ChartType
	}
	config, err := checkWidget(req, chartType, true)
	if err != nil {
		return nil, err
	}
	w := controlplane.DashboardWidget{Name: *req.Name, View: *req.View, ChartType: chartType, ChartConfig: config,
		Dimensions: marshal(req.Dimensions), Metrics: marshal(req.Metrics), Filters: marshal(req.Filters)}
	if req.Description != nil {
		w.Description = *req.Description
	}
	created, err := h.store.CreateWidget(r.Context(), httpx.ProjectID(r), w)
	if err != nil {
		return nil, storeError(err, "Widget")
	}
	return toWidget(created), nil
}

func (h handlers) getWidget(r *http.Request) (any, error) {
	w, err := h.store.GetWidget(r.Context(), httpx.ProjectID(r), r.PathValue("widgetId"))
	if err != nil {
		return nil, storeError(err, "Widget")
	}
	return toWidget(w), nil
}

func (h handlers) updateWidget(r *http.Request) (any, error) {
	var req WidgetRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Name == nil && req.Description == nil && req.View == nil && req.Dimensions == nil &&
		req.Metrics == nil && req.Filters == nil && req.ChartType == nil && req.ChartConfig == nil {
		return nil, httpx.BadRequest("Invalid request body: give at least one field to change")
	}
	ctx, project, id := r.Context(), httpx.ProjectID(r), r.PathValue("widgetId")
	cur, err := h.store.GetWidget(ctx, project, id)
	if err != nil {
		return nil, storeError(err, "Widget")
	}
	chartType := cur.ChartType
	if req.ChartType != nil {
		chartType = *req.ChartType
	}
	config, err := checkWidget(req, chartType, false)
	if err != nil {
		return nil, err
	}
	w, err := h.store.UpdateWidget(ctx, project, id, controlplane.DashboardWidgetUpdate{Name: req.Name, Description: req.Description,
		View: req.View, ChartType: req.ChartType, Dimensions: marshal(req.Dimensions), Metrics: marshal(req.Metrics),
		Filters: marshal(req.Filters), ChartConfig: config})
	if err != nil {
		return nil, storeError(err, "Widget")
	}
	return toWidget(w), nil
}

func (h handlers) deleteWidget(r *http.Request) (any, error) {
	if err := h.store.DeleteWidget(r.Context(), httpx.ProjectID(r), r.PathValue("widgetId")); err != nil {
		return nil, storeError(err, "Widget")
	}
	return DeletionResponse{Message: "Widget successfully deleted"}, nil
}
