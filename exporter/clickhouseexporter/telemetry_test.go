package clickhouseexporter

import (
	"testing"

	"github.com/glassbox-dev/glassbox/internal/selfmetrics/selfmetricstest"
)

func TestREADMEDocumentsTelemetry(t *testing.T) {
	selfmetricstest.READMEDocuments(t, "README.md", rowsMetric, invalidMetric, failuresMetric, durationMetric, queueBytesMetric, corruptMetric, pricedMetric)
}
