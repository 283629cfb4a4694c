package selfmetrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
)

func TestTable(t *testing.T) {
	got := Table(
		Metric{Name: "a_total", Description: "As seen.", Unit: "{a}", Attributes: "`kind`: `x`, `y`"},
		Metric{Name: "b_seconds", Description: "How long.", Unit: "s"},
	)
	assert.Equal(t, "| metric | unit | attributes | what |\n|---|---|---|---|\n"+
		"| `a_total` | `{a}` | `kind`: `x`, `y` | As seen. |\n"+
		"| `b_seconds` | `s` | — | How long. |\n", got)
}

func TestInstruments(t *testing.T) {
	meter := noop.NewMeterProvider().Meter("test")
	c, err := Metric{Name: "a_total", Unit: "{a}"}.Int64Counter(meter)
	require.NoError(t, err)
	assert.NotNil(t, c)
	h, err := Metric{Name: "b_seconds", Unit: "s"}.Float64Histogram(meter)
	require.NoError(t, err)
	assert.NotNil(t, h)
}
