package costprocessor

import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

// spansMetric is the processor's one self-metric (README, Telemetry).
var spansMetric = selfmetrics.Metric{
	Name:        "otelcol_processor_glassbox_cost_spans",
	Description: "Spans naming a model, by what the cost processor did with them.",
	Unit:        "{span}",
	Attributes:  "`result`: `client_cost`, `priced`, `estimated`, `unknown_model`, `no_usage`, `unpriced`",
}
