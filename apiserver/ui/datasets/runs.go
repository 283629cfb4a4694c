package datasets

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// maxRunItems bounds the items of one run that its figures are read from.
const maxRunItems = 1000

// runResult is one run's figures over the traces its items produced.
type runResult struct {
	Run        controlplane.DatasetRun
	Items      int
	Traces     int     // of those, the traces that exist
	LatencyAvg float64 // seconds
	CostTotal  float64
	// Scores is the average of each numeric or boolean score over the
	// run's traces, by score name.
	Scores map[string]float64
	// ByItem is the run's trace per dataset item.
	ByItem map[string]chstore.Trace
}

// traceScores are numeric and boolean scores per trace and name.
type traceScores map[string]map[string]float64

// readRuns reads the runs' items, their traces and the traces' scores: one
// trace read and two metrics-engine queries for all runs together.
func (h *handlers) readRuns(r *web.Request, ds controlplane.Dataset, runs []controlplane.DatasetRun) ([]runResult, traceScores, []string, error) {
	out := make([]runResult, len(runs))
	itemsOf := make([][]controlplane.DatasetRunItem, len(runs))
	var ids []string
	from := h.now()
	for i, run := range runs {
		items, _, err := h.store.ListDatasetRunItems(r.Context(), r.Project.ID, controlplane.DatasetRunItemFilter{DatasetID: ds.ID, RunName: run.Name, Limit: maxRunItems})
		if err != nil {
			return nil, nil, nil, err
		}
		itemsOf[i] = items
		for _, it := range items {
			ids = append(ids, it.TraceID)
		}
		if run.CreatedAt.Before(from) {
			from = run.CreatedAt
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	traces := map[string]chstore.Trace{}
	for chunk := range slices.Chunk(ids, maxRunItems) {
		got, err := h.traces.GetTraces(r.Context(), r.Project.ID, chunk)
		if err != nil {
			return nil, nil, nil, err
		}
		for id, t := range got {
			traces[id] = t
			if ts := time.UnixMicro(t.Timestamp); ts.Before(from) {
				from = ts
			}
		}
	}
	scores, names, err := h.scoresOf(r, ids, from)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, run := range runs {
		res := runResult{Run: run, Items: len(itemsOf[i]), Scores: map[string]float64{}, ByItem: map[string]chstore.Trace{}}
		sums, counts := map[string]float64{}, map[string]int{}
		for _, it := range itemsOf[i] {
			t, ok := traces[it.TraceID]
			if !ok {
				continue
			}
			res.ByItem[it.DatasetItemID] = t
			res.Traces++
			res.LatencyAvg += t.LatencySeconds
			res.CostTotal += t.TotalCost
			for name, v := range scores[t.ID] {
				sums[name] += v
				counts[name]++
			}
		}
		if res.Traces > 0 {
			res.LatencyAvg /= float64(res.Traces)
		}
		for name, n := range counts {
			res.Scores[name] = sums[name] / float64(n)
		}
		out[i] = res
	}
	return out, scores, names, nil
}

// scoresOf reads each trace's average numeric and boolean scores by name,
// from the metrics engine, in the window from `from` to now.
func (h *handlers) scoresOf(r *web.Request, ids []string, from time.Time) (traceScores, []string, error) {
	out := traceScores{}
	if len(ids) == 0 {
		return out, nil, nil
	}
	values := make([]any, len(ids))
	for i, id := range ids {
		values[i] = id
	}
	var names []string
	for _, view := range []string{chstore.ViewScoresNumeric, chstore.ViewScoresBoolean} {
		rows, err := h.traces.Metrics(r.Context(), r.Project.ID, chstore.MetricsQuery{View: view, Dimensions: []string{"traceId", "name"},
			Metrics: []chstore.Metric{{Measure: "value", Aggregation: "avg"}},
			Filters: []chstore.Filter{{Column: "traceId", Type: "stringOptions", Operator: "any of", Value: values}},
			From:    from.Add(-time.Hour), To: h.now().Add(time.Hour)})
		if err != nil {
			return nil, nil, err
		}
		for _, row := range rows {
			trace, name := fmt.Sprint(row["traceId"]), fmt.Sprint(row["name"])
			v, err := strconv.ParseFloat(fmt.Sprint(row["avg_value"]), 64)
			if err != nil {
				continue
			}
			if out[trace] == nil {
				out[trace] = map[string]float64{}
			}
			out[trace][name] = v
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return out, names, nil
}

// distribution is one score's values across the compared runs, in bins
// over the range all runs share, so the bars compare.
type distribution struct {
	Name string
	Bins []string // bin labels
	Runs []binCounts
}

type binCounts struct {
	Run    string
	Counts []int
	Max    int
}

const distributionBins = 5

func distributions(results []runResult, scores traceScores, names []string) []distribution {
	var out []distribution
	for _, name := range names {
		lo, hi, found := 0.0, 0.0, false
		for _, res := range results {
			for _, t := range res.ByItem {
				if v, ok := scores[t.ID][name]; ok {
					if !found || v < lo {
						lo = v
					}
					if !found || v > hi {
						hi = v
					}
					found = true
				}
			}
		}
		if !found {
			continue
		}
		width := (hi - lo) / distributionBins
		d := distribution{Name: name}
		for b := range distributionBins {
			d.Bins = append(d.Bins, web.FormatFloat(lo+float64(b)*width)+"–"+web.FormatFloat(lo+float64(b+1)*width))
		}
		if width == 0 {
			d.Bins = []string{web.FormatFloat(lo)}
		}
		for _, res := range results {
			c := binCounts{Run: res.Run.Name, Counts: make([]int, len(d.Bins))}
			for _, t := range res.ByItem {
				v, ok := scores[t.ID][name]
				if !ok {
					continue
				}
				b := 0
				if width > 0 {
					b = min(int((v-lo)/width), distributionBins-1)
				}
				c.Counts[b]++
				c.Max = max(c.Max, c.Counts[b])
			}
			d.Runs = append(d.Runs, c)
		}
		out = append(out, d)
	}
	return out
}
