package dashboards

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Chart types, as Langfuse's widgets name them.
const (
	chartLine      = "LINE_TIME_SERIES"
	chartArea      = "AREA_TIME_SERIES"
	chartBarTime   = "BAR_TIME_SERIES"
	chartHBar      = "HORIZONTAL_BAR"
	chartVBar      = "VERTICAL_BAR"
	chartPie       = "PIE"
	chartNumber    = "NUMBER"
	chartHistogram = "HISTOGRAM"
	chartTable     = "PIVOT_TABLE"
)

// chartLabels name the chart types in the widget form.
var chartLabels = map[string]string{
	chartLine: "Line over time", chartArea: "Area over time", chartBarTime: "Bars over time",
	chartHBar: "Horizontal bars", chartVBar: "Vertical bars", chartPie: "Pie",
	chartNumber: "Number", chartHistogram: "Histogram", chartTable: "Table",
}

// chartTypes are the widget chart types with their labels, in the API's
// order.
var chartTypes = func() []struct{ Key, Label string } {
	out := make([]struct{ Key, Label string }, 0, len(controlplane.WidgetChartTypes))
	for _, c := range controlplane.WidgetChartTypes {
		out = append(out, struct{ Key, Label string }{c, chartLabels[c]})
	}
	return out
}()

func timeSeries(chart string) bool {
	return chart == chartLine || chart == chartArea || chart == chartBarTime
}

// Chart geometry: the SVG's view box, in user units.
const (
	chartW, chartH = 600.0, 200.0
	padLeft        = 56.0
	padBottom      = 22.0
	padTop         = 8.0
	maxSeries      = 8  // more groups are folded into "other"
	maxBars        = 20 // bars shown per chart
)

// palette colours the series; chosen to stay apart for common colour
// blindness.
var palette = []string{"#2563eb", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#0891b2", "#db2777", "#65a30d", "#64748b"}

func colorClass(i int) string { return "c" + strconv.Itoa(i%len(palette)) }

// chartView is one rendered widget.
type chartView struct {
	Chart   string
	Error   string
	Empty   bool
	Number  string
	Series  []series
	XLabels []axisLabel
	YLabels []axisLabel
	Bars    []bar
	Slices  []pieSlice
	Table   *table
}

type series struct {
	// Class colours its legend swatch (c0, c1, …), as Color its lines: the
	// page's CSP allows no inline styles.
	Name, Color, Class string
	// Points is an SVG polyline; Area closes it to the baseline.
	Points, Area string
	Rects        []rect
}

type rect struct{ X, Y, W, H float64 }

type axisLabel struct {
	Pos  float64
	Text string
	// Anchor keeps the outer labels inside the chart: start, middle, end.
	Anchor string
}

type bar struct {
	Label, Value, Color string
	// Share is the bar's length in percent of the longest.
	Share float64
}

type pieSlice struct {
	Label, Value, Color, Class, Path string
	Percent                          string
}

type table struct {
	Head []string
	Rows [][]string
}

// metricKey is the result key of a widget's first metric.
func metricKey(q chstore.MetricsQuery) string {
	m := q.Metrics[0]
	return m.Aggregation + "_" + m.Measure
}

// value formats one metric value for people, by what the measure holds.
func value(measure string, v any) string {
	f, ok := number(v)
	if !ok {
		if v == nil {
			return "–"
		}
		return fmt.Sprint(v)
	}
	switch {
	case strings.Contains(strings.ToLower(measure), "cost"):
		return web.FormatCost(f)
	case strings.Contains(strings.ToLower(measure), "latency") || measure == "timeToFirstToken":
		return web.FormatMillis(f)
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return web.FormatInt(int64(f))
	}
	return web.FormatFloat(f)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// label names a row's group by its dimensions.
func label(q chstore.MetricsQuery, row map[string]any) string {
	var parts []string
	for _, d := range q.Dimensions {
		s := fmt.Sprint(row[d])
		if row[d] == nil || s == "" {
			s = "(none)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " · ")
}

// draw turns a widget's rows into what its chart shows.
func draw(chart string, q chstore.MetricsQuery, rows []map[string]any) chartView {
	key, measure := metricKey(q), q.Metrics[0].Measure
	// Time series have every bucket filled; all zero is no data.
	v := chartView{Chart: chart, Empty: len(rows) == 0 || timeSeries(chart) && !slices.ContainsFunc(rows, func(r map[string]any) bool {
		f, ok := number(r[key])
		return (ok && f != 0) || (!ok && r[key] != nil)
	})}
	if v.Empty {
		return v
	}
	switch chart {
	case chartNumber:
		v.Number = value(measure, rows[0][key])
	case chartLine, chartArea, chartBarTime:
		drawSeries(&v, q, rows, key)
	case chartHBar, chartVBar:
		v.Bars = bars(q, rows, key, measure)
	case chartPie:
		v.Slices = pie(q, rows, key, measure)
	case chartHistogram:
		v.Bars = histogramBars(rows[0][key])
	default:
		v.Table = pivot(q, rows)
	}
	return v
}

// ranked is the rows by their first metric, largest first, at most maxBars.
func ranked(rows []map[string]any, key string) []map[string]any {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b map[string]any) int {
		x, _ := number(a[key])
		y, _ := number(b[key])
		return cmpDesc(x, y)
	})
	return sorted[:min(len(sorted), maxBars)]
}

func bars(q chstore.MetricsQuery, rows []map[string]any, key, measure string) []bar {
	shown := ranked(rows, key)
	top, _ := number(shown[0][key])
	out := make([]bar, 0, len(shown))
	for i, r := range shown {
		f, _ := number(r[key])
		share := 0.0
		if top > 0 {
			share = 100 * f / top
		}
		out = append(out, bar{Label: label(q, r), Value: value(measure, r[key]), Color: palette[i%len(palette)], Share: share})
	}
	return out
}

func cmpDesc(x, y float64) int {
	switch {
	case x > y:
		return -1
	case x < y:
		return 1
	}
	return 0
}

func pie(q chstore.MetricsQuery, rows []map[string]any, key, measure string) []pieSlice {
	shown := ranked(rows, key)
	total := 0.0
	for _, r := range shown {
		if f, _ := number(r[key]); f > 0 {
			total += f
		}
	}
	var out []pieSlice
	angle := -math.Pi / 2
	for i, r := range shown {
		f, _ := number(r[key])
		if total <= 0 || f <= 0 {
			continue
		}
		sweep := 2 * math.Pi * f / total
		out = append(out, pieSlice{Label: label(q, r), Value: value(measure, r[key]), Color: palette[i%len(palette)], Class: colorClass(i),
			Path: arc(angle, sweep), Percent: strconv.FormatFloat(100*f/total, 'f', 1, 64)})
		angle += sweep
	}
	return out
}

// arc is the SVG path of a pie slice of a circle of radius 80 around
// (100, 100), from angle start through sweep radians.
func arc(start, sweep float64) string {
	const cx, cy, r = 100.0, 100.0, 80.0
	if sweep >= 2*math.Pi-1e-9 {
		return fmt.Sprintf("M %.2f %.2f a %.0f %.0f 0 1 0 0.01 0 Z", cx, cy-r, r, r)
	}
	x1, y1 := cx+r*math.Cos(start), cy+r*math.Sin(start)
	x2, y2 := cx+r*math.Cos(start+sweep), cy+r*math.Sin(start+sweep)
	large := 0
	if sweep > math.Pi {
		large = 1
	}
	return fmt.Sprintf("M %.2f %.2f L %.2f %.2f A %.0f %.0f 0 %d 1 %.2f %.2f Z", cx, cy, x1, y1, r, r, large, x2, y2)
}

func histogramBars(h any) []bar {
	bins, _ := h.([]any)
	top := 0.0
	for _, b := range bins {
		if t, ok := b.([]any); ok && len(t) == 3 {
			if n, _ := number(t[2]); n > top {
				top = n
			}
		}
	}
	var out []bar
	for _, b := range bins {
		t, ok := b.([]any)
		if !ok || len(t) != 3 {
			continue
		}
		lo, _ := number(t[0])
		hi, _ := number(t[1])
		n, _ := number(t[2])
		share := 0.0
		if top > 0 {
			share = 100 * n / top
		}
		out = append(out, bar{Label: web.FormatFloat(lo) + " – " + web.FormatFloat(hi), Value: web.FormatInt(int64(n)), Color: palette[0], Share: share})
	}
	return out
}

func pivot(q chstore.MetricsQuery, rows []map[string]any) *table {
	t := &table{}
	t.Head = append(t.Head, q.Dimensions...)
	for _, m := range q.Metrics {
		if m.Measure == "count" && m.Aggregation == "count" {
			t.Head = append(t.Head, "count")
			continue
		}
		t.Head = append(t.Head, m.Aggregation+" "+m.Measure)
	}
	for _, r := range rows[:min(len(rows), 100)] {
		var cells []string
		for _, d := range q.Dimensions {
			cells = append(cells, fmt.Sprint(r[d]))
		}
		for _, m := range q.Metrics {
			cells = append(cells, value(m.Measure, r[m.Aggregation+"_"+m.Measure]))
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// drawSeries lays out a time series per group on a shared time axis.
func drawSeries(v *chartView, q chstore.MetricsQuery, rows []map[string]any, key string) {
	type point struct {
		t time.Time
		y float64
	}
	groups := map[string][]point{}
	totals := map[string]float64{}
	var times []time.Time
	seen := map[time.Time]bool{}
	for _, r := range rows {
		ts, err := time.Parse(time.RFC3339, fmt.Sprint(r[chstore.TimeDimensionKey]))
		if err != nil {
			continue
		}
		y, _ := number(r[key])
		g := label(q, r)
		groups[g] = append(groups[g], point{ts, y})
		totals[g] += y
		if !seen[ts] {
			seen[ts] = true
			times = append(times, ts)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmpDesc(totals[a], totals[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(names) > maxSeries {
		other := map[time.Time]float64{}
		for _, g := range names[maxSeries-1:] {
			for _, p := range groups[g] {
				other[p.t] += p.y
			}
		}
		names = append(names[:maxSeries-1:maxSeries-1], "other")
		groups["other"] = nil
		for t, y := range other {
			groups["other"] = append(groups["other"], point{t, y})
		}
	}
	top := 0.0
	for _, g := range names {
		for _, p := range groups[g] {
			top = math.Max(top, p.y)
		}
	}
	if top <= 0 {
		top = 1
	}
	n := len(times)
	index := make(map[time.Time]int, n)
	for i, t := range times {
		index[t] = i
	}
	plotW, plotH := chartW-padLeft-8, chartH-padTop-padBottom
	x := func(i int) float64 {
		if n <= 1 {
			return padLeft + plotW/2
		}
		return padLeft + plotW*float64(i)/float64(n-1)
	}
	y := func(f float64) float64 { return padTop + plotH*(1-f/top) }
	slot := plotW / float64(max(n, 1))
	for si, g := range names {
		values := make([]float64, n)
		for _, p := range groups[g] {
			values[index[p.t]] += p.y
		}
		s := series{Name: g, Color: palette[si%len(palette)], Class: colorClass(si)}
		var pts []string
		for i, f := range values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(f)))
			if v.Chart == chartBarTime {
				w := slot / float64(len(names)+1)
				s.Rects = append(s.Rects, rect{X: round1(padLeft + slot*float64(i) + w*float64(si) + w/2), Y: round1(y(f)), W: round1(w), H: round1(padTop + plotH - y(f))})
			}
		}
		s.Points = strings.Join(pts, " ")
		if v.Chart == chartArea && n > 0 {
			s.Area = fmt.Sprintf("%.1f,%.1f %s %.1f,%.1f", x(0), padTop+plotH, s.Points, x(n-1), padTop+plotH)
		}
		v.Series = append(v.Series, s)
	}
	measure := q.Metrics[0].Measure
	for i := 0; i <= 2; i++ {
		f := top * float64(i) / 2
		v.YLabels = append(v.YLabels, axisLabel{Pos: y(f), Text: value(measure, f)})
	}
	layout := "Jan 2 15:04"
	if n > 1 && times[n-1].Sub(times[0]) >= 72*time.Hour {
		layout = "Jan 2"
	}
	for _, i := range uniqueInts(0, n/2, n-1) {
		if i < 0 || i >= n {
			continue
		}
		anchor := "middle"
		switch {
		case n > 1 && i == 0:
			anchor = "start"
		case n > 1 && i == n-1:
			anchor = "end"
		}
		v.XLabels = append(v.XLabels, axisLabel{Pos: x(i), Text: times[i].UTC().Format(layout), Anchor: anchor})
	}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func uniqueInts(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
