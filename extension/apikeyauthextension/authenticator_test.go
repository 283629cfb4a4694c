package apikeyauthextension

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/apikey"
)

var storeID = component.MustNewID("keystore")

// fakeStore is a key store extension: pairs map "public:secret" to a principal.
type fakeStore struct {
	component.StartFunc
	component.ShutdownFunc

	mu    sync.Mutex
	pairs map[string]apikey.Principal
	err   error
	calls int
}

func (s *fakeStore) Verify(_ context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return apikey.Principal{}, s.err
	}
	p, ok := s.pairs[publicKey+":"+secretKey]
	if !ok {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	return p, nil
}

func (s *fakeStore) set(pair string, p *apikey.Principal, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.pairs, pair)
	} else {
		s.pairs[pair] = *p
	}
	s.err = err
}

func (s *fakeStore) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

type fakeHost struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h fakeHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func staticConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Keys = []KeyConfig{
		{PublicKey: "pk-hashed", SecretSHA256: apikey.HashSecret("sk-hashed"), ProjectID: "proj-hashed", OrganizationID: "org-1"},
		{PublicKey: "pk-plain", Secret: "sk-plain", ProjectID: "proj-plain"},
	}
	return cfg
}

func storeConfig() *Config {
	cfg := staticConfig()
	id := storeID
	cfg.Verifier = &id
	return cfg
}

// start builds and starts an authenticator with a fake clock; store may be nil.
func start(t *testing.T, cfg *Config, store component.Component, tt *componenttest.Telemetry) (*authenticator, *fakeClock) {
	t.Helper()
	set := extensiontest.NewNopSettings(Type)
	if tt != nil {
		set.TelemetrySettings = tt.NewTelemetrySettings()
	}
	a, err := newAuthenticator(cfg, set)
	require.NoError(t, err)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a.now = clock.now
	host := fakeHost{Host: componenttest.NewNopHost(), extensions: map[component.ID]component.Component{}}
	if store != nil {
		host.extensions[storeID] = store
	}
	require.NoError(t, a.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, a.Shutdown(context.Background())) })
	return a, clock
}

func basic(publicKey, secretKey string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey))
}

func TestLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, Type, f.Type())
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(Type), staticConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Shutdown(context.Background()), "shutdown before start")
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, ext.Shutdown(context.Background()))
	require.NoError(t, ext.Shutdown(context.Background()), "second shutdown")

	_, err = ext.(apikey.Verifier).Verify(context.Background(), "pk-plain", "sk-plain")
	require.Error(t, err, "a stopped authenticator verifies nothing")
	assert.NotErrorIs(t, err, apikey.ErrInvalidCredentials)
}

func TestStaticKeys(t *testing.T) {
	a, _ := start(t, staticConfig(), nil, nil)
	tests := []struct {
		name      string
		pk, sk    string
		projectID string
		err       error
	}{
		{name: "hashed", pk: "pk-hashed", sk: "sk-hashed", projectID: "proj-hashed"},
		{name: "plaintext", pk: "pk-plain", sk: "sk-plain", projectID: "proj-plain"},
		{name: "wrong secret", pk: "pk-plain", sk: "sk-hashed", err: apikey.ErrInvalidCredentials},
		{name: "unknown key", pk: "pk-nobody", sk: "sk-plain", err: apikey.ErrInvalidCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Verify(context.Background(), tt.pk, tt.sk)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.projectID, p.ProjectID)
			assert.Equal(t, tt.pk, p.PublicKey)
			assert.Equal(t, apikey.ScopeProject, p.Scope)
		})
	}
}

func TestPlaintextSecretNotKept(t *testing.T) {
	a, _ := start(t, staticConfig(), nil, nil)
	k := a.keys.Load().static["pk-plain"]
	assert.Equal(t, apikey.HashSecret("sk-plain"), k.secretHash)
}

func TestStaticComparisonIsConstantTime(t *testing.T) {
	cfg := staticConfig()
	cfg.CacheTTL, cfg.NegativeCacheTTL = 0, 0
	a, _ := start(t, cfg, nil, nil)
	var compared []string
	a.match = func(secret, storedHash string) bool {
		compared = append(compared, storedHash)
		return apikey.SecretMatches(secret, storedHash)
	}
	_, err := a.Verify(context.Background(), "pk-plain", "sk-plain")
	require.NoError(t, err)
	_, err = a.Verify(context.Background(), "pk-plain", "sk-wrong")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.Equal(t, []string{apikey.HashSecret("sk-plain"), apikey.HashSecret("sk-plain")}, compared)
}

func TestAuthenticate(t *testing.T) {
	org := apikey.Principal{PublicKey: "pk-org", OrganizationID: "org-9", Scope: apikey.ScopeOrganization}
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk-org:sk-org": org}}
	a, _ := start(t, storeConfig(), store, nil)

	for _, name := range []string{"Authorization", "authorization"} {
		ctx, err := a.Authenticate(context.Background(), map[string][]string{name: {basic("pk-hashed", "sk-hashed")}})
		require.NoError(t, err, name)
		auth := client.FromContext(ctx).Auth
		require.NotNil(t, auth)
		assert.Equal(t, "proj-hashed", auth.GetAttribute(AttributeProjectID))
		assert.Equal(t, "pk-hashed", auth.GetAttribute(AttributePublicKey))
		assert.Equal(t, "org-1", auth.GetAttribute(AttributeOrganizationID))
		assert.Equal(t, "project", auth.GetAttribute(AttributeScope))
		assert.Nil(t, auth.GetAttribute("raw"))
		assert.ElementsMatch(t, []string{"project_id", "public_key", "organization_id", "scope"}, auth.GetAttributeNames())
	}

	// Refusals read as the ingest receiver's and the API's (internal/apierr).
	_, err := a.Authenticate(context.Background(), map[string][]string{})
	require.ErrorIs(t, err, apikey.ErrMissingCredentials)
	assert.EqualError(t, err, apierr.MsgMissingAuth)
	_, err = a.Authenticate(context.Background(), map[string][]string{"Authorization": {"Bearer pk-hashed"}})
	require.ErrorIs(t, err, apikey.ErrSecretRequired)
	assert.EqualError(t, err, apierr.MsgScopeDenied)
	_, err = a.Authenticate(context.Background(), map[string][]string{"Authorization": {basic("pk-hashed", "nope")}})
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.EqualError(t, err, apierr.MsgInvalidCredentials)
	_, err = a.Authenticate(context.Background(), map[string][]string{"Authorization": {basic("pk-org", "sk-org")}})
	require.ErrorIs(t, err, apikey.ErrNotProjectKey)
	assert.EqualError(t, err, apierr.MsgNotProjectKey)

	// A project key that names no project is not valid: RequireProject
	// decides it, as everywhere else.
	store.set("pk-none:sk-none", &apikey.Principal{PublicKey: "pk-none", OrganizationID: "org-1", Scope: apikey.ScopeProject}, nil)
	_, err = a.Authenticate(context.Background(), map[string][]string{"Authorization": {basic("pk-none", "sk-none")}})
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.EqualError(t, err, apierr.MsgInvalidCredentials)

	store.set("", nil, errors.New("connection refused to db.internal:5432"))
	_, err = a.Authenticate(context.Background(), map[string][]string{"Authorization": {basic("pk-db", "sk-db")}})
	require.EqualError(t, err, apierr.MsgUnavailable, "store details are not sent to clients")
}

func TestStoreBackedVerification(t *testing.T) {
	p := apikey.Principal{PublicKey: "pk-db", ProjectID: "proj-db", OrganizationID: "org-db", Scope: apikey.ScopeProject}
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk-db:sk-db": p}}
	a, _ := start(t, storeConfig(), store, nil)

	got, err := a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err)
	assert.Equal(t, p, got)

	// Static keys are decided without the store, even on a wrong secret.
	_, err = a.Verify(context.Background(), "pk-plain", "sk-plain")
	require.NoError(t, err)
	_, err = a.Verify(context.Background(), "pk-plain", "sk-db")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.Equal(t, 1, store.callCount())

	_, err = a.Verify(context.Background(), "pk-db", "sk-wrong")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.Equal(t, 2, store.callCount())
}

func TestStoreWithoutProjectIsRefused(t *testing.T) {
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk:sk": {PublicKey: "pk", Scope: apikey.ScopeProject}}}
	a, _ := start(t, storeConfig(), store, nil)
	_, err := a.Verify(context.Background(), "pk", "sk")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
}

func TestCacheExpiry(t *testing.T) {
	p := apikey.Principal{PublicKey: "pk-db", ProjectID: "proj-db", Scope: apikey.ScopeProject}
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk-db:sk-db": p}}
	a, clock := start(t, storeConfig(), store, nil)

	for range 3 {
		_, err := a.Verify(context.Background(), "pk-db", "sk-db")
		require.NoError(t, err)
	}
	assert.Equal(t, 1, store.callCount(), "verdict is cached")

	clock.advance(defaultCacheTTL - time.Millisecond)
	_, err := a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err)
	assert.Equal(t, 1, store.callCount(), "still cached just before the TTL")

	clock.advance(time.Millisecond)
	_, err = a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err)
	assert.Equal(t, 2, store.callCount(), "asked again once the TTL passed")

	// The cache is keyed by the secret too: another secret is not a hit.
	_, err = a.Verify(context.Background(), "pk-db", "sk-other")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	assert.Equal(t, 3, store.callCount())
}

func TestRevokedKeyStopsAfterTTL(t *testing.T) {
	p := apikey.Principal{PublicKey: "pk-db", ProjectID: "proj-db", Scope: apikey.ScopeProject}
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk-db:sk-db": p}}
	a, clock := start(t, storeConfig(), store, nil)

	_, err := a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err)
	store.set("pk-db:sk-db", nil, nil) // revoked

	clock.advance(defaultCacheTTL / 2)
	_, err = a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err, "a revoked key works until its cached verdict expires")

	clock.advance(defaultCacheTTL / 2)
	_, err = a.Verify(context.Background(), "pk-db", "sk-db")
	require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
}

func TestNegativeCache(t *testing.T) {
	store := &fakeStore{pairs: map[string]apikey.Principal{}}
	a, clock := start(t, storeConfig(), store, nil)

	for range 5 {
		_, err := a.Verify(context.Background(), "pk-new", "sk-new")
		require.ErrorIs(t, err, apikey.ErrInvalidCredentials)
	}
	assert.Equal(t, 1, store.callCount(), "repeated bad pair asks the store once")

	// A key created in the store meanwhile is accepted once the refusal expires.
	store.set("pk-new:sk-new", &apikey.Principal{PublicKey: "pk-new", ProjectID: "p", Scope: apikey.ScopeProject}, nil)
	clock.advance(defaultNegativeCacheTTL)
	_, err := a.Verify(context.Background(), "pk-new", "sk-new")
	require.NoError(t, err)
	assert.Equal(t, 2, store.callCount())
}

func TestStoreOutageIsNotCached(t *testing.T) {
	outage := errors.New("database is down")
	store := &fakeStore{pairs: map[string]apikey.Principal{}, err: outage}
	a, _ := start(t, storeConfig(), store, nil)

	for range 2 {
		_, err := a.Verify(context.Background(), "pk-db", "sk-db")
		require.ErrorIs(t, err, outage)
		assert.NotErrorIs(t, err, apikey.ErrInvalidCredentials)
	}
	assert.Equal(t, 2, store.callCount())

	store.set("pk-db:sk-db", &apikey.Principal{PublicKey: "pk-db", ProjectID: "p", Scope: apikey.ScopeProject}, nil)
	_, err := a.Verify(context.Background(), "pk-db", "sk-db")
	require.NoError(t, err, "recovers as soon as the store does")
}

func TestStartResolvesStore(t *testing.T) {
	a, err := newAuthenticator(storeConfig(), extensiontest.NewNopSettings(Type))
	require.NoError(t, err)
	assert.Equal(t, []component.ID{storeID}, a.Dependencies())

	err = a.Start(context.Background(), fakeHost{extensions: map[component.ID]component.Component{}})
	require.ErrorContains(t, err, "is not configured")

	notAVerifier := struct {
		component.StartFunc
		component.ShutdownFunc
	}{}
	err = a.Start(context.Background(), fakeHost{extensions: map[component.ID]component.Component{storeID: notAVerifier}})
	require.ErrorContains(t, err, "cannot verify API keys")

	err = a.Start(context.Background(), fakeHost{extensions: map[component.ID]component.Component{storeID: a}})
	require.ErrorContains(t, err, "cannot verify API keys", "must not be its own store")

	static, err := newAuthenticator(staticConfig(), extensiontest.NewNopSettings(Type))
	require.NoError(t, err)
	assert.Empty(t, static.Dependencies())
}

func TestFailureMetric(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	org := apikey.Principal{PublicKey: "pk-org", OrganizationID: "o", Scope: apikey.ScopeOrganization}
	store := &fakeStore{pairs: map[string]apikey.Principal{"pk-org:sk-org": org}}
	a, _ := start(t, storeConfig(), store, tt)

	ctx := context.Background()
	_, _ = a.Authenticate(ctx, map[string][]string{})
	_, _ = a.Authenticate(ctx, map[string][]string{"Authorization": {"Bearer pk-plain"}})
	_, _ = a.Authenticate(ctx, map[string][]string{"Authorization": {basic("pk-plain", "bad")}})
	_, _ = a.Authenticate(ctx, map[string][]string{"Authorization": {basic("pk-plain", "bad")}}) // cached refusal counts too
	_, _ = a.Authenticate(ctx, map[string][]string{"Authorization": {basic("pk-org", "sk-org")}})
	store.set("", nil, errors.New("down"))
	_, _ = a.Authenticate(ctx, map[string][]string{"Authorization": {basic("pk-x", "sk-x")}})
	_, err := a.Authenticate(ctx, map[string][]string{"Authorization": {basic("pk-plain", "sk-plain")}})
	require.NoError(t, err)

	m, err := tt.GetMetric("otelcol_extension_glassbox_auth_failures")
	require.NoError(t, err)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		reason, _ := dp.Attributes.Value(attribute.Key("reason"))
		got[reason.AsString()] = dp.Value
	}
	assert.Equal(t, map[string]int64{"missing": 1, "invalid": 2, "scope": 2, "unavailable": 1}, got, "a public key alone is refused for its scope")
}
