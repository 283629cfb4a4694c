package dashboards

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

func TestBarsRankLargestFirst(t *testing.T) {
	q := chstore.MetricsQuery{Dimensions: []string{"providedModelName"}, Metrics: []chstore.Metric{{Measure: "totalCost", Aggregation: "sum"}}}
	v := draw(chartHBar, q, []map[string]any{
		{"providedModelName": "small", "sum_totalCost": 1.0},
		{"providedModelName": "big", "sum_totalCost": 4.0},
		{"providedModelName": "", "sum_totalCost": 2.0},
	})
	require.Len(t, v.Bars, 3)
	assert.Equal(t, []string{"big", "(none)", "small"}, []string{v.Bars[0].Label, v.Bars[1].Label, v.Bars[2].Label})
	assert.InDelta(t, 100, v.Bars[0].Share, 1e-9)
	assert.InDelta(t, 25, v.Bars[2].Share, 1e-9)
	assert.Equal(t, "$4.0000", v.Bars[0].Value, "as the rest of the UI shows costs")
}

func TestPieSharesAddUp(t *testing.T) {
	q := chstore.MetricsQuery{Dimensions: []string{"name"}, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}}}
	v := draw(chartPie, q, []map[string]any{{"name": "a", "count_count": "3"}, {"name": "b", "count_count": "1"}, {"name": "c", "count_count": "0"}})
	require.Len(t, v.Slices, 2, "an empty slice is left out")
	total := 0.0
	for _, s := range v.Slices {
		f, err := strconv.ParseFloat(s.Percent, 64)
		require.NoError(t, err)
		total += f
	}
	assert.InDelta(t, 100, total, 0.1)
	assert.Equal(t, "75.0", v.Slices[0].Percent)
}

func TestSeriesFoldTheRestIntoOther(t *testing.T) {
	q := chstore.MetricsQuery{Dimensions: []string{"name"}, Metrics: []chstore.Metric{{Measure: "count", Aggregation: "count"}}}
	var rows []map[string]any
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for g := range 12 {
		for d := range 3 {
			rows = append(rows, map[string]any{"name": fmt.Sprint("g", g), chstore.TimeDimensionKey: start.AddDate(0, 0, d).Format(time.RFC3339),
				"count_count": strconv.Itoa(100 - g)})
		}
	}
	v := draw(chartLine, q, rows)
	require.Len(t, v.Series, maxSeries)
	assert.Equal(t, "g0", v.Series[0].Name, "largest first")
	assert.Equal(t, "other", v.Series[maxSeries-1].Name)
	assert.Len(t, v.XLabels, 3)
	assert.Equal(t, "Nov 1 00:00", v.XLabels[0].Text)

	zero := draw(chartLine, q, []map[string]any{{"name": "x", chstore.TimeDimensionKey: start.Format(time.RFC3339), "count_count": "0"}})
	assert.True(t, zero.Empty, "a series of empty buckets is no data")
	number := draw(chartNumber, chstore.MetricsQuery{Metrics: q.Metrics}, []map[string]any{{"count_count": "0"}})
	assert.Equal(t, "0", number.Number, "a number shows its zero")
}

func TestHistogramBars(t *testing.T) {
	q := chstore.MetricsQuery{Metrics: []chstore.Metric{{Measure: "latency", Aggregation: "histogram"}}}
	v := draw(chartHistogram, q, []map[string]any{{"histogram_latency": []any{[]any{0.0, 10.0, int64(2)}, []any{10.0, 20.0, int64(4)}}}})
	require.Len(t, v.Bars, 2)
	assert.InDelta(t, 50, v.Bars[0].Share, 1e-9)
	assert.Equal(t, "4", v.Bars[1].Value)
}
