// Package selfmetricstest checks that a component's README documents the
// metrics it declares.
package selfmetricstest // import "github.com/glassbox-dev/glassbox/internal/selfmetrics/selfmetricstest"

import (
	"os"
	"strings"
	"testing"

	"github.com/glassbox-dev/glassbox/internal/selfmetrics"
)

// READMEDocuments fails t unless the README at path holds the table of
// metrics exactly, so a metric declared, renamed or removed without its
// documentation fails the component's tests.
func READMEDocuments(t testing.TB, path string, metrics ...selfmetrics.Metric) {
	t.Helper()
	raw, err := os.ReadFile(path) //nolint:gosec // a test reads its own package's README
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	want := selfmetrics.Table(metrics...)
	if !strings.Contains(string(raw), want) {
		t.Fatalf("%s must document the component's metrics with this table (from its declarations):\n%s", path, want)
	}
}
