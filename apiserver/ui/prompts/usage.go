package prompts

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// usageRow is one version's use in the time range: the generations that
// name it, their latency and cost, and the average of each numeric score
// given to those generations.
type usageRow struct {
	Version     int
	Generations int64
	LatencyP50  float64 // milliseconds
	LatencyP95  float64
	Cost        float64
	Scores      []string // formatted averages, in promptData.Scores order; "" for none
}

var (
	usageCount    = chstore.Metric{Measure: "count", Aggregation: "count"}
	usageP50      = chstore.Metric{Measure: "latency", Aggregation: "p50"}
	usageP95      = chstore.Metric{Measure: "latency", Aggregation: "p95"}
	usageCost     = chstore.Metric{Measure: "totalCost", Aggregation: "sum"}
	usageAvgScore = chstore.Metric{Measure: "value", Aggregation: "avg"}
)

// maxUsageScores bounds the score columns of the usage table.
const maxUsageScores = 8

// readUsage fills the usage table with two metrics-engine queries: the
// observations that name the prompt by version, and the numeric scores of
// those observations by version and score name.
func (h *handlers) readUsage(r *web.Request, name string, d *promptData) error {
	obs, err := h.metrics.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewObservations,
		Dimensions: []string{"promptVersion"}, Metrics: []chstore.Metric{usageCount, usageP50, usageP95, usageCost},
		Filters: []chstore.Filter{{Column: "promptName", Type: "string", Operator: "=", Value: name}},
		From:    d.Range.From, To: d.Range.To, OrderBy: []chstore.MetricOrder{{Field: "promptVersion", Desc: true}}})
	if err != nil {
		return err
	}
	scores, err := h.metrics.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: chstore.ViewScoresNumeric,
		Dimensions: []string{"observationPromptVersion", "name"}, Metrics: []chstore.Metric{usageAvgScore},
		Filters: []chstore.Filter{{Column: "observationPromptName", Type: "string", Operator: "=", Value: name}},
		From:    d.Range.From, To: d.Range.To, OrderBy: []chstore.MetricOrder{{Field: "name"}}})
	if err != nil {
		return err
	}
	avg := map[int]map[string]float64{}
	for _, row := range scores {
		v, ok := intOf(row["observationPromptVersion"])
		score := fmt.Sprint(row["name"])
		if !ok {
			continue
		}
		if !slices.Contains(d.Scores, score) && len(d.Scores) < maxUsageScores {
			d.Scores = append(d.Scores, score)
		}
		if avg[v] == nil {
			avg[v] = map[string]float64{}
		}
		avg[v][score] = floatOf(row[usageAvgScore.Key()])
	}
	for _, row := range obs {
		v, ok := intOf(row["promptVersion"])
		if !ok {
			continue
		}
		u := usageRow{Version: v, LatencyP50: floatOf(row[usageP50.Key()]), LatencyP95: floatOf(row[usageP95.Key()]),
			Cost: floatOf(row[usageCost.Key()])}
		u.Generations, _ = strconv.ParseInt(fmt.Sprint(row[usageCount.Key()]), 10, 64)
		for _, s := range d.Scores {
			if a, ok := avg[v][s]; ok {
				u.Scores = append(u.Scores, web.FormatFloat(a))
			} else {
				u.Scores = append(u.Scores, "")
			}
		}
		d.Usage = append(d.Usage, u)
	}
	return nil
}

// intOf reads a version from a result row; NULL (no prompt) is not one.
func intOf(v any) (int, bool) {
	if v == nil {
		return 0, false
	}
	n, err := strconv.Atoi(fmt.Sprint(v))
	return n, err == nil
}

func floatOf(v any) float64 {
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}
