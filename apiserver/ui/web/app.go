// Package web is the foundation every page of the UI stands on: one layout,
// one role check, one CSRF mechanism, the signed-in session, embedded
// assets and the helpers that render tables, filters and time ranges. Page
// packages (account, settings, tracing, ...) declare routes with the action
// each needs; this package enforces it before their handler runs, so no
// handler checks roles itself.
package web // import "github.com/glassbox-dev/glassbox/apiserver/ui/web"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Config configures the UI foundation.
type Config struct {
	// BasePath is the path prefix the UI (and the API beside it) is reached
	// under, e.g. "/glassbox"; empty at the root.
	BasePath string
	// PublicURL is the base URL people open, used in snippets and links
	// that leave the browser (SDK configuration, invite links).
	PublicURL string
	// SecureCookies marks cookies Secure. Requests that arrived over TLS (or
	// through a proxy that says so) get Secure cookies anyway.
	SecureCookies bool
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
}

// Store is what the foundation reads: users, sessions, memberships and
// projects. *controlplane.Store implements it.
type Store interface {
	SessionUser(ctx context.Context, token string) (controlplane.User, controlplane.Session, error)
	ListUserMemberships(ctx context.Context, userID string) ([]controlplane.Membership, error)
	GetMembership(ctx context.Context, orgID, userID string) (controlplane.Membership, error)
	LookupProject(ctx context.Context, projectID string) (controlplane.Project, error)
	ListProjects(ctx context.Context, orgID string) ([]controlplane.Project, error)
	GetOrganization(ctx context.Context, orgID string) (controlplane.Organization, error)
	CreateSession(ctx context.Context, userID string, ttl time.Duration) (string, controlplane.Session, error)
	DeleteSession(ctx context.Context, token string) error
}

// Access says who may reach a route.
type Access int

const (
	// Public routes need no sign-in: the sign-in pages and shared traces.
	Public Access = iota
	// SignedIn routes need a signed-in user and nothing more.
	SignedIn
	// InProject routes have a {projectId} in their path; the user's role in
	// that project must allow the route's Action.
	InProject
	// InOrganization routes have an {orgId} in their path; the user's role
	// in that organization must allow the route's Action.
	InOrganization
)

// Route is one page or form action of the UI.
type Route struct {
	Method string // GET or POST (forms), or DELETE/PUT/PATCH for htmx calls
	// Path is a net/http pattern path below the base path, e.g.
	// "/project/{projectId}/traces".
	Path    string
	Access  Access
	Action  access.Action // required for InProject and InOrganization
	Handler func(*Request) error
	// Shared, on a project route, serves people the role check turned away
	// (not signed in, or outside the organization) when the thing is shared
	// publicly, such as a trace marked public; it returns ErrNotFound
	// otherwise and the refusal stands. The request has its Project but no
	// role, so Can is false for every action.
	Shared func(*Request) error
}

// InProjectRoute is a route inside a project that needs action.
func InProjectRoute(method, path string, action access.Action, handler func(*Request) error) Route {
	return Route{Method: method, Path: path, Access: InProject, Action: action, Handler: handler}
}

// App serves the UI's routes, and hands every other path to the API.
type App struct {
	cfg    Config
	store  Store
	logger *zap.Logger
	csrf   *csrf
	assets *assets
	layout *Templates
	nav    []NavItem
	routes []Route
	mux    *http.ServeMux
}

// New builds the foundation. csrfKey signs CSRF tokens; every replica must
// use the same key.
func New(cfg Config, store Store, csrfKey []byte, logger *zap.Logger) (*App, error) {
	if len(csrfKey) < 32 {
		return nil, errors.New("ui: the CSRF key must have at least 32 bytes")
	}
	if cfg.SessionTTL <= 0 {
		return nil, errors.New("ui: session TTL must be positive")
	}
	if cfg.BasePath != "" && (!strings.HasPrefix(cfg.BasePath, "/") || strings.HasSuffix(cfg.BasePath, "/")) {
		return nil, fmt.Errorf("ui: base path %q must start with / and not end with one", cfg.BasePath)
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	a := &App{cfg: cfg, store: store, logger: logger, csrf: newCSRF(csrfKey), mux: http.NewServeMux()}
	var err error
	if a.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	a.assets.base = cfg.BasePath
	if a.layout, err = a.parseLayout(); err != nil {
		return nil, err
	}
	a.mux.HandleFunc("GET /static/{file}", a.assets.serve)
	return a, nil
}

// Config is the configuration the app was built with.
func (a *App) Config() Config { return a.cfg }

// Logger is the app's logger.
func (a *App) Logger() *zap.Logger { return a.logger }

// Handle registers routes. It fails on a route whose access rule cannot be
// enforced, so a page can never be added without its check.
func (a *App) Handle(routes ...Route) (err error) {
	defer func() {
		// ServeMux panics on conflicting patterns; report them as errors.
		if p := recover(); p != nil {
			err = fmt.Errorf("ui: register routes: %v", p)
		}
	}()
	for _, rt := range routes {
		if err := checkRoute(rt); err != nil {
			return err
		}
		a.mux.Handle(rt.Method+" "+rt.Path, a.serve(rt))
		a.routes = append(a.routes, rt)
	}
	return nil
}

// Routes lists the registered routes, for the tests that check every page
// and action against every role.
func (a *App) Routes() []Route { return slices.Clone(a.routes) }

func checkRoute(rt Route) error {
	switch {
	case rt.Handler == nil:
		return fmt.Errorf("ui: route %s %s has no handler", rt.Method, rt.Path)
	case rt.Access == InProject && (rt.Action == "" || !strings.Contains(rt.Path, "{projectId}")):
		return fmt.Errorf("ui: project route %s %s needs an action and {projectId} in its path", rt.Method, rt.Path)
	case rt.Access == InOrganization && (rt.Action == "" || !strings.Contains(rt.Path, "{orgId}")):
		return fmt.Errorf("ui: organization route %s %s needs an action and {orgId} in its path", rt.Method, rt.Path)
	case rt.Shared != nil && rt.Access != InProject:
		return fmt.Errorf("ui: route %s %s: only project routes can be shared", rt.Method, rt.Path)
	case (rt.Access == Public || rt.Access == SignedIn) && rt.Action != "":
		return fmt.Errorf("ui: route %s %s names an action its access rule does not check", rt.Method, rt.Path)
	}
	switch rt.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return fmt.Errorf("ui: route %s %s: unsupported method", rt.Method, rt.Path)
	}
	return nil
}

// Wrap serves the UI's routes and hands every other request to api. The
// base path is stripped first, so the API also answers below it.
func (a *App) Wrap(api http.Handler) http.Handler {
	a.mux.Handle("/", api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if base := a.cfg.BasePath; base != "" {
			switch {
			case r.URL.Path == base:
				http.Redirect(w, r, base+"/", http.StatusFound)
				return
			case strings.HasPrefix(r.URL.Path, base+"/"):
				r2 := new(http.Request)
				*r2 = *r
				u := *r.URL
				u.Path = strings.TrimPrefix(r.URL.Path, base)
				u.RawPath = ""
				r2.URL = &u
				r = r2
			}
		}
		a.mux.ServeHTTP(w, r)
	})
}

// serve runs one route: security headers, the session, CSRF for state
// changes, then the route's access rule, then the handler.
func (a *App) serve(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		setSecurityHeaders(w)
		r := &Request{Request: hr, w: w, app: a}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
					panic(p)
				}
				a.logger.Error("UI handler panicked", zap.String("path", hr.URL.Path), zap.Any("panic", p), zap.StackSkip("stack", 2))
				r.fail(errInternal)
			}
		}()
		if err := a.authenticate(r); err != nil {
			r.fail(err)
			return
		}
		if hr.Method != http.MethodGet && hr.Method != http.MethodHead {
			if err := a.csrf.check(r); err != nil {
				r.fail(err)
				return
			}
		}
		if err := a.authorize(r, rt); err != nil {
			if rt.Shared != nil && (err == errSignInNeeded || err == ErrNotFound) { //nolint:errorlint // the two sentinels authorize returns as they are
				err = a.shared(r, rt, err)
			}
			if err != nil {
				r.fail(err)
			}
			return
		}
		if err := rt.Handler(r); err != nil {
			r.fail(err)
		}
	})
}

// authenticate reads the session cookie. An unknown or expired cookie is
// dropped, and the request goes on as anonymous.
func (a *App) authenticate(r *Request) error {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	user, _, err := a.store.SessionUser(r.Context(), c.Value)
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		r.clearCookie(sessionCookie)
		return nil
	case err != nil:
		return fmt.Errorf("read session: %w", err)
	}
	r.User = &user
	r.sessionToken = c.Value
	return nil
}

// authorize is the one role check of the UI: the route's access rule,
// against the user's membership of the organization or project it names.
// People outside the organization get 404, so ids reveal nothing.
func (a *App) authorize(r *Request, rt Route) error {
	if rt.Access == Public {
		return nil
	}
	if r.User == nil {
		return errSignInNeeded
	}
	ctx := r.Context()
	var orgID string
	switch rt.Access {
	case SignedIn:
		return nil
	case InProject:
		p, err := a.store.LookupProject(ctx, r.PathValue("projectId"))
		if errors.Is(err, controlplane.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		r.Project = &p
		orgID = p.OrganizationID
	case InOrganization:
		orgID = r.PathValue("orgId")
	}
	m, err := a.store.GetMembership(ctx, orgID, r.User.ID)
	if errors.Is(err, controlplane.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	r.Membership = &m
	r.Org = &controlplane.Organization{ID: m.OrganizationID, Name: m.OrganizationName}
	r.Role = m.Role
	if r.Project != nil {
		r.Role = m.RoleIn(r.Project.ID)
	}
	if !access.Allows(r.Role, rt.Action) {
		return ErrForbidden
	}
	return nil
}

// shared serves a route's public view; refused is the error to answer
// with when the thing is not shared.
func (a *App) shared(r *Request, rt Route, refused error) error {
	if r.Project == nil {
		p, err := a.store.LookupProject(r.Context(), r.PathValue("projectId"))
		if errors.Is(err, controlplane.ErrNotFound) {
			return refused
		}
		if err != nil {
			return err
		}
		r.Project = &p
	}
	r.Org, r.Membership, r.Role = nil, nil, ""
	err := rt.Shared(r)
	if errors.Is(err, ErrNotFound) {
		return refused
	}
	return err
}

// setSecurityHeaders forbids inline scripts and styles, framing and
// third-party loads on every UI response.
func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "+
		"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
