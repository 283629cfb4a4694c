// Package selfmetrics declares a component's own metrics once: the code
// creates its instruments from the declarations, and the component's README
// shows the table that Table renders from the same declarations (a test of
// each component checks that it does).
package selfmetrics // import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/metric"
)

// Metric is one self-metric of a component.
type Metric struct {
	Name        string
	Description string
	Unit        string
	// Attributes name the attributes its points carry, with their values,
	// e.g. "decision: kept, dropped".
	Attributes string
}

// Int64Counter creates the counter m declares.
func (m Metric) Int64Counter(meter metric.Meter) (metric.Int64Counter, error) {
	c, err := meter.Int64Counter(m.Name, metric.WithDescription(m.Description), metric.WithUnit(m.Unit))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", m.Name, err)
	}
	return c, nil
}

// Float64Histogram creates the histogram m declares.
func (m Metric) Float64Histogram(meter metric.Meter) (metric.Float64Histogram, error) {
	h, err := meter.Float64Histogram(m.Name, metric.WithDescription(m.Description), metric.WithUnit(m.Unit))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", m.Name, err)
	}
	return h, nil
}

// Int64ObservableGauge creates the gauge m declares, read by observe.
func (m Metric) Int64ObservableGauge(meter metric.Meter, observe metric.Int64Callback) (metric.Int64ObservableGauge, error) {
	g, err := meter.Int64ObservableGauge(m.Name, metric.WithDescription(m.Description), metric.WithUnit(m.Unit),
		metric.WithInt64Callback(observe))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", m.Name, err)
	}
	return g, nil
}

// Table renders the metrics as the Markdown table of a README's Telemetry
// section.
func Table(metrics ...Metric) string {
	var b strings.Builder
	b.WriteString("| metric | unit | attributes | what |\n|---|---|---|---|\n")
	for _, m := range metrics {
		attrs := m.Attributes
		if attrs == "" {
			attrs = "—"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", m.Name, m.Unit, attrs, m.Description)
	}
	return b.String()
}
