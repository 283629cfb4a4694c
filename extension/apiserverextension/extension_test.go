package apiserverextension

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/glassbox-dev/glassbox/extension/apikeyauthextension"
	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/internal/storerefs/storerefstest"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/cpsource"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/sampling"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

const (
	publicKey = "pk-lf-extension"
	secretKey = "sk-lf-0123456789abcdef-0123456789abcdef0"
)

// testHost offers the store extensions of the last testConfig.
var testHost component.Host

// testConfig starts a glassbox_storage extension on a fresh ClickHouse
// database and a glassbox_controlplane extension on a fresh SQLite file,
// offered by testHost, and names them, with one project key created from
// the environment.
func testConfig(t *testing.T) *Config {
	cfg := createDefaultConfig().(*Config)
	testHost, cfg.Refs = storerefstest.Start(t)
	cfg.InitFromEnv = true
	t.Setenv(controlplane.EnvInitOrgID, "org")
	t.Setenv(controlplane.EnvInitProjectID, "proj")
	t.Setenv(controlplane.EnvInitPublicKey, publicKey)
	t.Setenv(controlplane.EnvInitSecretKey, secretKey)
	return cfg
}

func newExtension(t *testing.T, cfg *Config) extension.Extension {
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	return ext
}

func get(h http.Handler, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func basicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey))
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, component.MustNewType("glassbox_api"), f.Type())
	cfg := f.CreateDefaultConfig().(*Config)
	assert.Empty(t, cfg.Listen, "in the collector the ingest receiver's port serves the API")
	assert.NoError(t, componenttest.CheckConfigStruct(cfg))
}

func TestLifecycle(t *testing.T) {
	ext := newExtension(t, testConfig(t))
	provider, ok := ext.(HandlerProvider)
	require.True(t, ok, "the ingest receiver's fallback needs Handler()")
	verifier, ok := ext.(apikey.Verifier)
	require.True(t, ok, "glassbox_auth needs an apikey.Verifier")

	// Before Start: the handler answers 503 and keys cannot be checked.
	h := provider.Handler()
	rec := get(h, "/api/public/health", "")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "5", rec.Header().Get("Retry-After"))
	assert.JSONEq(t, `{"message":"Service Unavailable"}`, rec.Body.String())
	_, err := verifier.Verify(context.Background(), publicKey, secretKey)
	require.Error(t, err)
	assert.NotErrorIs(t, err, apikey.ErrInvalidCredentials, "not running is an outage, not a bad key")

	require.NoError(t, ext.Start(context.Background(), testHost))
	// The handler taken before Start now serves the API.
	assert.Equal(t, http.StatusOK, get(h, "/api/public/health", "").Code)
	rec = get(h, "/api/public/projects", basicAuth())
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"id":"proj"`)
	p, err := verifier.Verify(context.Background(), publicKey, secretKey)
	require.NoError(t, err)
	assert.Equal(t, apikey.Principal{PublicKey: publicKey, ProjectID: "proj", OrganizationID: "org", Scope: apikey.ScopeProject}, p)
	_, err = verifier.Verify(context.Background(), publicKey, "sk-lf-wrong")
	assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)

	require.NoError(t, ext.Shutdown(context.Background()))
	assert.Equal(t, http.StatusServiceUnavailable, get(h, "/api/public/health", "").Code)
	require.NoError(t, ext.Shutdown(context.Background()), "Shutdown is safe to repeat")
}

// The API runs over the very store instances of the extensions it names,
// so a change made through it reaches the processors at once.
func TestSharesTheNamedStores(t *testing.T) {
	cfg := testConfig(t)
	ext := newExtension(t, cfg)
	assert.Equal(t, []component.ID{cfg.Storage, cfg.ControlPlane}, ext.(interface{ Dependencies() []component.ID }).Dependencies(),
		"the collector starts the stores first")
	require.NoError(t, ext.Start(context.Background(), testHost))
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
	cp, err := controlplaneextension.GetStore(testHost, cfg.ControlPlane, "control_plane")
	require.NoError(t, err)
	ch, err := storageextension.GetStore(testHost, cfg.Storage, "storage")
	require.NoError(t, err)
	assert.Same(t, cp, ext.(*apiExtension).server.Load().ControlPlane())
	require.NoError(t, ext.Shutdown(context.Background()))
	require.NoError(t, ch.Ping(context.Background()), "shutting the API down leaves the shared store open")
	require.NoError(t, cp.Ping(context.Background()))
}

func TestStartNeedsTheNamedExtensions(t *testing.T) {
	cfg := testConfig(t)
	cfg.ControlPlane = component.MustNewIDWithName("glassbox_controlplane", "missing")
	ext := newExtension(t, cfg)
	assert.ErrorContains(t, ext.Start(context.Background(), testHost), `control_plane: no extension "glassbox_controlplane/missing"`)
	require.NoError(t, ext.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	require.NoError(t, newExtension(t, createDefaultConfig().(*Config)).Shutdown(context.Background()))
}

func TestOwnListener(t *testing.T) {
	cfg := testConfig(t)
	cfg.Listen = freeport.Addr(t)

	ext := newExtension(t, cfg)
	require.NoError(t, ext.Start(context.Background(), testHost))
	resp, err := http.Get("http://" + cfg.Listen + "/api/public/health")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, ext.Shutdown(context.Background()))
	_, err = http.Get("http://" + cfg.Listen + "/api/public/health")
	assert.Error(t, err, "the listener is closed")
}

func TestStartFailsOnTakenPort(t *testing.T) {
	cfg := testConfig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg.Listen = ln.Addr().String()
	ext := newExtension(t, cfg)
	assert.ErrorContains(t, ext.Start(context.Background(), testHost), "listen on")
	require.NoError(t, ext.Shutdown(context.Background()))
}

// The collector's authenticator, configured with `verifier: glassbox_api`,
// checks keys against the API server's store.
func TestAuthenticatorUsesTheStore(t *testing.T) {
	ext := newExtension(t, testConfig(t))
	require.NoError(t, ext.Start(context.Background(), testHost))
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()

	authFactory := apikeyauthextension.NewFactory()
	authCfg := authFactory.CreateDefaultConfig().(*apikeyauthextension.Config)
	id := component.NewID(Type)
	authCfg.Verifier = &id
	auth, err := authFactory.Create(context.Background(), extensiontest.NewNopSettings(authFactory.Type()), authCfg)
	require.NoError(t, err)
	host := storerefstest.Host{Host: componenttest.NewNopHost(), Extensions: map[component.ID]component.Component{id: ext}}
	require.NoError(t, auth.Start(context.Background(), host))
	defer func() { require.NoError(t, auth.Shutdown(context.Background())) }()

	p, err := auth.(apikey.Verifier).Verify(context.Background(), publicKey, secretKey)
	require.NoError(t, err)
	assert.Equal(t, "proj", p.ProjectID)
	_, err = auth.(apikey.Verifier).Verify(context.Background(), publicKey, "sk-lf-wrong-secret")
	assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)
}

func TestServesProcessorSources(t *testing.T) {
	ext := newExtension(t, testConfig(t))
	models, ok := ext.(pricing.ModelSource)
	require.True(t, ok, "glassbox_cost reads project models through the extension")
	rates, ok := ext.(sampling.Source)
	require.True(t, ok, "glassbox_sampling reads project settings through the extension")

	_, err := models.ProjectModels(context.Background())
	require.ErrorIs(t, err, cpsource.ErrNotRunning)
	_, err = rates.ProjectSampling(context.Background())
	require.ErrorIs(t, err, cpsource.ErrNotRunning)

	ctx := context.Background()
	require.NoError(t, ext.Start(ctx, testHost))
	defer func() { require.NoError(t, ext.Shutdown(ctx)) }()
	cp := ext.(*apiExtension).server.Load().ControlPlane()
	rate := 0.25
	_, err = cp.SetSampling(ctx, "proj", sampling.Rates{Rate: &rate})
	require.NoError(t, err)
	_, err = cp.CreateModel(ctx, "proj", pricing.Model{Name: "house-model", MatchPattern: "(?i)^house-model$",
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 0.000001}}}})
	require.NoError(t, err)

	gotRates, err := rates.ProjectSampling(ctx)
	require.NoError(t, err)
	require.NotNil(t, gotRates["proj"].Rate)
	assert.InDelta(t, 0.25, *gotRates["proj"].Rate, 1e-9)
	gotModels, err := models.ProjectModels(ctx)
	require.NoError(t, err)
	require.Len(t, gotModels["proj"], 1)
	assert.Equal(t, "house-model", gotModels["proj"][0].Name)
}

func TestServesEvaluatorRulesAndTakesJobs(t *testing.T) {
	ext := newExtension(t, testConfig(t))
	source, ok := ext.(interface {
		evaljobs.RuleSource
		evaljobs.Enqueuer
	})
	require.True(t, ok, "glassbox_evaltap reads rules and queues jobs through the extension")
	ctx := context.Background()
	_, err := source.ActiveEvalRules(ctx)
	require.ErrorIs(t, err, cpsource.ErrNotRunning)
	require.ErrorIs(t, source.EnqueueEvalJobs(ctx, []evaljobs.Job{{ProjectID: "proj", RuleID: "r", TraceID: "t"}}), cpsource.ErrNotRunning)

	require.NoError(t, ext.Start(ctx, testHost))
	defer func() { require.NoError(t, ext.Shutdown(ctx)) }()
	cp := ext.(*apiExtension).server.Load().ControlPlane()
	e, err := cp.CreateEvaluator(ctx, "proj", controlplane.NewEvaluator{Name: "one", Kind: controlplane.EvaluatorCEL, ScoreName: "one",
		Output: controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric}, Expression: "1"})
	require.NoError(t, err)
	rule, err := cp.CreateEvalRule(ctx, "proj", controlplane.NewEvalRule{Name: "all", EvaluatorID: e.ID, Target: evaljobs.TargetTrace})
	require.NoError(t, err)

	rules, err := source.ActiveEvalRules(ctx)
	require.NoError(t, err)
	require.Len(t, rules, 1)
	assert.Equal(t, rule.ID, rules[0].ID)
	require.NoError(t, source.EnqueueEvalJobs(ctx, []evaljobs.Job{{ProjectID: "proj", RuleID: rule.ID, TraceID: "t", Due: time.Now().Add(time.Hour)}}))
	jobs, total, err := cp.ListEvalJobs(ctx, "proj", evalqueue.Filter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, "t", jobs[0].TraceID)
}
