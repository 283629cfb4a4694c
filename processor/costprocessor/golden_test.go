package costprocessor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

func readGolden(t *testing.T, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v))
}

func assertCost(t *testing.T, want, got map[string]float64) {
	t.Helper()
	assert.Len(t, got, len(want), "cost keys: %v", got)
	for k, v := range want {
		assert.InDelta(t, v, got[k], 1e-12, k)
	}
}

// Each producer's usage attributes become the same normalised usage and
// the same cost, and the mapping reads back what the processor wrote.
func TestGoldenUsageShapes(t *testing.T) {
	var golden struct {
		Start time.Time          `json:"start"`
		Usage map[string]float64 `json:"usage"`
		Cost  map[string]float64 `json:"cost"`
		Cases []struct {
			Name       string             `json:"name"`
			Scope      string             `json:"scope"`
			Attributes map[string]any     `json:"attributes"`
			Usage      map[string]float64 `json:"usage"`
			Cost       map[string]float64 `json:"cost"`
		} `json:"cases"`
	}
	readGolden(t, "shapes.json", &golden)
	require.NotEmpty(t, golden.Cases)
	h := newHarness(t, defaultConfig(), nil)
	for _, c := range golden.Cases {
		t.Run(c.Name, func(t *testing.T) {
			td := testTraces(t, "proj", testSpan{scope: c.Scope, attrs: c.Attributes, start: golden.Start})
			attrs := h.consume(t, td)[0]
			wantUsage, wantCost := golden.Usage, golden.Cost
			if c.Usage != nil {
				wantUsage, wantCost = c.Usage, c.Cost
			}
			assert.Equal(t, wantUsage, jsonAttr(t, attrs, model.UsageDetailsAttribute))
			cost := jsonAttr(t, attrs, model.CostDetailsAttribute)
			assertCost(t, wantCost, cost)
			assert.InDelta(t, golden.Cost["total"], cost["total"], 1e-12, "every shape costs the same")

			obs := mapping.Observations(h.sink.AllTraces()[len(h.sink.AllTraces())-1], time.Now())
			require.Len(t, obs, 1)
			assert.Equal(t, "GENERATION", obs[0].Type)
			assert.Equal(t, cost, obs[0].CostDetails)
		})
	}
}

// Project models, price changes by date and tiers, end to end.
func TestGoldenPricing(t *testing.T) {
	var golden struct {
		ProjectModels map[string][]pricing.Model `json:"projectModels"`
		Cases         []struct {
			Name    string             `json:"name"`
			Project string             `json:"project"`
			Model   string             `json:"model"`
			Start   time.Time          `json:"start"`
			Usage   map[string]int64   `json:"usage"`
			Cost    map[string]float64 `json:"cost"`
		} `json:"cases"`
	}
	readGolden(t, "pricing.json", &golden)
	sourceID := component.MustNewID("glassbox_api")
	cfg := defaultConfig()
	cfg.Pricing.ModelsSource = &sourceID
	h := newHarness(t, cfg, fakeHost{extensions: map[component.ID]component.Component{
		sourceID: &fakeSource{models: golden.ProjectModels},
	}})

	span := func(project, modelName string, start time.Time, usage map[string]int64) map[string]float64 {
		raw, err := json.Marshal(usage)
		require.NoError(t, err)
		s := generation(modelName, map[string]any{"langfuse.observation.usage_details": string(raw)})
		s.start = start
		return jsonAttr(t, h.consume(t, testTraces(t, project, s))[0], model.CostDetailsAttribute)
	}
	first := golden.Cases[1]
	require.Equal(t, "acme", first.Project)
	require.Eventually(t, func() bool {
		return span(first.Project, first.Model, first.Start, first.Usage)["total"] == first.Cost["total"]
	}, 5*time.Second, 5*time.Millisecond, "project models loaded")

	for _, c := range golden.Cases {
		t.Run(c.Name, func(t *testing.T) {
			assertCost(t, c.Cost, span(c.Project, c.Model, c.Start, c.Usage))
		})
	}
}
