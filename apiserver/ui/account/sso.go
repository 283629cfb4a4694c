package account

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// SSOConfig names an OpenID Connect provider people sign in through.
type SSOConfig struct {
	// Name labels the button ("Sign in with <Name>").
	Name string `mapstructure:"name"`
	// Issuer is the provider's issuer URL; its discovery document is read
	// from <issuer>/.well-known/openid-configuration.
	Issuer       string `mapstructure:"issuer"`
	ClientID     string `mapstructure:"client_id"`
	ClientSecret string `mapstructure:"client_secret"`
	// AllowedDomains, when set, admits only emails of these domains.
	AllowedDomains []string `mapstructure:"allowed_domains"`
	// Scopes are requested besides openid; email and profile by default.
	Scopes []string `mapstructure:"scopes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Enabled reports whether a provider is configured.
func (c SSOConfig) Enabled() bool { return c.Issuer != "" }

// Validate reports what is missing from a configured provider.
func (c SSOConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("oidc.issuer %q must be an http(s) URL", c.Issuer))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("oidc.client_id is required with oidc.issuer"))
	}
	if c.ClientSecret == "" {
		errs = append(errs, errors.New("oidc.client_secret is required with oidc.issuer"))
	}
	for _, d := range c.AllowedDomains {
		if d == "" || strings.ContainsAny(d, "@/ ") {
			errs = append(errs, fmt.Errorf("oidc.allowed_domains: %q is not a domain", d))
		}
	}
	return errors.Join(errs...)
}

// SSO signs people in through an OpenID provider with the authorization
// code flow (PKCE, state and nonce). The ID token's signature is checked
// against the provider's published keys, and accounts are matched by
// verified email.
type SSO struct {
	cfg      SSOConfig
	callback string
	key      []byte
	client   *http.Client

	mu       sync.Mutex
	provider *oidc.Provider // discovered on first use, so a provider outage does not stop the server
}

const (
	ssoCookie   = "glassbox_sso"
	ssoLifetime = 10 * time.Minute
)

// NewSSO configures the flow; callbackURL is the absolute URL of
// /auth/sso/callback as the provider redirects to it, and key signs the
// flow's state.
func NewSSO(cfg SSOConfig, callbackURL string, key []byte) (*SSO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, errors.New("sso: key must have at least 32 bytes")
	}
	return &SSO{cfg: cfg, callback: callbackURL, key: key, client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Name is the label of the provider.
func (s *SSO) Name() string {
	if s.cfg.Name != "" {
		return s.cfg.Name
	}
	return "SSO"
}

func (s *SSO) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, s.client)
}

func (s *SSO) discover(ctx context.Context) (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	// The provider keeps this context for fetching its keys later.
	p, err := oidc.NewProvider(oidc.ClientContext(context.Background(), s.client), s.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OpenID provider %s: %w", s.cfg.Issuer, err)
	}
	s.provider = p
	return p, nil
}

func (s *SSO) oauth(p *oidc.Provider) *oauth2.Config {
	scopes := s.cfg.Scopes
	if len(scopes) == 0 {
		scopes = []string{"email", "profile"}
	}
	return &oauth2.Config{
		ClientID:     s.cfg.ClientID,
		ClientSecret: s.cfg.ClientSecret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  s.callback,
		Scopes:       append([]string{oidc.ScopeOpenID}, scopes...),
	}
}

// derive turns the flow's random state into its nonce and PKCE verifier,
// so the cookie carries one secret only.
func (s *SSO) derive(purpose, state string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose + "\x00" + state))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (h *handlers) ssoStart(r *web.Request) error {
	s := h.cfg.SSO
	p, err := s.discover(r.Context())
	if err != nil {
		r.App().Logger().Warn(err.Error())
		return &web.Error{Status: http.StatusBadGateway, Message: "The sign-in provider cannot be reached. Try again, or sign in with a password."}
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	state := base64.RawURLEncoding.EncodeToString(buf)
	r.SetCookie(ssoCookie, state+"|"+next(r), ssoLifetime)
	url := s.oauth(p).AuthCodeURL(state, oidc.Nonce(s.derive("nonce", state)),
		oauth2.S256ChallengeOption(s.derive("pkce", state)))
	http.Redirect(r.Writer(), r.Request, url, http.StatusFound)
	return nil
}

// ssoClaims are the ID token (or userinfo) claims Glassbox uses.
type ssoClaims struct {
	Subject       string `json:"sub"`
	Email         string `json:"email"`
	EmailVerified *bool  `json:"email_verified"`
	Name          string `json:"name"`
	Nonce         string `json:"nonce"`
}

func (h *handlers) ssoCallback(r *web.Request) error {
	s := h.cfg.SSO
	fail := func(msg string) error {
		r.ClearCookie(ssoCookie)
		return r.Redirect(r.Path("auth", "sign-in") + "?error=" + url.QueryEscape(msg))
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return fail("Sign-in with " + s.Name() + " was not completed (" + e + ").")
	}
	ck, err := r.Cookie(ssoCookie)
	if err != nil {
		return fail("The sign-in took too long or started in another browser. Try again.")
	}
	state, nextPath, _ := strings.Cut(ck.Value, "|")
	if state == "" || !hmac.Equal([]byte(state), []byte(q.Get("state"))) {
		return fail("The sign-in response does not belong to this browser. Try again.")
	}
	p, err := s.discover(r.Context())
	if err != nil {
		return fail("The sign-in provider cannot be reached.")
	}
	ctx := s.ctx(r.Context())
	oc := s.oauth(p)
	tok, err := oc.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(s.derive("pkce", state)))
	if err != nil {
		r.App().Logger().Warn("OpenID code exchange failed: " + err.Error())
		return fail("The sign-in provider refused the sign-in.")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return fail("The sign-in provider sent no ID token.")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: s.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		r.App().Logger().Warn("OpenID ID token rejected: " + err.Error())
		return fail("The sign-in provider's answer could not be verified.")
	}
	var c ssoClaims
	if err := idt.Claims(&c); err != nil {
		return fail("The sign-in provider's answer could not be read.")
	}
	if !hmac.Equal([]byte(c.Nonce), []byte(s.derive("nonce", state))) {
		return fail("The sign-in response was replayed. Try again.")
	}
	if c.Email == "" || c.EmailVerified == nil {
		// Many providers put the email only into userinfo.
		info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err == nil && info.Subject == idt.Subject {
			var ic ssoClaims
			if info.Claims(&ic) == nil {
				c.Email, c.EmailVerified = ic.Email, ic.EmailVerified
				if c.Name == "" {
					c.Name = ic.Name
				}
			}
		}
	}
	email := strings.ToLower(strings.TrimSpace(c.Email))
	if email == "" || c.EmailVerified == nil || !*c.EmailVerified {
		return fail("Your " + s.Name() + " account has no verified email address.")
	}
	if d := s.cfg.AllowedDomains; len(d) > 0 {
		_, domain, _ := strings.Cut(email, "@")
		if !slices.ContainsFunc(d, func(x string) bool { return strings.EqualFold(x, domain) }) {
			return fail("Sign-in with " + email + " is not allowed here.")
		}
	}
	user, err := h.store.GetUserByEmail(r.Context(), email)
	if errors.Is(err, controlplane.ErrNotFound) {
		if !h.cfg.SignUp {
			return fail("There is no account for " + email + ". Ask an admin of your organization to invite you.")
		}
		user, err = h.store.CreateUser(r.Context(), controlplane.NewUser{Email: email, Name: c.Name})
	}
	if err != nil {
		return err
	}
	r.ClearCookie(ssoCookie)
	if err := r.SignIn(user); err != nil {
		return err
	}
	if nextPath != "" {
		return r.Redirect(nextPath)
	}
	return h.afterSignIn(r)
}
