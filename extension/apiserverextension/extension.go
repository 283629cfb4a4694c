package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/refresh"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

// HandlerProvider is what the ingest receiver's fallback looks for.
type HandlerProvider interface {
	Handler() http.Handler
}

var (
	_ extension.Extension = (*apiExtension)(nil)
	_ HandlerProvider     = (*apiExtension)(nil)
	_ apikey.Verifier     = (*apiExtension)(nil)
	_ pricing.ModelSource = (*apiExtension)(nil)
	_ sampling.Source     = (*apiExtension)(nil)
	_ evaljobs.RuleSource = (*apiExtension)(nil)
	_ evaljobs.Enqueuer   = (*apiExtension)(nil)
	_ refresh.Changes     = (*apiExtension)(nil)
)

// errNotRunning is returned by Verify outside Start..Shutdown; it is not
// apikey.ErrInvalidCredentials, so callers answer 503, not 401.
var errNotRunning = errors.New("glassbox_api extension is not running")

type apiExtension struct {
	cfg    *Config
	logger *zap.Logger

	server   atomic.Pointer[apiserver.Server]
	listener *apiserver.Listener
}

func newAPIExtension(cfg *Config, set extension.Settings) *apiExtension {
	return &apiExtension{cfg: cfg, logger: set.Logger}
}

// Start opens the stores and, with `listen` set, serves the API on its own port.
func (e *apiExtension) Start(ctx context.Context, _ component.Host) error {
	srv, err := apiserver.New(ctx, *e.cfg, e.logger)
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
// ends, and closes the stores. It is safe without Start and when repeated.
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

// Handler serves the API while the extension runs and 503 otherwise; the
// receiver may take it before Start and keep it after Shutdown.
func (e *apiExtension) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv := e.server.Load()
		if srv == nil {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"message":"Service Unavailable"}`))
			return
		}
		srv.Handler().ServeHTTP(w, r)
	})
}

// Verify implements apikey.Verifier against the control plane store.
func (e *apiExtension) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	srv := e.server.Load()
	if srv == nil {
		return apikey.Principal{}, errNotRunning
	}
	return srv.Verify(ctx, publicKey, secretKey)
}

// controlPlane is the running server's store, or errNotRunning.
func (e *apiExtension) controlPlane() (*controlplane.Store, error) {
	srv := e.server.Load()
	if srv == nil {
		return nil, errNotRunning
	}
	return srv.ControlPlane(), nil
}

// Changed implements refresh.Changes for the processors and the
// authenticator: a change made through this process's API reaches them at
// once. Before Start nothing is reported.
func (e *apiExtension) Changed(kind string) <-chan struct{} {
	cp, err := e.controlPlane()
	if err != nil {
		return nil
	}
	return cp.Changed(kind)
}

// ChangeVersion implements refresh.Changes: changes made by other
// processes on the same control plane.
func (e *apiExtension) ChangeVersion(ctx context.Context, kind string) (int64, error) {
	cp, err := e.controlPlane()
	if err != nil {
		return 0, err
	}
	return cp.ChangeVersion(ctx, kind)
}

// ProjectModels serves the projects' own model prices to glassbox_cost.
func (e *apiExtension) ProjectModels(ctx context.Context) (map[string][]pricing.Model, error) {
	cp, err := e.controlPlane()
	if err != nil {
		return nil, err
	}
	return cp.ProjectModels(ctx)
}

// ProjectSampling serves the projects' sampling settings to glassbox_sampling.
func (e *apiExtension) ProjectSampling(ctx context.Context) (map[string]sampling.Rates, error) {
	cp, err := e.controlPlane()
	if err != nil {
		return nil, err
	}
	return cp.ProjectSampling(ctx)
}

// ActiveEvalRules serves the evaluator rules to glassbox_evaltap.
func (e *apiExtension) ActiveEvalRules(ctx context.Context) ([]evaljobs.Rule, error) {
	cp, err := e.controlPlane()
	if err != nil {
		return nil, err
	}
	return cp.ActiveEvalRules(ctx)
}

// EnqueueEvalJobs takes glassbox_evaltap's jobs into the durable queue.
func (e *apiExtension) EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error {
	cp, err := e.controlPlane()
	if err != nil {
		return err
	}
	return cp.EnqueueEvalJobs(ctx, jobs)
}
