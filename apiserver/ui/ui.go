// Package ui is Glassbox's web UI, served by the API server on the same
// base URL at Langfuse's page paths (/project/{projectId}/traces/...), so
// the htmlPath of every trace opens its page. It composes the page
// packages on the foundation in ui/web; see docs/ui.md for the layout.
package ui // import "github.com/glassbox-dev/glassbox/apiserver/ui"

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/evalworker"
	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/apiserver/ui/account"
	uialerts "github.com/glassbox-dev/glassbox/apiserver/ui/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/ui/annotation"
	"github.com/glassbox-dev/glassbox/apiserver/ui/comments"
	"github.com/glassbox-dev/glassbox/apiserver/ui/dashboards"
	"github.com/glassbox-dev/glassbox/apiserver/ui/datasets"
	"github.com/glassbox-dev/glassbox/apiserver/ui/evals"
	"github.com/glassbox-dev/glassbox/apiserver/ui/home"
	"github.com/glassbox-dev/glassbox/apiserver/ui/playground"
	"github.com/glassbox-dev/glassbox/apiserver/ui/prompts"
	"github.com/glassbox-dev/glassbox/apiserver/ui/scorelist"
	"github.com/glassbox-dev/glassbox/apiserver/ui/sessions"
	"github.com/glassbox-dev/glassbox/apiserver/ui/settings"
	"github.com/glassbox-dev/glassbox/apiserver/ui/tracing"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Config configures the web UI.
type Config struct {
	// Enabled serves the UI beside the API; off, only the API answers.
	Enabled bool `mapstructure:"enabled"`
	// SignUp lets anyone create an account. Off (the default), people get
	// in as the initial user (GLASSBOX_INIT_USER_*), by invitation, or
	// through SSO with an email an admin invited.
	SignUp bool `mapstructure:"sign_up"`
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration `mapstructure:"session_ttl"`
	// SecureCookies marks cookies Secure even when the server cannot tell
	// that the browser uses HTTPS; it is on when public_url is https.
	SecureCookies bool `mapstructure:"secure_cookies"`
	// OIDC configures single sign-on through an OpenID Connect provider.
	OIDC account.SSOConfig `mapstructure:"oidc"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// DefaultSessionTTL is a week.
const DefaultSessionTTL = 7 * 24 * time.Hour

// NewDefaultConfig serves the UI with sign-up off.
func NewDefaultConfig() Config {
	return Config{Enabled: true, SessionTTL: DefaultSessionTTL}
}

// Validate reports every problem with the configuration; publicURL is the
// server's public_url, which SSO needs for its callback address.
func (c *Config) Validate(publicURL string) error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if c.SessionTTL <= 0 {
		errs = append(errs, errors.New("ui.session_ttl must be positive"))
	}
	if err := c.OIDC.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("ui.%w", err))
	}
	if c.OIDC.Enabled() && publicURL == "" {
		errs = append(errs, errors.New("ui.oidc needs public_url: the provider redirects back to it"))
	}
	return errors.Join(errs...)
}

// Stores are what the UI reads and writes.
type Stores struct {
	ControlPlane *controlplane.Store
	ClickHouse   *chstore.Store
	// Media signs download URLs of the media attachments the SDKs upload.
	Media *media.Service
	// Secrets seals LLM connection keys; nil when the server has no
	// encryption key, and then keys cannot be saved.
	Secrets *secretbox.Box
	// LLMHosts is the operator's policy of hosts LLM calls may reach.
	LLMHosts egress.Policy
	// Webhooks is the operator's policy of hosts webhooks (automations and
	// alert notifications) may reach.
	Webhooks egress.Policy
}

// Secret names of the keys the UI keeps in the control plane store, shared
// by every replica.
const (
	csrfSecret = "ui-csrf"
	ssoSecret  = "ui-sso"
)

// New builds the UI. publicURL is the server's public_url: its path is the
// base path pages are served under.
func New(ctx context.Context, cfg Config, publicURL string, st Stores, logger *zap.Logger) (*web.App, error) {
	if err := cfg.Validate(publicURL); err != nil {
		return nil, err
	}
	base, secure := "", cfg.SecureCookies
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil {
			return nil, fmt.Errorf("ui: public_url: %w", err)
		}
		base = strings.TrimRight(u.EscapedPath(), "/")
		secure = secure || u.Scheme == "https"
	}
	cp := st.ControlPlane
	csrfKey, err := cp.Secret(ctx, csrfSecret)
	if err != nil {
		return nil, err
	}
	app, err := web.New(web.Config{BasePath: base, PublicURL: strings.TrimRight(publicURL, "/"), SecureCookies: secure, SessionTTL: cfg.SessionTTL},
		cp, csrfKey, logger)
	if err != nil {
		return nil, err
	}
	acc := account.Config{SignUp: cfg.SignUp}
	if cfg.OIDC.Enabled() {
		key, err := cp.Secret(ctx, ssoSecret)
		if err != nil {
			return nil, err
		}
		if acc.SSO, err = account.NewSSO(cfg.OIDC, strings.TrimRight(publicURL, "/")+"/auth/sso/callback", key); err != nil {
			return nil, err
		}
	}
	builtin, err := pricing.Builtin()
	if err != nil {
		return nil, err
	}
	// LLM calls from the UI (tests, previews, the playground) reach only the
	// hosts the operator's policy allows.
	llmClient := &llm.Client{HTTP: st.LLMHosts.Client()}
	dashboard, err := dashboards.Routes(app, cp, st.ClickHouse)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(
		account.Routes(app, cp, acc),
		settings.Routes(app, cp, st.ClickHouse, builtin.Models(), settings.LLM{Box: st.Secrets, Hosts: st.LLMHosts, Client: llmClient},
			settings.Automations{Box: st.Secrets, Hosts: st.Webhooks}),
		tracing.Routes(app, st.ClickHouse, cp, st.Media),
		sessions.Routes(app, st.ClickHouse, cp),
		comments.Routes(app, cp),
		home.Routes(app, cp, st.ClickHouse, dashboard),
		prompts.Routes(app, cp, st.ClickHouse),
		playground.Routes(app, cp, st.ClickHouse, playground.LLM{Box: st.Secrets, Client: llmClient}),
		annotation.Routes(app, cp, st.ClickHouse),
		datasets.Routes(app, cp, st.ClickHouse),
		scorelist.Routes(app, st.ClickHouse, cp),
		evals.Routes(app, cp, st.ClickHouse, evalworker.NewPreviewer(cp, st.ClickHouse, st.Secrets, st.LLMHosts)),
		uialerts.Routes(app, alerts.Service{Store: cp, Metrics: st.ClickHouse, Webhooks: st.Webhooks, Now: time.Now}),
	); err != nil {
		return nil, err
	}
	return app, nil
}
