package apikeyauthextension // import "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/refresh"
)

// Attribute names under which client.Info.Auth exposes the verified key.
const (
	AttributeProjectID      = "project_id"
	AttributePublicKey      = "public_key"
	AttributeOrganizationID = "organization_id"
	AttributeScope          = "scope"
)

// Failure reasons recorded on the failure counter.
const (
	reasonMissing     = "missing"
	reasonInvalid     = "invalid"
	reasonScope       = "scope"
	reasonUnavailable = "unavailable"
)

var (
	_ extension.Extension             = (*authenticator)(nil)
	_ extensionauth.Server            = (*authenticator)(nil)
	_ extensioncapabilities.Dependent = (*authenticator)(nil)
	_ apikey.Verifier                 = (*authenticator)(nil)
	_ client.AuthData                 = authData{}
)

// keyring is what Start prepares: the static keys by public key and the
// optional key store.
type keyring struct {
	static map[string]staticKey
	store  apikey.Verifier
	// forget clears the cached verdicts when the store's keys change.
	forget *refresh.Loop
}

type staticKey struct {
	secretHash string
	principal  apikey.Principal
}

type authenticator struct {
	cfg      *Config
	failures metric.Int64Counter
	// match compares a presented secret with a stored hash; it is
	// apikey.SecretMatches (constant time) and a field only so tests can
	// observe that every static comparison goes through it.
	match  func(secret, storedHash string) bool
	now    func() time.Time
	cache  *verdictCache
	keys   atomic.Pointer[keyring]
	logger *zap.Logger
}

func newAuthenticator(cfg *Config, set extension.Settings) (*authenticator, error) {
	failures, err := failuresMetric.Int64Counter(set.MeterProvider.Meter(scopeName))
	if err != nil {
		return nil, err
	}
	a := &authenticator{
		cfg:      cfg,
		failures: failures,
		match:    apikey.SecretMatches,
		now:      time.Now,
		logger:   set.Logger,
	}
	a.cache = newVerdictCache(cfg.MaxCacheEntries, func() time.Time { return a.now() })
	return a, nil
}

// Start hashes the static keys and resolves the key store.
func (a *authenticator) Start(_ context.Context, host component.Host) error {
	kr := &keyring{static: make(map[string]staticKey, len(a.cfg.Keys))}
	for _, k := range a.cfg.Keys {
		hash := strings.ToLower(k.SecretSHA256)
		if k.Secret != "" {
			hash = apikey.HashSecret(string(k.Secret))
		}
		kr.static[k.PublicKey] = staticKey{
			secretHash: hash,
			principal: apikey.Principal{
				PublicKey:      k.PublicKey,
				ProjectID:      k.ProjectID,
				OrganizationID: k.OrganizationID,
				Scope:          apikey.ScopeProject,
			},
		}
	}
	if id := a.cfg.Verifier; id != nil {
		ext, ok := host.GetExtensions()[*id]
		if !ok {
			return fmt.Errorf("verifier extension %q is not configured", id)
		}
		store, ok := ext.(apikey.Verifier)
		if !ok || ext == a {
			return fmt.Errorf("extension %q cannot verify API keys", id)
		}
		kr.store = store
		// A key created or revoked through the store ends the cached
		// verdicts: at once in this process, within the change poll
		// elsewhere, rather than after cache_ttl.
		if watch := refresh.WatchOf(ext, refresh.KindAPIKeys); watch != nil {
			kr.forget = refresh.Start(time.Hour, 10*time.Second, func(context.Context) error {
				a.cache.clear()
				return nil
			}, a.logger, watch)
		}
	}
	a.keys.Store(kr)
	return nil
}

// Shutdown forgets the keys; it is safe without Start and when repeated.
func (a *authenticator) Shutdown(context.Context) error {
	if kr := a.keys.Swap(nil); kr != nil {
		kr.forget.Stop()
	}
	return nil
}

// Dependencies makes the collector start the key store first.
func (a *authenticator) Dependencies() []component.ID {
	if a.cfg.Verifier == nil {
		return nil
	}
	return []component.ID{*a.cfg.Verifier}
}

// Authenticate implements extensionauth.Server for stock receivers: it
// accepts project keys only (apikey.RequireProject) and exposes the key in
// client.Info.Auth. A refusal is an *apierr.Error: its text, which the
// client sees, is the ingest receiver's and the API's for the same case,
// and the key store's own error stays inside.
func (a *authenticator) Authenticate(ctx context.Context, headers map[string][]string) (context.Context, error) {
	publicKey, secretKey, err := apikey.ParseBasic(authorizationHeader(headers))
	if err != nil {
		reason := reasonInvalid
		switch {
		case errors.Is(err, apikey.ErrMissingCredentials):
			reason = reasonMissing
		case errors.Is(err, apikey.ErrSecretRequired):
			reason = reasonScope
		}
		a.recordFailure(ctx, reason)
		return ctx, apierr.Auth(err)
	}
	p, err := a.Verify(ctx, publicKey, secretKey)
	if err != nil {
		return ctx, apierr.Auth(err)
	}
	if err := apikey.RequireProject(p); err != nil {
		reason := reasonInvalid
		if errors.Is(err, apikey.ErrNotProjectKey) {
			reason = reasonScope
		}
		a.recordFailure(ctx, reason)
		return ctx, apierr.Auth(err)
	}
	info := client.FromContext(ctx)
	info.Auth = authData{p}
	return client.NewContext(ctx, info), nil
}

// authorizationHeader finds the header whatever its case: HTTP canonicalises
// it, gRPC metadata lower-cases it.
func authorizationHeader(headers map[string][]string) string {
	for name, values := range headers {
		if len(values) > 0 && strings.EqualFold(name, "authorization") {
			return values[0]
		}
	}
	return ""
}

// Verify implements apikey.Verifier: static keys first, then the key store,
// with verdicts cached by public key and secret hash.
func (a *authenticator) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	kr := a.keys.Load()
	if kr == nil {
		return apikey.Principal{}, errors.New("API-key authenticator is not running")
	}
	// A key revoked in this process fails its very next request.
	kr.forget.Current(ctx)
	key := cacheKey(publicKey, apikey.HashSecret(secretKey))
	generation := a.cache.current()
	if v, ok := a.cache.get(key); ok {
		if v.valid {
			return v.principal, nil
		}
		a.recordFailure(ctx, reasonInvalid)
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	p, err := a.verify(ctx, kr, publicKey, secretKey)
	switch {
	case err == nil:
		a.cache.put(key, verdict{principal: p, valid: true}, a.cfg.CacheTTL, generation)
	case errors.Is(err, apikey.ErrInvalidCredentials):
		a.cache.put(key, verdict{}, a.cfg.NegativeCacheTTL, generation)
		a.recordFailure(ctx, reasonInvalid)
	default:
		// A store outage is not remembered: the next request asks again.
		a.recordFailure(ctx, reasonUnavailable)
	}
	return p, err
}

// verify decides without the cache. A public key in the static list is
// decided there alone, so the store cannot grant a statically configured key
// to another project.
func (a *authenticator) verify(ctx context.Context, kr *keyring, publicKey, secretKey string) (apikey.Principal, error) {
	if k, ok := kr.static[publicKey]; ok {
		if a.match(secretKey, k.secretHash) {
			return k.principal, nil
		}
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	if kr.store == nil {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	p, err := kr.store.Verify(ctx, publicKey, secretKey)
	if err != nil {
		if errors.Is(err, apikey.ErrInvalidCredentials) {
			return apikey.Principal{}, err
		}
		return apikey.Principal{}, fmt.Errorf("key store %q: %w", a.cfg.Verifier, err)
	}
	// A key that apikey.RequireProject calls invalid (a project key naming
	// no project) is refused, and cached so, here already; organization
	// keys verify, and are refused where a project's data is reached.
	if err := apikey.RequireProject(p); errors.Is(err, apikey.ErrInvalidCredentials) {
		return apikey.Principal{}, fmt.Errorf("key store %q: %w", a.cfg.Verifier, err)
	}
	return p, nil
}

func (a *authenticator) recordFailure(ctx context.Context, reason string) {
	a.failures.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
}

// authData exposes a verified key to the pipeline through client.Info.Auth.
type authData struct {
	p apikey.Principal
}

func (d authData) GetAttribute(name string) any {
	switch name {
	case AttributeProjectID:
		return d.p.ProjectID
	case AttributePublicKey:
		return d.p.PublicKey
	case AttributeOrganizationID:
		return d.p.OrganizationID
	case AttributeScope:
		return string(d.p.Scope)
	}
	return nil
}

func (authData) GetAttributeNames() []string {
	return []string{AttributeProjectID, AttributePublicKey, AttributeOrganizationID, AttributeScope}
}
