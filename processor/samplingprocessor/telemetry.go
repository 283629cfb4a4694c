package samplingprocessor

import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

// spansMetric is the processor's one self-metric (README, Telemetry).
var spansMetric = selfmetrics.Metric{
	Name:        "otelcol_processor_glassbox_sampling_spans",
	Description: "Spans kept or dropped by the sampling processor.",
	Unit:        "{span}",
	Attributes:  "`decision`: `kept`, `dropped`",
}
