// Package projectprocessor stamps every span with the project of the key
// that authenticated the request, for pipelines whose receiver is a stock
// one (otlp, and others taking an authenticator) rather than glassbox_ingest,
// which stamps by itself. Without it a client could name any project in the
// data, and the exporter, which trusts the attribute, would store it there.
package projectprocessor // import "github.com/glassbox-dev/glassbox/processor/projectprocessor"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

var errNoAuth = errors.New("no authenticated project in the request context: the receiver needs an authenticator " +
	"(auth: {authenticator: glassbox_auth}), and glassbox_project must come before any processor that batches")

type projectProcessor struct {
	attribute string
}

// processTraces refuses data whose request carried no project, permanently:
// retrying cannot add one.
func (p *projectProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	info := client.FromContext(ctx)
	if info.Auth == nil {
		return td, consumererror.NewPermanent(errNoAuth)
	}
	project, _ := info.Auth.GetAttribute(p.attribute).(string)
	if project == "" {
		return td, consumererror.NewPermanent(fmt.Errorf("%w (attribute %q is empty)", errNoAuth, p.attribute))
	}
	model.StampProject(td, project)
	return td, nil
}
