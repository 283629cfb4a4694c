package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/apiserver"
)

// Config is the API server's own configuration, so the standalone server
// and the extension read the same keys; its Validate checks it.
type Config = apiserver.Config

var _ component.Config = (*Config)(nil)
