// Package account serves the pages where people become users of Glassbox:
// sign-in by password or OpenID Connect, sign-up (when allowed), accepting
// an invitation, sign-out, and creating a first organization and project.
package account // import "github.com/glassbox-dev/glassbox/apiserver/ui/account"

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store is what these pages read and write.
type Store interface {
	CheckPassword(ctx context.Context, email, password string) (controlplane.User, error)
	CreateUser(ctx context.Context, u controlplane.NewUser) (controlplane.User, error)
	GetUserByEmail(ctx context.Context, email string) (controlplane.User, error)
	InviteLinkUser(ctx context.Context, token string) (controlplane.User, error)
	UseInviteLink(ctx context.Context, token, name, password string) (controlplane.User, error)
	ListUserMemberships(ctx context.Context, userID string) ([]controlplane.Membership, error)
	ListProjects(ctx context.Context, orgID string) ([]controlplane.Project, error)
	CreateOrganizationWithOwner(ctx context.Context, name, ownerID string) (controlplane.Organization, error)
	CreateProject(ctx context.Context, orgID string, p controlplane.NewProject) (controlplane.Project, error)
}

// Config says who may become a user.
type Config struct {
	// SignUp lets anyone create an account with the sign-up form (and SSO
	// users without an account get one). Off, only invited people and the
	// initial user get in.
	SignUp bool
	// SSO is nil when no OpenID provider is configured.
	SSO *SSO
}

// Sign-in attempts allowed per email and per client address.
const (
	attemptsPerEmail   = 10
	attemptsPerAddress = 50
	attemptWindow      = 15 * time.Minute
)

type handlers struct {
	cfg     Config
	store   Store
	t       *web.Templates
	byEmail *web.Limiter
	byAddr  *web.Limiter
}

// Routes registers the account pages.
func Routes(app *web.App, store Store, cfg Config) error {
	t, err := app.Parse(pages, "signin.html", "signup.html", "invite.html", "setup.html")
	if err != nil {
		return err
	}
	h := &handlers{cfg: cfg, store: store, t: t,
		byEmail: web.NewLimiter(attemptsPerEmail, attemptWindow),
		byAddr:  web.NewLimiter(attemptsPerAddress, attemptWindow)}
	routes := []web.Route{
		{Method: http.MethodGet, Path: "/{$}", Access: web.Public, Handler: h.home},
		{Method: http.MethodGet, Path: "/auth/sign-in", Access: web.Public, Handler: h.signInPage},
		{Method: http.MethodPost, Path: "/auth/sign-in", Access: web.Public, Handler: h.signIn},
		{Method: http.MethodGet, Path: "/auth/sign-up", Access: web.Public, Handler: h.signUpPage},
		{Method: http.MethodPost, Path: "/auth/sign-up", Access: web.Public, Handler: h.signUp},
		{Method: http.MethodPost, Path: "/auth/sign-out", Access: web.Public, Handler: h.signOut},
		{Method: http.MethodGet, Path: "/auth/invite/{token}", Access: web.Public, Handler: h.invitePage},
		{Method: http.MethodPost, Path: "/auth/invite/{token}", Access: web.Public, Handler: h.acceptInvite},
		{Method: http.MethodGet, Path: "/setup", Access: web.SignedIn, Handler: h.setupPage},
		{Method: http.MethodPost, Path: "/setup", Access: web.SignedIn, Handler: h.setup},
	}
	if cfg.SSO != nil {
		routes = append(routes,
			web.Route{Method: http.MethodGet, Path: "/auth/sso", Access: web.Public, Handler: h.ssoStart},
			web.Route{Method: http.MethodGet, Path: "/auth/sso/callback", Access: web.Public, Handler: h.ssoCallback},
		)
	}
	return app.Handle(routes...)
}

// home sends a signed-in person to their first project, or to the setup
// page when they have none; everyone else to the sign-in page.
func (h *handlers) home(r *web.Request) error {
	if r.User == nil {
		return r.Redirect(r.Path("auth", "sign-in"))
	}
	target, err := h.landing(r.Context(), r.App(), r.User.ID)
	if err != nil {
		return err
	}
	return r.Redirect(target)
}

func (h *handlers) landing(ctx context.Context, app *web.App, userID string) (string, error) {
	ms, err := h.store.ListUserMemberships(ctx, userID)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		ps, err := h.store.ListProjects(ctx, m.OrganizationID)
		if err != nil {
			return "", err
		}
		for _, p := range ps {
			if access.Allows(m.RoleIn(p.ID), access.ProjectRead) {
				return app.Path("project", p.ID), nil
			}
		}
	}
	if len(ms) > 0 {
		return app.Path("organization", ms[0].OrganizationID), nil
	}
	return app.Path("setup"), nil
}

// next is where to go after signing in: a path of this UI from the next
// parameter, never another site.
func next(r *web.Request) string {
	n := r.FormValue("next")
	base := r.App().Config().BasePath
	if n == "" || !strings.HasPrefix(n, base+"/") || strings.HasPrefix(n, "//") || strings.Contains(n, "\\") ||
		strings.HasPrefix(n, base+"/auth/") {
		return ""
	}
	return n
}

type signInData struct {
	Email, Next, Error string
	SignUp             bool
	SSO                string // the provider's name, when SSO is on
}

func (h *handlers) signInData(r *web.Request) signInData {
	d := signInData{Next: next(r), SignUp: h.cfg.SignUp}
	if h.cfg.SSO != nil {
		d.SSO = h.cfg.SSO.Name()
	}
	return d
}

func (h *handlers) signInPage(r *web.Request) error {
	if r.User != nil {
		return h.afterSignIn(r)
	}
	d := h.signInData(r)
	d.Error = r.URL.Query().Get("error")
	return r.Render(h.t, "signin", d)
}

func (h *handlers) signIn(r *web.Request) error {
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	d := h.signInData(r)
	d.Email = email
	if ok, wait := h.byAddr.Allow(r.ClientIP()); !ok {
		return h.tooMany(r, d, wait)
	}
	if ok, wait := h.byEmail.Allow(email); !ok {
		return h.tooMany(r, d, wait)
	}
	user, err := h.store.CheckPassword(r.Context(), email, r.PostFormValue("password"))
	if errors.Is(err, controlplane.ErrInvalidLogin) {
		d.Error = "Wrong email or password."
		return r.RenderStatus(http.StatusUnauthorized, h.t, "signin", d)
	}
	if err != nil {
		return err
	}
	h.byEmail.Reset(email)
	if err := r.SignIn(user); err != nil {
		return err
	}
	return h.afterSignIn(r)
}

func (h *handlers) tooMany(r *web.Request, d signInData, wait time.Duration) error {
	d.Error = fmt.Sprintf("Too many sign-in attempts. Try again in %d minutes.", int(wait.Minutes())+1)
	r.Writer().Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
	return r.RenderStatus(http.StatusTooManyRequests, h.t, "signin", d)
}

func (h *handlers) afterSignIn(r *web.Request) error {
	if n := next(r); n != "" {
		return r.Redirect(n)
	}
	target, err := h.landing(r.Context(), r.App(), r.User.ID)
	if err != nil {
		return err
	}
	return r.Redirect(target)
}

func (h *handlers) signOut(r *web.Request) error {
	if err := r.SignOut(); err != nil {
		return err
	}
	return r.Redirect(r.Path("auth", "sign-in"))
}

type signUpData struct {
	Name, Email, Error string
}

func (h *handlers) signUpPage(r *web.Request) error {
	if !h.cfg.SignUp {
		return web.ErrNotFound
	}
	return r.Render(h.t, "signup", signUpData{})
}

func (h *handlers) signUp(r *web.Request) error {
	if !h.cfg.SignUp {
		return web.ErrNotFound
	}
	d := signUpData{Name: strings.TrimSpace(r.PostFormValue("name")), Email: strings.TrimSpace(r.PostFormValue("email"))}
	if ok, wait := h.byAddr.Allow(r.ClientIP()); !ok {
		d.Error = fmt.Sprintf("Too many attempts. Try again in %d minutes.", int(wait.Minutes())+1)
		return r.RenderStatus(http.StatusTooManyRequests, h.t, "signup", d)
	}
	user, err := h.store.CreateUser(r.Context(), controlplane.NewUser{Email: d.Email, Name: d.Name, Password: r.PostFormValue("password")})
	switch {
	case errors.Is(err, controlplane.ErrConflict):
		d.Error = "An account with this email exists. Sign in instead."
		return r.RenderStatus(http.StatusConflict, h.t, "signup", d)
	case errors.Is(err, controlplane.ErrInvalid):
		d.Error = userMessage(err)
		return r.RenderStatus(http.StatusBadRequest, h.t, "signup", d)
	case err != nil:
		return err
	}
	if err := r.SignIn(user); err != nil {
		return err
	}
	return r.Redirect(r.Path("setup"))
}

type inviteData struct {
	Email, Name, Error string
}

func (h *handlers) invitePage(r *web.Request) error {
	u, err := h.store.InviteLinkUser(r.Context(), r.PathValue("token"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return &web.Error{Status: http.StatusNotFound, Message: "This invitation link has expired or was used already. Ask for a new one."}
	}
	if err != nil {
		return err
	}
	return r.Render(h.t, "invite", inviteData{Email: u.Email, Name: u.Name})
}

func (h *handlers) acceptInvite(r *web.Request) error {
	token := r.PathValue("token")
	if ok, _ := h.byAddr.Allow(r.ClientIP()); !ok {
		return &web.Error{Status: http.StatusTooManyRequests, Message: "Too many attempts. Try again later."}
	}
	user, err := h.store.UseInviteLink(r.Context(), token, strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("password"))
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return &web.Error{Status: http.StatusNotFound, Message: "This invitation link has expired or was used already. Ask for a new one."}
	case errors.Is(err, controlplane.ErrInvalid):
		u, lerr := h.store.InviteLinkUser(r.Context(), token)
		if lerr != nil {
			return lerr
		}
		return r.RenderStatus(http.StatusBadRequest, h.t, "invite", inviteData{Email: u.Email, Name: r.PostFormValue("name"), Error: userMessage(err)})
	case err != nil:
		return err
	}
	if err := r.SignIn(user); err != nil {
		return err
	}
	return h.afterSignIn(r)
}

type setupData struct {
	Organization, Project, Error string
	HasOrgs                      bool
}

func (h *handlers) setupPage(r *web.Request) error {
	ms, err := h.store.ListUserMemberships(r.Context(), r.User.ID)
	if err != nil {
		return err
	}
	return r.Render(h.t, "setup", setupData{HasOrgs: len(ms) > 0})
}

// setup creates an organization owned by the user, with a first project.
func (h *handlers) setup(r *web.Request) error {
	d := setupData{Organization: strings.TrimSpace(r.PostFormValue("organization")), Project: strings.TrimSpace(r.PostFormValue("project"))}
	org, err := h.store.CreateOrganizationWithOwner(r.Context(), d.Organization, r.User.ID)
	if err == nil {
		var p controlplane.Project
		p, err = h.store.CreateProject(r.Context(), org.ID, controlplane.NewProject{Name: d.Project})
		if err == nil {
			return r.Redirect(r.Path("project", p.ID))
		}
		// The organization exists now; the project can be created there.
		if errors.Is(err, controlplane.ErrInvalid) {
			return r.Redirect(r.Path("organization", org.ID))
		}
	}
	if errors.Is(err, controlplane.ErrInvalid) {
		d.Error = userMessage(err)
		return r.RenderStatus(http.StatusBadRequest, h.t, "setup", d)
	}
	return err
}

// userMessage is the part of a store validation error meant for people.
func userMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, controlplane.ErrInvalid.Error()+": "); i >= 0 {
		msg = msg[i+len(controlplane.ErrInvalid.Error())+2:]
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg + "."
}
