package dashboards_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

type client struct {
	t   *testing.T
	env *uitest.Env
}

func (c client) call(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.env.URL+"/api/public/unstable"+path, strings.NewReader(body))
	require.NoError(c.t, err)
	req.SetBasicAuth(c.env.PublicKey, c.env.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out
}

func TestWidgetsAndDashboards(t *testing.T) {
	c := client{t: t, env: uitest.Start(t, uitest.Options{})}

	status, w := c.call(http.MethodPost, "/dashboard-widgets", `{"name":"Total cost by model","view":"observations",
		"dimensions":[{"field":"providedModelName"}],"metrics":[{"measure":"totalCost","agg":"sum"}],"filters":[],
		"chartType":"HORIZONTAL_BAR","chartConfig":{"row_limit":10}}`)
	require.Equal(t, http.StatusOK, status, w)
	assert.Equal(t, map[string]any{"type": "HORIZONTAL_BAR", "row_limit": float64(10)}, w["chartConfig"])
	assert.Equal(t, "", w["description"])
	widget := w["id"].(string)

	for body, want := range map[string]string{
		`{"name":"x","view":"traces","metrics":[{"measure":"count","agg":"count"}],"chartType":"NUMBER"}`:                                    "Invalid view",
		`{"name":"x","view":"observations","metrics":[{"measure":"count","agg":"median"}],"chartType":"NUMBER"}`:                             "Invalid metrics[0]",
		`{"name":"x","view":"observations","metrics":[{"measure":"count","agg":"count"}],"chartType":"DONUT"}`:                               "Invalid chartType",
		`{"name":"x","view":"observations","metrics":[{"measure":"count","agg":"count"}],"chartType":"PIE","chartConfig":{"type":"NUMBER"}}`: "must match chartType",
		`{"name":"x","view":"observations","metrics":[],"chartType":"PIE"}`:                                                                  "at least one measure",
		`{"name":"x","view":"observations","metrics":[{"measure":"count","agg":"count"}],"filters":[{"column":"name"}],"chartType":"PIE"}`:   "Invalid filters[0]",
	} {
		status, out := c.call(http.MethodPost, "/dashboard-widgets", body)
		assert.Equal(t, http.StatusBadRequest, status, body)
		assert.Contains(t, out["message"], want, body)
	}

	status, w = c.call(http.MethodPatch, "/dashboard-widgets/"+widget, `{"chartType":"PIE"}`)
	require.Equal(t, http.StatusOK, status, w)
	assert.Equal(t, map[string]any{"type": "PIE"}, w["chartConfig"], "a new chart type resets the config")
	status, _ = c.call(http.MethodPatch, "/dashboard-widgets/"+widget, `{}`)
	assert.Equal(t, http.StatusBadRequest, status)

	status, d := c.call(http.MethodPost, "/dashboards", `{"name":"Costs","description":"What we spend"}`)
	require.Equal(t, http.StatusOK, status, d)
	dash := d["id"].(string)
	assert.Equal(t, map[string]any{"widgets": []any{}}, d["definition"])
	assert.Equal(t, []any{}, d["filters"])

	status, p := c.call(http.MethodPost, "/dashboards/"+dash+"/placements", `{"type":"widget","widgetId":"`+widget+`"}`)
	require.Equal(t, http.StatusOK, status, p)
	tile := p["id"].(string)
	assert.Equal(t, map[string]any{"type": "widget", "id": tile, "widgetId": widget, "x": 0.0, "y": 0.0, "width": 6.0, "height": 6.0}, p,
		"the placement in Langfuse's shape")
	status, p = c.call(http.MethodPost, "/dashboards/"+dash+"/placements", `{"type":"widget","widgetId":"`+widget+`","id":"second","width":4}`)
	require.Equal(t, http.StatusOK, status, p)
	assert.Equal(t, float64(6), p["y"], "appended below the first tile")
	assert.Equal(t, float64(4), p["width"])
	status, d = c.call(http.MethodGet, "/dashboards/"+dash, "")
	require.Equal(t, http.StatusOK, status, d)
	placements := d["definition"].(map[string]any)["widgets"].([]any)
	require.Len(t, placements, 2)
	assert.Equal(t, float64(4), placements[1].(map[string]any)["width"])
	status, _ = c.call(http.MethodPost, "/dashboards/"+dash+"/placements", `{"type":"widget","widgetId":"`+widget+`","id":"second"}`)
	assert.Equal(t, http.StatusConflict, status)
	status, _ = c.call(http.MethodPost, "/dashboards/"+dash+"/placements", `{"type":"widget","widgetId":"no-such-widget"}`)
	assert.Equal(t, http.StatusNotFound, status)

	status, p = c.call(http.MethodPatch, "/dashboards/"+dash+"/placements/"+tile, `{"width":12,"height":4}`)
	require.Equal(t, http.StatusOK, status, p)
	assert.Equal(t, map[string]any{"type": "widget", "id": tile, "widgetId": widget, "x": 0.0, "y": 0.0, "width": 12.0, "height": 4.0}, p,
		"only the given fields change")
	status, _ = c.call(http.MethodPatch, "/dashboards/"+dash+"/placements/missing", `{"x":1}`)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = c.call(http.MethodPatch, "/dashboards/"+dash+"/placements/"+tile, `{"width":0}`)
	assert.Equal(t, http.StatusBadRequest, status, "the store's grid rules apply")

	status, _ = c.call(http.MethodDelete, "/dashboard-widgets/"+widget, "")
	assert.Equal(t, http.StatusConflict, status, "still placed")
	for _, p := range []string{tile, "second"} {
		status, out := c.call(http.MethodDelete, "/dashboards/"+dash+"/placements/"+p, "")
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, "Placement successfully deleted", out["message"])
	}
	status, _ = c.call(http.MethodDelete, "/dashboard-widgets/"+widget, "")
	assert.Equal(t, http.StatusOK, status)

	status, list := c.call(http.MethodGet, "/dashboards?limit=10", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, map[string]any{"page": float64(1), "limit": float64(10), "totalItems": float64(1), "totalPages": float64(1)}, list["meta"])
	status, d = c.call(http.MethodPatch, "/dashboards/"+dash, `{"name":"Spend","filters":[{"column":"environment","operator":"any of","type":"stringOptions","value":["prod"]}]}`)
	require.Equal(t, http.StatusOK, status, d)
	assert.Equal(t, "Spend", d["name"])
	status, _ = c.call(http.MethodDelete, "/dashboards/"+dash, "")
	assert.Equal(t, http.StatusOK, status)
	status, _ = c.call(http.MethodGet, "/dashboards/"+dash, "")
	assert.Equal(t, http.StatusNotFound, status)
}
