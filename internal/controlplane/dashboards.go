package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Dashboard is a project's grid of widget placements, with filters that
// apply to every widget on it.
type Dashboard struct {
	ID          string
	ProjectID   string
	Name        string
	Description string
	Definition  DashboardDefinition
	// Filters is a JSON array of filters in Langfuse's filter-state shape.
	Filters   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DashboardDefinition is the grid of a dashboard.
type DashboardDefinition struct {
	Widgets []Placement `json:"widgets"`
}

// Placement is a tile on a dashboard's 12-column grid: a widget of the
// project, or a built-in preset.
type Placement struct {
	Type     string `json:"type"` // PlacementWidget or PlacementPreset
	ID       string `json:"id"`
	WidgetID string `json:"widgetId,omitempty"`
	PresetID string `json:"presetId,omitempty"`
	X        int    `json:"x"`
	Y        int    `json:"y"`
	XSize    int    `json:"x_size"`
	YSize    int    `json:"y_size"`
}

// The widget vocabulary of Langfuse's unstable dashboards API, which the API
// and the UI both offer: the views a new widget may query (traces widgets
// exist only from before), how it may be drawn and how it aggregates.
var (
	WidgetViews      = []string{"observations", "scores-numeric", "scores-categorical"}
	WidgetChartTypes = []string{"LINE_TIME_SERIES", "AREA_TIME_SERIES", "BAR_TIME_SERIES", "HORIZONTAL_BAR", "VERTICAL_BAR", "PIE",
		"NUMBER", "HISTOGRAM", "PIVOT_TABLE"}
	WidgetAggregations = []string{"count", "sum", "avg", "min", "max", "p50", "p75", "p90", "p95", "p99", "uniq", "histogram"}
)

// Placement types.
const (
	PlacementWidget = "widget"
	PlacementPreset = "preset"
)

// Grid defaults: a new tile is half the width and appended below the rest.
const (
	gridColumns     = 12
	defaultTileSize = 6
)

// NewDashboard is the input of CreateDashboard.
type NewDashboard struct {
	Name, Description string
	Definition        DashboardDefinition
	Filters           json.RawMessage
}

// DashboardUpdate changes the fields that are set.
type DashboardUpdate struct {
	Name, Description *string
	Definition        *DashboardDefinition
	Filters           json.RawMessage
}

// DashboardWidget is a saved chart: a metrics query (view, dimensions,
// metrics with aggregations, filters) and how to draw it. The query parts
// are kept as the JSON clients sent; the metrics engine checks their fields
// when it runs them.
type DashboardWidget struct {
	ID          string
	ProjectID   string
	Name        string
	Description string
	View        string
	Dimensions  json.RawMessage // [{"field": ...}]
	Metrics     json.RawMessage // [{"measure": ..., "agg": ...}]
	Filters     json.RawMessage // filter-state array
	ChartType   string
	ChartConfig json.RawMessage // an object whose "type" is ChartType
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DashboardWidgetUpdate changes the fields that are set (non-nil).
type DashboardWidgetUpdate struct {
	Name, Description, View, ChartType *string
	Dimensions, Metrics, Filters       json.RawMessage
	ChartConfig                        json.RawMessage
}

const dashboardColumns = `id, project_id, name, description, definition, filters, created_at, updated_at`

func scanDashboard(row interface{ Scan(...any) error }) (Dashboard, error) {
	var (
		d                    Dashboard
		def, filters         string
		createdAt, updatedAt int64
	)
	if err := row.Scan(&d.ID, &d.ProjectID, &d.Name, &d.Description, &def, &filters, &createdAt, &updatedAt); err != nil {
		return Dashboard{}, err
	}
	if err := json.Unmarshal([]byte(def), &d.Definition); err != nil {
		return Dashboard{}, fmt.Errorf("dashboard %q: stored definition: %w", d.ID, err)
	}
	if d.Definition.Widgets == nil {
		d.Definition.Widgets = []Placement{}
	}
	d.Filters = json.RawMessage(filters)
	d.CreatedAt, d.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return d, nil
}

// jsonArray checks that raw is a JSON array (empty means []) and returns it.
func jsonArray(what string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "[]", nil
	}
	var v []json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("%w: %s must be a JSON array", ErrInvalid, what)
	}
	return string(raw), nil
}

// checkPlacements validates the grid: known types, unique ids, sane
// positions, and widgets of this project.
func (s *Store) checkPlacements(ctx context.Context, c conn, projectID string, ps []Placement) error {
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		if p.ID == "" {
			p.ID = uuid.NewString()
		}
		if seen[p.ID] {
			return fmt.Errorf("%w: placement id %q is used twice", ErrConflict, p.ID)
		}
		seen[p.ID] = true
		switch {
		case p.X < 0 || p.Y < 0 || p.XSize < 1 || p.YSize < 1 || p.X+p.XSize > gridColumns:
			return fmt.Errorf("%w: placement %q must lie on the %d-column grid with a positive size", ErrInvalid, p.ID, gridColumns)
		case p.Type == PlacementWidget && p.WidgetID != "" && p.PresetID == "":
			if _, err := getWidget(ctx, c, projectID, p.WidgetID); err != nil {
				return err
			}
		case p.Type == PlacementPreset && p.PresetID != "" && p.WidgetID == "":
		default:
			return fmt.Errorf("%w: placement %q must be of type widget (with widgetId) or preset (with presetId)", ErrInvalid, p.ID)
		}
	}
	return nil
}

// CreateDashboard adds a dashboard to a project.
func (s *Store) CreateDashboard(ctx context.Context, projectID string, n NewDashboard) (Dashboard, error) {
	name, err := checkName("dashboard", n.Name)
	if err != nil {
		return Dashboard{}, err
	}
	filters, err := jsonArray("filters", n.Filters)
	if err != nil {
		return Dashboard{}, err
	}
	d := Dashboard{ID: uuid.NewString(), ProjectID: projectID, Name: name, Description: strings.TrimSpace(n.Description),
		Definition: n.Definition, Filters: json.RawMessage(filters)}
	if d.Definition.Widgets == nil {
		d.Definition.Widgets = []Placement{}
	}
	err = s.inTx(ctx, func(c conn) error {
		if err := s.checkPlacements(ctx, c, projectID, d.Definition.Widgets); err != nil {
			return err
		}
		def, _ := json.Marshal(d.Definition)
		now := s.micros()
		d.CreatedAt, d.UpdatedAt = fromMicros(now), fromMicros(now)
		if _, err := c.exec(ctx, `INSERT INTO dashboards (`+dashboardColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, projectID, d.Name, d.Description, string(def), filters, now, now); err != nil {
			return fmt.Errorf("create dashboard: %w", classify(err))
		}
		return nil
	})
	if err != nil {
		return Dashboard{}, err
	}
	return d, nil
}

// GetDashboard returns one dashboard of the project.
func (s *Store) GetDashboard(ctx context.Context, projectID, id string) (Dashboard, error) {
	return getDashboard(ctx, s.conn(), projectID, id)
}

func getDashboard(ctx context.Context, c conn, projectID, id string) (Dashboard, error) {
	d, err := scanDashboard(c.queryRow(ctx, `SELECT `+dashboardColumns+` FROM dashboards WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Dashboard{}, fmt.Errorf("dashboard %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Dashboard{}, fmt.Errorf("get dashboard %q: %w", id, err)
	}
	return d, nil
}

// ListDashboards returns one page of the project's dashboards, the most
// recently changed first, and their number.
func (s *Store) ListDashboards(ctx context.Context, projectID string, offset, limit int) ([]Dashboard, int, error) {
	return projectPage(ctx, s.conn(), "dashboards", "dashboards", dashboardColumns, "updated_at DESC, id", projectID, offset, limit,
		func(sc scanner) (Dashboard, error) { return scanDashboard(sc) })
}

// UpdateDashboard changes a dashboard.
func (s *Store) UpdateDashboard(ctx context.Context, projectID, id string, u DashboardUpdate) (Dashboard, error) {
	var out Dashboard
	err := s.inTx(ctx, func(c conn) error {
		d, err := getDashboard(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		if u.Name != nil {
			if d.Name, err = checkName("dashboard", *u.Name); err != nil {
				return err
			}
		}
		if u.Description != nil {
			d.Description = strings.TrimSpace(*u.Description)
		}
		if u.Definition != nil {
			d.Definition = *u.Definition
			if d.Definition.Widgets == nil {
				d.Definition.Widgets = []Placement{}
			}
			if err := s.checkPlacements(ctx, c, projectID, d.Definition.Widgets); err != nil {
				return err
			}
		}
		if u.Filters != nil {
			f, err := jsonArray("filters", u.Filters)
			if err != nil {
				return err
			}
			d.Filters = json.RawMessage(f)
		}
		out, err = s.saveDashboard(ctx, c, d)
		return err
	})
	return out, err
}

func (s *Store) saveDashboard(ctx context.Context, c conn, d Dashboard) (Dashboard, error) {
	def, err := json.Marshal(d.Definition)
	if err != nil {
		return Dashboard{}, err
	}
	now := s.micros()
	if _, err := c.exec(ctx, `UPDATE dashboards SET name = ?, description = ?, definition = ?, filters = ?, updated_at = ?
		WHERE project_id = ? AND id = ?`, d.Name, d.Description, string(def), string(d.Filters), now, d.ProjectID, d.ID); err != nil {
		return Dashboard{}, fmt.Errorf("update dashboard %q: %w", d.ID, classify(err))
	}
	d.UpdatedAt = fromMicros(now)
	return d, nil
}

// DeleteDashboard removes a dashboard; its widgets stay.
func (s *Store) DeleteDashboard(ctx context.Context, projectID, id string) error {
	res, err := s.conn().exec(ctx, `DELETE FROM dashboards WHERE project_id = ? AND id = ?`, projectID, id)
	if err != nil {
		return fmt.Errorf("delete dashboard %q: %w", id, err)
	}
	return requireOne(res, "dashboard "+id)
}

// AddPlacement puts a tile on a dashboard. Without a position it is
// appended below every tile, 6x6. An id used on the dashboard already is a
// conflict.
func (s *Store) AddPlacement(ctx context.Context, projectID, dashboardID string, p Placement, positioned bool) (Dashboard, string, error) {
	var out Dashboard
	err := s.inTx(ctx, func(c conn) error {
		d, err := getDashboard(ctx, c, projectID, dashboardID)
		if err != nil {
			return err
		}
		if p.ID == "" {
			p.ID = uuid.NewString()
		}
		if slices.ContainsFunc(d.Definition.Widgets, func(x Placement) bool { return x.ID == p.ID }) {
			return fmt.Errorf("%w: placement %q exists on the dashboard", ErrConflict, p.ID)
		}
		if !positioned {
			bottom := 0
			for _, x := range d.Definition.Widgets {
				bottom = max(bottom, x.Y+x.YSize)
			}
			p.Y = bottom
		}
		if p.XSize == 0 {
			p.XSize = defaultTileSize
		}
		if p.YSize == 0 {
			p.YSize = defaultTileSize
		}
		d.Definition.Widgets = append(d.Definition.Widgets, p)
		if err := s.checkPlacements(ctx, c, projectID, d.Definition.Widgets); err != nil {
			return err
		}
		out, err = s.saveDashboard(ctx, c, d)
		return err
	})
	return out, p.ID, err
}

// UpdatePlacement replaces one tile of a dashboard.
func (s *Store) UpdatePlacement(ctx context.Context, projectID, dashboardID string, p Placement) (Dashboard, error) {
	return s.editPlacements(ctx, projectID, dashboardID, p.ID, func(ps []Placement, i int) []Placement {
		ps[i] = p
		return ps
	})
}

// DeletePlacement removes one tile of a dashboard.
func (s *Store) DeletePlacement(ctx context.Context, projectID, dashboardID, placementID string) (Dashboard, error) {
	return s.editPlacements(ctx, projectID, dashboardID, placementID, func(ps []Placement, i int) []Placement {
		return slices.Delete(ps, i, i+1)
	})
}

func (s *Store) editPlacements(ctx context.Context, projectID, dashboardID, placementID string, edit func([]Placement, int) []Placement) (Dashboard, error) {
	var out Dashboard
	err := s.inTx(ctx, func(c conn) error {
		d, err := getDashboard(ctx, c, projectID, dashboardID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(d.Definition.Widgets, func(x Placement) bool { return x.ID == placementID })
		if i < 0 {
			return fmt.Errorf("placement %q: %w", placementID, ErrNotFound)
		}
		d.Definition.Widgets = edit(d.Definition.Widgets, i)
		if err := s.checkPlacements(ctx, c, projectID, d.Definition.Widgets); err != nil {
			return err
		}
		out, err = s.saveDashboard(ctx, c, d)
		return err
	})
	return out, err
}

const widgetColumns = `id, project_id, name, description, view, dimensions, metrics, filters, chart_type, chart_config, created_at, updated_at`

func scanWidget(row interface{ Scan(...any) error }) (DashboardWidget, error) {
	var (
		w                              DashboardWidget
		dims, metrics, filters, config string
		createdAt, updatedAt           int64
	)
	if err := row.Scan(&w.ID, &w.ProjectID, &w.Name, &w.Description, &w.View, &dims, &metrics, &filters, &w.ChartType, &config,
		&createdAt, &updatedAt); err != nil {
		return DashboardWidget{}, err
	}
	w.Dimensions, w.Metrics, w.Filters, w.ChartConfig = json.RawMessage(dims), json.RawMessage(metrics), json.RawMessage(filters), json.RawMessage(config)
	w.CreatedAt, w.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return w, nil
}

// CreateWidget saves a widget. Callers check the query against the
// metrics engine and the chart type's rules first.
func (s *Store) CreateWidget(ctx context.Context, projectID string, w DashboardWidget) (DashboardWidget, error) {
	name, err := checkName("widget", w.Name)
	if err != nil {
		return DashboardWidget{}, err
	}
	w.ID, w.ProjectID, w.Name, w.Description = uuid.NewString(), projectID, name, strings.TrimSpace(w.Description)
	if err := normalizeWidget(&w); err != nil {
		return DashboardWidget{}, err
	}
	now := s.micros()
	w.CreatedAt, w.UpdatedAt = fromMicros(now), fromMicros(now)
	if _, err := s.conn().exec(ctx, `INSERT INTO dashboard_widgets (`+widgetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, projectID, w.Name, w.Description, w.View, string(w.Dimensions), string(w.Metrics), string(w.Filters), w.ChartType,
		string(w.ChartConfig), now, now); err != nil {
		return DashboardWidget{}, fmt.Errorf("create widget: %w", classify(err))
	}
	return w, nil
}

func normalizeWidget(w *DashboardWidget) error {
	var err error
	var dims, metrics, filters string
	if dims, err = jsonArray("dimensions", w.Dimensions); err != nil {
		return err
	}
	if metrics, err = jsonArray("metrics", w.Metrics); err != nil {
		return err
	}
	if filters, err = jsonArray("filters", w.Filters); err != nil {
		return err
	}
	w.Dimensions, w.Metrics, w.Filters = json.RawMessage(dims), json.RawMessage(metrics), json.RawMessage(filters)
	if len(w.ChartConfig) == 0 {
		w.ChartConfig = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(w.ChartConfig, &obj) != nil || obj == nil {
		return fmt.Errorf("%w: chartConfig must be a JSON object", ErrInvalid)
	}
	if w.View == "" || w.ChartType == "" {
		return fmt.Errorf("%w: a widget needs a view and a chart type", ErrInvalid)
	}
	return nil
}

// GetWidget returns one widget of the project.
func (s *Store) GetWidget(ctx context.Context, projectID, id string) (DashboardWidget, error) {
	return getWidget(ctx, s.conn(), projectID, id)
}

func getWidget(ctx context.Context, c conn, projectID, id string) (DashboardWidget, error) {
	w, err := scanWidget(c.queryRow(ctx, `SELECT `+widgetColumns+` FROM dashboard_widgets WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return DashboardWidget{}, fmt.Errorf("widget %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return DashboardWidget{}, fmt.Errorf("get widget %q: %w", id, err)
	}
	return w, nil
}

// ListWidgets returns one page of the project's widgets, the most recently
// changed first, and their number.
func (s *Store) ListWidgets(ctx context.Context, projectID string, offset, limit int) ([]DashboardWidget, int, error) {
	return projectPage(ctx, s.conn(), "widgets", "dashboard_widgets", widgetColumns, "updated_at DESC, id", projectID, offset, limit,
		func(sc scanner) (DashboardWidget, error) { return scanWidget(sc) })
}

// UpdateWidget changes a widget.
func (s *Store) UpdateWidget(ctx context.Context, projectID, id string, u DashboardWidgetUpdate) (DashboardWidget, error) {
	var out DashboardWidget
	err := s.inTx(ctx, func(c conn) error {
		w, err := getWidget(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		if u.Name != nil {
			if w.Name, err = checkName("widget", *u.Name); err != nil {
				return err
			}
		}
		set := func(dst *string, src *string) {
			if src != nil {
				*dst = *src
			}
		}
		set(&w.Description, u.Description)
		set(&w.View, u.View)
		set(&w.ChartType, u.ChartType)
		for _, f := range []struct {
			dst *json.RawMessage
			src json.RawMessage
		}{{&w.Dimensions, u.Dimensions}, {&w.Metrics, u.Metrics}, {&w.Filters, u.Filters}, {&w.ChartConfig, u.ChartConfig}} {
			if f.src != nil {
				*f.dst = f.src
			}
		}
		if err := normalizeWidget(&w); err != nil {
			return err
		}
		now := s.micros()
		if _, err := c.exec(ctx, `UPDATE dashboard_widgets SET name = ?, description = ?, view = ?, dimensions = ?, metrics = ?, filters = ?,
			chart_type = ?, chart_config = ?, updated_at = ? WHERE project_id = ? AND id = ?`,
			w.Name, w.Description, w.View, string(w.Dimensions), string(w.Metrics), string(w.Filters), w.ChartType, string(w.ChartConfig),
			now, projectID, id); err != nil {
			return fmt.Errorf("update widget %q: %w", id, classify(err))
		}
		w.UpdatedAt = fromMicros(now)
		out = w
		return nil
	})
	return out, err
}

// ErrWidgetPlaced refuses to delete a widget that a dashboard shows.
var ErrWidgetPlaced = fmt.Errorf("%w: the widget is placed on a dashboard; remove the placement first", ErrConflict)

// DeleteWidget removes a widget no dashboard shows.
func (s *Store) DeleteWidget(ctx context.Context, projectID, id string) error {
	return s.inTx(ctx, func(c conn) error {
		defs, err := dashboardDefinitions(ctx, c, projectID)
		if err != nil {
			return err
		}
		for _, def := range defs {
			if slices.ContainsFunc(def.Widgets, func(p Placement) bool { return p.Type == PlacementWidget && p.WidgetID == id }) {
				return ErrWidgetPlaced
			}
		}
		res, err := c.exec(ctx, `DELETE FROM dashboard_widgets WHERE project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return fmt.Errorf("delete widget %q: %w", id, err)
		}
		return requireOne(res, "widget "+id)
	})
}

// dashboardDefinitions reads the grids of the project's dashboards; the
// rows are closed before the caller runs its next statement.
func dashboardDefinitions(ctx context.Context, c conn, projectID string) ([]DashboardDefinition, error) {
	rows, err := c.query(ctx, `SELECT definition FROM dashboards WHERE project_id = ?`, projectID)
	if err != nil {
		return nil, fmt.Errorf("read dashboards: %w", err)
	}
	defer rows.Close()
	var out []DashboardDefinition
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		var def DashboardDefinition
		if err := json.Unmarshal([]byte(raw), &def); err != nil {
			return nil, fmt.Errorf("stored dashboard definition: %w", err)
		}
		out = append(out, def)
	}
	return out, rows.Err()
}
