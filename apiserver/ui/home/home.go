// Package home serves a project's landing page: the onboarding that shows
// how to send the first trace while the project is empty, and the home
// dashboard once it is not.
package home // import "github.com/glassbox-dev/glassbox/apiserver/ui/home"

import (
	"context"
	"embed"
	"encoding/base64"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store is what the landing page reads and writes.
type Store interface {
	ListAPIKeys(ctx context.Context, orgID, projectID string) ([]controlplane.APIKey, error)
	CreateAPIKey(ctx context.Context, orgID, projectID string, k controlplane.NewAPIKey) (controlplane.APIKey, string, error)
}

// Traces tells whether a project has any trace yet.
type Traces interface {
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
}

type handlers struct {
	store  Store
	traces Traces
	t      *web.Templates
	// dashboard renders the project's home once it has data.
	dashboard func(*web.Request) error
}

// Routes registers the landing page. dashboard serves the home once the
// project has traces.
func Routes(app *web.App, store Store, traces Traces, dashboard func(*web.Request) error) error {
	t, err := app.Parse(pages, "onboarding.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, traces: traces, t: t, dashboard: dashboard}
	app.AddNav(web.NavItem{Label: "Home", Path: "", Action: access.ProjectRead, Order: 0})
	return app.Handle(
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}", Access: web.InProject, Action: access.ProjectRead, Handler: h.home},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/onboarding/status", Access: web.InProject, Action: access.ProjectRead, Handler: h.status},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/onboarding/key", Access: web.InProject, Action: access.APIKeysManage, Handler: h.createKey},
	)
}

// HasTraces reports whether the project has received a trace.
func HasTraces(ctx context.Context, traces Traces, projectID string) (bool, error) {
	list, _, err := traces.ListTraces(ctx, chstore.TraceFilter{ProjectID: projectID, Limit: 1})
	return len(list) > 0, err
}

func (h *handlers) home(r *web.Request) error {
	has, err := HasTraces(r.Context(), h.traces, r.Project.ID)
	if err != nil {
		return err
	}
	if has {
		return h.dashboard(r)
	}
	return h.onboarding(r, "")
}

// Onboarding is what the empty project shows: where to send traces and
// with which key.
type Onboarding struct {
	BaseURL   string
	PublicKey string
	// SecretKey is known only right after a key was created here.
	SecretKey string
	// Auth is the OTLP Authorization header value, URL-encoded as
	// OTEL_EXPORTER_OTLP_HEADERS wants it, when the secret is known.
	Auth string
	// Next is where the page goes when the first trace arrives.
	Next string
}

func (h *handlers) onboarding(r *web.Request, secret string, created ...controlplane.APIKey) error {
	d := Onboarding{BaseURL: r.App().Config().PublicURL, Next: r.Path("project", r.Project.ID, "traces")}
	if d.BaseURL == "" {
		d.BaseURL = "http://" + r.Host
	}
	switch {
	case len(created) > 0:
		d.PublicKey, d.SecretKey = created[0].PublicKey, secret
		d.Auth = "Basic%20" + base64.StdEncoding.EncodeToString([]byte(d.PublicKey+":"+secret))
	case r.Can(access.APIKeysManage):
		keys, err := h.store.ListAPIKeys(r.Context(), r.Org.ID, r.Project.ID)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			d.PublicKey = keys[len(keys)-1].PublicKey
		}
	}
	return r.Render(h.t, "onboarding", d)
}

// status is polled by the onboarding page: it sends the browser to the
// traces table as soon as the first trace is stored.
func (h *handlers) status(r *web.Request) error {
	has, err := HasTraces(r.Context(), h.traces, r.Project.ID)
	if err != nil {
		return err
	}
	if has {
		return r.Redirect(r.Path("project", r.Project.ID, "traces"))
	}
	r.Writer().WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handlers) createKey(r *web.Request) error {
	k, secret, err := h.store.CreateAPIKey(r.Context(), r.Org.ID, r.Project.ID, controlplane.NewAPIKey{Note: "created on the onboarding page"})
	if err != nil {
		return err
	}
	return h.onboarding(r, secret, k)
}
