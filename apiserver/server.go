// Package apiserver is Glassbox's REST API: the Langfuse public API that the
// SDKs and existing scripts speak, over the control plane store and
// ClickHouse. It runs standalone (cmd/glassbox-api) and embedded in the
// collector (extension/apiserverextension); both build it with New.
package apiserver // import "github.com/glassbox-dev/glassbox/apiserver"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/admin"
	"github.com/glassbox-dev/glassbox/apiserver/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/annotations"
	"github.com/glassbox-dev/glassbox/apiserver/automations"
	"github.com/glassbox-dev/glassbox/apiserver/comments"
	"github.com/glassbox-dev/glassbox/apiserver/dashboards"
	"github.com/glassbox-dev/glassbox/apiserver/datasets"
	"github.com/glassbox-dev/glassbox/apiserver/evaluations"
	"github.com/glassbox-dev/glassbox/apiserver/experiments"
	"github.com/glassbox-dev/glassbox/apiserver/health"
	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/ingestion"
	"github.com/glassbox-dev/glassbox/apiserver/mcp"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/apiserver/memberships"
	"github.com/glassbox-dev/glassbox/apiserver/metrics"
	"github.com/glassbox-dev/glassbox/apiserver/models"
	"github.com/glassbox-dev/glassbox/apiserver/observations"
	"github.com/glassbox-dev/glassbox/apiserver/openapi"
	"github.com/glassbox-dev/glassbox/apiserver/projects"
	"github.com/glassbox-dev/glassbox/apiserver/projectsettings"
	"github.com/glassbox-dev/glassbox/apiserver/prompts"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/apiserver/sessions"
	"github.com/glassbox-dev/glassbox/apiserver/traces"
	"github.com/glassbox-dev/glassbox/apiserver/ui"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Version is reported by the health route; release builds set it with
// -ldflags "-X github.com/glassbox-dev/glassbox/apiserver.Version=...".
var Version = "0.1.0"

// Server is the API over its two stores. Handler serves it; Verify checks
// API keys against the same control plane store, for the collector's
// authenticator.
type Server struct {
	controlPlane *controlplane.Store
	clickhouse   *chstore.Store
	handler      http.Handler
	purger       *purger
	ui           *web.App // nil when ui.enabled is off
	owned        bool     // New opened the stores, so Close closes them
}

var _ apikey.Verifier = (*Server)(nil)

// New opens the stores, brings both schemas up to date (ClickHouse's in the
// background while it is down), applies headless initialisation when
// configured, and builds the routes. Close releases the stores.
func New(ctx context.Context, cfg Config, logger *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cp, err := controlplane.Open(ctx, cfg.ControlPlane.DSN)
	if err != nil {
		return nil, err
	}
	cp.SetPromptLimits(cfg.ControlPlane.PromptComposition)
	// The server starts while ClickHouse is down and serves the control
	// plane meanwhile; it creates the tables it reads (the collector may not
	// have written yet) once ClickHouse answers.
	ch, err := chstore.Connect(ctx, cfg.ClickHouse.Config(), true, logger)
	if err != nil {
		return nil, errors.Join(err, cp.Close())
	}
	s, err := NewOver(ctx, cfg.Options, cfg.ClickHouse.Maintenance, Stores{ControlPlane: cp, ClickHouse: ch}, logger)
	if err != nil {
		return nil, errors.Join(err, ch.Close(), cp.Close())
	}
	s.owned = true
	return s, nil
}

// Stores are the two stores a server runs over.
type Stores struct {
	ControlPlane *controlplane.Store
	ClickHouse   *chstore.Store
}

// NewOver builds the server over stores that others opened and close (the
// collector's glassbox_controlplane and glassbox_storage extensions):
// headless initialisation when configured, the routes and the maintenance.
// It runs no background jobs (package workers starts those). Close leaves
// the stores open.
func NewOver(ctx context.Context, opts Options, maint Maintenance, stores Stores, logger *zap.Logger) (*Server, error) {
	if err := errors.Join(opts.Check(), maint.Check()); err != nil {
		return nil, err
	}
	cp, ch := stores.ControlPlane, stores.ClickHouse
	if opts.InitFromEnv {
		if err := cp.InitFromEnv(ctx, os.Getenv); err != nil {
			return nil, err
		}
	}
	// A malformed key fails here; Routes then reads the same variable.
	box, err := secretBox()
	if err != nil {
		return nil, err
	}
	if n, err := cp.ResealLLMSecrets(ctx, box); err != nil {
		return nil, err
	} else if n > 0 {
		logger.Info("bound LLM connection secrets to their destinations", zap.Int("connections", n))
	}
	s := &Server{controlPlane: cp, clickhouse: ch}
	s.handler, err = httpx.NewRouter(Routes(opts, cp, ch, logger), httpx.Options{
		Verifier:          cp,
		Logger:            logger,
		MaxBodyBytes:      opts.MaxRequestBodyBytes,
		MaxLargeBodyBytes: opts.MaxLargeRequestBodyBytes,
		AdminKey:          opts.adminAPIKey(os.Getenv),
	})
	if err != nil {
		return nil, err
	}
	s.handler = mediaService(opts, cp).Content(prompts.FolderNames(s.handler))
	if opts.UI.Enabled {
		llmHosts, _ := opts.Evaluation.LLMHosts() // Validate refused malformed hosts
		webhooks, _ := opts.Evaluation.Webhooks()
		if s.ui, err = ui.New(ctx, opts.UI, opts.PublicURL, ui.Stores{ControlPlane: cp, ClickHouse: ch, Media: mediaService(opts, cp),
			Secrets: box, LLMHosts: llmHosts, Webhooks: webhooks}, logger); err != nil {
			return nil, err
		}
		s.handler = s.ui.Wrap(s.handler)
	}
	s.purger = startPurger(ch, cp, mediaService(opts, cp), maint, logger)
	return s, nil
}

// secretBox seals LLM connection keys with the key in
// GLASSBOX_ENCRYPTION_KEY; nil when it is unset.
func secretBox() (*secretbox.Box, error) {
	return secretbox.FromEnv(os.Getenv)
}

// Routes is the route table of the API over the given stores; the router
// serves it and the OpenAPI document describes it.
func Routes(cfg Options, cp *controlplane.Store, ch *chstore.Store, logger *zap.Logger) []httpx.Route {
	var routes []httpx.Route
	routes = append(routes, health.Routes(Version, []health.Dependency{
		{Name: "ClickHouse", Pinger: ch},
		{Name: "Control plane store", Pinger: cp},
	}, logger)...)
	routes = append(routes, projects.Routes(cp)...)
	routes = append(routes, admin.Routes(cp)...)
	routes = append(routes, memberships.Routes(cp)...)
	routes = append(routes, traces.Routes(ch, cp, cfg.htmlPathPrefix())...)
	routes = append(routes, observations.Routes(ch, cp)...)
	routes = append(routes, sessions.Routes(ch)...)
	routes = append(routes, metrics.Routes(ch)...)
	routes = append(routes, prompts.Routes(cp)...)
	mediaFiles := mediaService(cfg, cp)
	routes = append(routes, datasets.Routes(cp, ch, mediaFiles)...)
	routes = append(routes, scores.Routes(ch, cp)...)
	routes = append(routes, mediaFiles.Routes()...)
	routes = append(routes, ingestion.Routes(ch, cp, logger)...)
	routes = append(routes, models.Routes(cp)...)
	routes = append(routes, dashboards.Routes(cp)...)
	routes = append(routes, projectsettings.Routes(cp)...)
	box, _ := secretBox()                    // New has refused a malformed key
	webhooks, _ := cfg.Evaluation.Webhooks() // and Validate malformed hosts
	llmHosts, _ := cfg.Evaluation.LLMHosts()
	routes = append(routes, evaluations.Routes(cp, box, webhooks, llmHosts)...)
	routes = append(routes, automations.Routes(cp, box, webhooks)...)
	routes = append(routes, annotations.Routes(cp, ch)...)
	routes = append(routes, comments.Routes(cp, ch)...)
	routes = append(routes, experiments.Routes(ch)...)
	routes = append(routes, alerts.Routes(alerts.Service{Store: cp, Metrics: ch, Webhooks: webhooks, Now: time.Now})...)
	// The MCP tools call the routes above.
	routes = append(routes, mcp.Routes(mcp.Config{PublicURL: cfg.PublicURL, Version: Version}, routes, cp, logger)...)
	return append(routes, openapi.Route(routes, Version))
}

// mediaService serves media from the configured directory; instances share
// their URL-signing key through the control plane store.
func mediaService(cfg Options, cp *controlplane.Store) *media.Service {
	return media.New(cp, media.Config{Dir: cfg.Media.Dir, MaxContentLength: cfg.Media.MaxContentLength, PublicURL: cfg.PublicURL})
}

// Handler serves the API (every /api/public route) and the web UI at its
// page paths; other paths get JSON 404s.
func (s *Server) Handler() http.Handler {
	return s.handler
}

// UI is the web UI, nil when it is turned off.
func (s *Server) UI() *web.App {
	return s.ui
}

// ControlPlane is the server's control plane store; the collector extension
// serves the processors' model prices and sampling settings from it.
func (s *Server) ControlPlane() *controlplane.Store {
	return s.controlPlane
}

// ClickHouse is the server's ClickHouse store.
func (s *Server) ClickHouse() *chstore.Store {
	return s.clickhouse
}

// Verify implements apikey.Verifier against the control plane store.
func (s *Server) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	return s.controlPlane.Verify(ctx, publicKey, secretKey)
}

// Close stops the purge and releases both stores if New opened them.
func (s *Server) Close() error {
	s.purger.stop()
	if !s.owned {
		return nil
	}
	return errors.Join(s.clickhouse.Close(), s.controlPlane.Close())
}

// Listener serves a handler on its own port until Shutdown.
type Listener struct {
	server *http.Server
	addr   net.Addr
	done   chan error
}

// Timeouts of the server's own listener. Reads of large traces can take a
// while; slow clients cannot hold connections open forever.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 120 * time.Second
	idleTimeout       = 120 * time.Second
)

// Listen binds addr at once, so a taken port fails here, and serves h in
// the background.
func Listen(addr string, h http.Handler, logger *zap.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	l := &Listener{
		server: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          zap.NewStdLog(logger),
		},
		addr: ln.Addr(),
		done: make(chan error, 1),
	}
	go func() {
		err := l.server.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		l.done <- err
	}()
	logger.Info("API server listening", zap.String("address", l.addr.String()))
	return l, nil
}

// Addr is the bound address (useful with port 0).
func (l *Listener) Addr() string {
	return l.addr.String()
}

// Done reports the serve loop's end: nil after Shutdown, else why it failed.
func (l *Listener) Done() <-chan error {
	return l.done
}

// Shutdown stops accepting connections and waits for requests in flight,
// until ctx ends.
func (l *Listener) Shutdown(ctx context.Context) error {
	return l.server.Shutdown(ctx)
}
