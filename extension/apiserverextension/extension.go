package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/cpsource"
)

// HandlerProvider is what the ingest receiver's fallback looks for.
type HandlerProvider interface {
	Handler() http.Handler
}

var (
	_ extension.Extension             = (*apiExtension)(nil)
	_ extensioncapabilities.Dependent = (*apiExtension)(nil)
	_ HandlerProvider                 = (*apiExtension)(nil)
)

type apiExtension struct {
	// Source serves the processors and the authenticator from the running
	// server's control plane store (the interfaces are listed in cpsource).
	cpsource.Source
	cfg    *Config
	logger *zap.Logger

	server   atomic.Pointer[apiserver.Server]
	listener *apiserver.Listener
}

func newAPIExtension(cfg *Config, set extension.Settings) *apiExtension {
	e := &apiExtension{cfg: cfg, logger: set.Logger}
	e.Source = cpsource.Source{Store: func() *controlplane.Store {
		if srv := e.server.Load(); srv != nil {
			return srv.ControlPlane()
		}
		return nil
	}}
	return e
}

// Dependencies has the collector start the two store extensions first.
func (e *apiExtension) Dependencies() []component.ID {
	return e.cfg.Dependencies()
}

// Start builds the server over the stores of the extensions it names and,
// with `listen` set, serves the API on its own port.
func (e *apiExtension) Start(ctx context.Context, host component.Host) error {
	cp, ch, err := e.cfg.Stores(host)
	if err != nil {
		return err
	}
	srv, err := apiserver.NewOver(ctx, e.cfg.Options, e.cfg.ClickHouse, apiserver.Stores{ControlPlane: cp, ClickHouse: ch}, e.logger)
	if err != nil {
		return err
	}
	if e.cfg.Listen != "" {
		l, err := apiserver.Listen(e.cfg.Listen, srv.Handler(), e.logger)
		if err != nil {
			return errors.Join(err, srv.Close())
		}
		e.listener = l
	}
	e.server.Store(srv)
	return nil
}

// Shutdown stops the listener, waiting for requests in flight until ctx
// ends, and the server's maintenance; the stores are their extensions'. It is safe without Start and when repeated.
func (e *apiExtension) Shutdown(ctx context.Context) error {
	var errs []error
	if e.listener != nil {
		errs = append(errs, e.listener.Shutdown(ctx))
		e.listener = nil
	}
	if srv := e.server.Swap(nil); srv != nil {
		errs = append(errs, srv.Close())
	}
	return errors.Join(errs...)
}

// notStartedBody is the answer while the API is not running, in the words
// the auth step uses for a store it cannot ask.
var notStartedBody, _ = json.Marshal(apierr.Body{Message: apierr.MsgUnavailable})

// Handler serves the API while the extension runs and 503 otherwise; the
// receiver may take it before Start and keep it after Shutdown.
func (e *apiExtension) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv := e.server.Load()
		if srv == nil {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write(notStartedBody)
			return
		}
		srv.Handler().ServeHTTP(w, r)
	})
}
