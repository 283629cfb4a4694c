package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDashboardsAndWidgets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		for _, p := range []string{"p1", "p2"} {
			_, err = s.CreateProject(ctx, "org", NewProject{ID: p, Name: p})
			require.NoError(t, err)
		}
		w, err := s.CreateWidget(ctx, "p1", DashboardWidget{Name: " Cost by model ", View: "observations",
			Dimensions: json.RawMessage(`[{"field":"providedModelName"}]`), Metrics: json.RawMessage(`[{"measure":"totalCost","agg":"sum"}]`),
			ChartType: "HORIZONTAL_BAR", ChartConfig: json.RawMessage(`{"type":"HORIZONTAL_BAR","row_limit":10}`)})
		require.NoError(t, err)
		assert.Equal(t, "Cost by model", w.Name)
		assert.JSONEq(t, `[]`, string(w.Filters))
		_, err = s.CreateWidget(ctx, "p1", DashboardWidget{Name: "x", View: "observations", ChartType: "PIE", Metrics: json.RawMessage(`{}`)})
		assert.ErrorIs(t, err, ErrInvalid, "metrics must be an array")

		d, err := s.CreateDashboard(ctx, "p1", NewDashboard{Name: "Costs", Filters: json.RawMessage(`[{"column":"environment","type":"stringOptions","operator":"any of","value":["prod"]}]`)})
		require.NoError(t, err)
		assert.Empty(t, d.Definition.Widgets)

		d, first, err := s.AddPlacement(ctx, "p1", d.ID, Placement{Type: PlacementWidget, WidgetID: w.ID}, false)
		require.NoError(t, err)
		assert.Equal(t, Placement{Type: PlacementWidget, ID: first, WidgetID: w.ID, X: 0, Y: 0, XSize: 6, YSize: 6}, d.Definition.Widgets[0])
		d, second, err := s.AddPlacement(ctx, "p1", d.ID, Placement{Type: PlacementPreset, ID: "tile-2", PresetID: "traces-over-time"}, false)
		require.NoError(t, err)
		assert.Equal(t, "tile-2", second)
		assert.Equal(t, 6, d.Definition.Widgets[1].Y, "appended below")
		_, _, err = s.AddPlacement(ctx, "p1", d.ID, Placement{Type: PlacementPreset, ID: "tile-2", PresetID: "x"}, false)
		assert.ErrorIs(t, err, ErrConflict)
		_, _, err = s.AddPlacement(ctx, "p2", d.ID, Placement{Type: PlacementWidget, WidgetID: w.ID}, false)
		assert.ErrorIs(t, err, ErrNotFound, "another project's dashboard")
		other, err := s.CreateDashboard(ctx, "p2", NewDashboard{Name: "p2"})
		require.NoError(t, err)
		_, _, err = s.AddPlacement(ctx, "p2", other.ID, Placement{Type: PlacementWidget, WidgetID: w.ID}, false)
		assert.ErrorIs(t, err, ErrNotFound, "another project's widget")
		_, _, err = s.AddPlacement(ctx, "p1", d.ID, Placement{Type: PlacementWidget, WidgetID: w.ID, X: 8, XSize: 6}, true)
		assert.ErrorIs(t, err, ErrInvalid, "off the grid")

		d, err = s.UpdatePlacement(ctx, "p1", d.ID, Placement{Type: PlacementWidget, ID: first, WidgetID: w.ID, X: 6, Y: 0, XSize: 6, YSize: 4})
		require.NoError(t, err)
		assert.Equal(t, 4, d.Definition.Widgets[0].YSize)

		assert.ErrorIs(t, s.DeleteWidget(ctx, "p1", w.ID), ErrWidgetPlaced)
		d, err = s.DeletePlacement(ctx, "p1", d.ID, first)
		require.NoError(t, err)
		assert.Len(t, d.Definition.Widgets, 1)
		require.NoError(t, s.DeleteWidget(ctx, "p1", w.ID))

		name := "Renamed"
		d, err = s.UpdateDashboard(ctx, "p1", d.ID, DashboardUpdate{Name: &name})
		require.NoError(t, err)
		got, err := s.GetDashboard(ctx, "p1", d.ID)
		require.NoError(t, err)
		assert.Equal(t, "Renamed", got.Name)
		assert.Len(t, got.Definition.Widgets, 1)
		list, total, err := s.ListDashboards(ctx, "p1", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, d.ID, list[0].ID)
		require.NoError(t, s.DeleteDashboard(ctx, "p1", d.ID))
		assert.ErrorIs(t, s.DeleteDashboard(ctx, "p1", d.ID), ErrNotFound)
	})
}
