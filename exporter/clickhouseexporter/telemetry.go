package clickhouseexporter

import "github.com/glassbox-dev/glassbox/internal/selfmetrics"

// The exporter's self-metrics (README, Telemetry), beside exporterhelper's.
var (
	rowsMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_rows", Description: "Observations written to ClickHouse.", Unit: "{observation}",
	}
	invalidMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_invalid_spans", Unit: "{span}",
		Description: "Spans dropped because they lack a project, trace or span id.",
	}
	failuresMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_insert_failures", Unit: "{insert}",
		Description: "Failed inserts, by whether a retry can succeed.", Attributes: "`retryable`: `true`, `false`",
	}
	queueBytesMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_disk_queue_size", Unit: "By",
		Description: "Bytes in the disk queue not yet inserted (with disk_queue).",
	}
	corruptMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_disk_queue_corrupt", Unit: "By",
		Description: "Bytes of the disk queue skipped because they failed their checksum (damage on disk).",
	}
	pricedMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_priced_spans", Unit: "{span}",
		Description: "Spans naming a model, by what the exporter's pricing did with them (with pricing).",
		Attributes:  "`result`: `client_cost`, `priced`, `estimated`, `unknown_model`, `no_usage`, `unpriced`",
	}
	durationMetric = selfmetrics.Metric{
		Name: "otelcol_exporter_glassbox_clickhouse_insert_duration", Description: "Duration of one insert into ClickHouse.", Unit: "s",
	}
)
