package apiserver

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// dashboardSeed holds tenant b's dashboard and widget of the latest newServer.
var dashboardSeed struct{ dashboard, widget string }

func seedDashboards(t *testing.T, cp *controlplane.Store, project string) {
	t.Helper()
	ctx := context.Background()
	w, err := cp.CreateWidget(ctx, project, controlplane.DashboardWidget{Name: "widget-of-b", View: "observations",
		Metrics: json.RawMessage(`[{"measure":"count","agg":"count"}]`), ChartType: "NUMBER"})
	require.NoError(t, err)
	d, err := cp.CreateDashboard(ctx, project, controlplane.NewDashboard{Name: "dashboard-of-b",
		Definition: controlplane.DashboardDefinition{Widgets: []controlplane.Placement{{Type: "widget", ID: "tile-of-b", WidgetID: w.ID, XSize: 6, YSize: 6}}}})
	require.NoError(t, err)
	dashboardSeed.dashboard, dashboardSeed.widget = d.ID, w.ID
}

func noDashboardOfB(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
	require.Less(t, rec.Code, 300, rec.Body.String())
	for _, v := range []string{dashboardSeed.dashboard, dashboardSeed.widget, "dashboard-of-b", "widget-of-b", "tile-of-b"} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

func dashOfB(suffix string) func(server) string {
	return func(server) string { return "/api/public/unstable/dashboards/" + dashboardSeed.dashboard + suffix }
}

func widgetOfB(server) string {
	return "/api/public/unstable/dashboard-widgets/" + dashboardSeed.widget
}

var dashboardAttacks = map[string]attack{
	"GET /api/public/unstable/dashboards": {auth: projectKey, target: fixed("/api/public/unstable/dashboards"), check: noDashboardOfB},
	"POST /api/public/unstable/dashboards": {auth: projectKey, target: fixed("/api/public/unstable/dashboards"),
		body: func(server) any {
			return map[string]any{"name": "mine", "definition": map[string]any{"widgets": []any{
				map[string]any{"type": "widget", "id": "x", "widgetId": dashboardSeed.widget, "x": 0, "y": 0, "width": 6, "height": 6}}}}
		}, check: notFound},
	"GET /api/public/unstable/dashboards/{dashboardId}":    {auth: projectKey, target: dashOfB(""), check: notFound},
	"PATCH /api/public/unstable/dashboards/{dashboardId}":  {auth: projectKey, target: dashOfB(""), body: func(server) any { return map[string]any{"name": "hijacked"} }, check: notFound},
	"DELETE /api/public/unstable/dashboards/{dashboardId}": {auth: projectKey, target: dashOfB(""), check: notFound},
	"POST /api/public/unstable/dashboards/{dashboardId}/placements": {auth: projectKey, target: dashOfB("/placements"),
		body: func(server) any { return map[string]any{"type": "preset", "presetId": "p"} }, check: notFound},
	"PATCH /api/public/unstable/dashboards/{dashboardId}/placements/{placementId}": {auth: projectKey, target: dashOfB("/placements/tile-of-b"),
		body: func(server) any { return map[string]any{"x": 0, "y": 0, "width": 1, "height": 1} }, check: notFound},
	"DELETE /api/public/unstable/dashboards/{dashboardId}/placements/{placementId}": {auth: projectKey, target: dashOfB("/placements/tile-of-b"), check: notFound},
	"GET /api/public/unstable/dashboard-widgets":                                    {auth: projectKey, target: fixed("/api/public/unstable/dashboard-widgets"), check: noDashboardOfB},
	"POST /api/public/unstable/dashboard-widgets": {auth: projectKey, target: fixed("/api/public/unstable/dashboard-widgets"),
		body: func(server) any {
			return map[string]any{"name": "mine", "view": "observations", "metrics": []any{map[string]any{"measure": "count", "agg": "count"}},
				"chartType": "NUMBER"}
		}, check: noDashboardOfB},
	"GET /api/public/unstable/dashboard-widgets/{widgetId}":    {auth: projectKey, target: widgetOfB, check: notFound},
	"PATCH /api/public/unstable/dashboard-widgets/{widgetId}":  {auth: projectKey, target: widgetOfB, body: func(server) any { return map[string]any{"name": "hijacked"} }, check: notFound},
	"DELETE /api/public/unstable/dashboard-widgets/{widgetId}": {auth: projectKey, target: widgetOfB, check: notFound},
}

func init() {
	maps.Copy(attacks, dashboardAttacks)
}

func TestDashboardAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, dashboardAttacks)
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/unstable/dashboards/"+dashboardSeed.dashboard, s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "dashboard-of-b")
	assert.Contains(t, rec.Body.String(), "tile-of-b")
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/unstable/dashboard-widgets/"+dashboardSeed.widget, s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "widget-of-b")
}
