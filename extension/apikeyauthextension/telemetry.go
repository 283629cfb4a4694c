package apikeyauthextension

import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

// failuresMetric is the extension's one self-metric (README, Telemetry).
var failuresMetric = selfmetrics.Metric{
	Name:        "otelcol_extension_glassbox_auth_failures",
	Description: "Requests refused by the API-key authenticator, by reason.",
	Unit:        "{request}",
	Attributes:  "`reason`: `missing`, `invalid`, `scope`, `unavailable`",
}
