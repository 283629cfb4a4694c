package evaltapprocessor

import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

// jobsMetric is the processor's one self-metric (README, Telemetry).
var jobsMetric = selfmetrics.Metric{
	Name:        "otelcol_processor_glassbox_evaltap_jobs",
	Description: "Evaluation jobs offered by the evaluator tap, by what became of them.",
	Unit:        "{job}",
	Attributes:  "`result`: `buffered`, `dropped`, `written`, `failed`",
}
