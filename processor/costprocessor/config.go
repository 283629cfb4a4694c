package costprocessor // import "github.com/glassbox-dev/glassbox/processor/costprocessor"

import (
	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

// Config configures the glassbox_cost processor: how it prices, with the
// keys of the ClickHouse exporter's pricing. A named field rather than an
// embedded one, so that validation reports each error once.
type Config struct {
	Pricing costing.Config `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)
