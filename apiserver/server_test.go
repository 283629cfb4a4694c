package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go.opentelemetry.io/collector/config/configopaque"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// The OpenAPI document lists exactly the routes the server serves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := newServer(t)
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	assert.Equal(t, "3.0.3", doc.OpenAPI)

	// Every registered route is documented...
	for _, rt := range s.routes {
		op, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]
		if assert.True(t, ok, "%s %s is not in the OpenAPI document", rt.Method, rt.Path) {
			assert.Equal(t, rt.Doc.OperationID, op["operationId"])
		}
	}
	// ...and every documented operation is served: it reaches a route (no
	// route-level 404, no 405), which without a key means 401 or, for the
	// public ones, a real answer.
	var ops []string
	for path, item := range doc.Paths {
		for method, op := range item {
			ops = append(ops, op["operationId"].(string))
			target := pathParam.ReplaceAllString(path, "x")
			rec := apitest.Do(t, s.h, strings.ToUpper(method), target, "", nil)
			assert.NotEqual(t, http.StatusMethodNotAllowed, rec.Code, "%s %s", method, path)
			assert.NotContains(t, rec.Body.String(), "Route not found", "%s %s", method, path)
			if len(op["security"].([]any)) > 0 {
				assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s", method, path)
			}
		}
	}
	assert.Len(t, ops, len(s.routes))
	slices.Sort(ops)
	assert.Equal(t, len(ops), len(slices.Compact(ops)), "operation ids are unique")
}

// Status codes every route shares: 401 without or with a bad key, 403 for
// the wrong kind of key, 405 for another method, 404 off the route table.
func TestErrorStatuses(t *testing.T) {
	s := newServer(t)
	badKey := apitest.Basic("pk-lf-unknown", "sk-lf-unknown")
	for _, rt := range s.routes {
		target := pathParam.ReplaceAllString(rt.Path, "x")
		name := rt.Method + " " + rt.Path
		if rt.Access == httpx.Public {
			assert.NotEqual(t, http.StatusUnauthorized, apitest.Do(t, s.h, rt.Method, target, "", nil).Code, name)
			continue
		}
		for auth, message := range map[string]string{"": apierr.MsgMissingAuth, badKey: apierr.MsgInvalidCredentials} {
			rec := apitest.Do(t, s.h, rt.Method, target, auth, nil)
			assert.Equal(t, http.StatusUnauthorized, rec.Code, name)
			body := apitest.Decode[map[string]string](t, rec)
			assert.NotContains(t, body, "error", "401 bodies carry a message alone, as Langfuse's do: %s", name)
			if rt.Access != httpx.AdminKey || auth == "" {
				assert.Equal(t, message, body["message"], name)
			}
		}
		if rt.Access == httpx.AdminKey {
			// No API key stands in for the admin key.
			for _, auth := range []string{s.a.OrgAuth, s.a.ProjectAuth} {
				assert.Equal(t, http.StatusUnauthorized, apitest.Do(t, s.h, rt.Method, target, auth, nil).Code, name)
			}
			continue
		}
		wrongKey := s.a.OrgAuth
		if rt.Access == httpx.OrganizationKey {
			wrongKey = s.a.ProjectAuth
		}
		rec := apitest.Do(t, s.h, rt.Method, target, wrongKey, nil)
		assert.Equal(t, http.StatusForbidden, rec.Code, name)
		assert.NotContains(t, apitest.Decode[map[string]string](t, rec), "error", "the auth step's refusals carry a message alone: %s", name)
	}

	rec := apitest.Do(t, s.h, http.MethodPatch, "/api/public/traces", s.a.ProjectAuth, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.JSONEq(t, `{"message":"Method not allowed","error":"MethodNotAllowedError"}`, rec.Body.String())
	assert.Equal(t, "DELETE, GET, HEAD, OPTIONS", rec.Header().Get("Allow"))

	for _, target := range []string{"/api/public/nope", "/", "/api/public/traces/a/b"} {
		rec := apitest.Do(t, s.h, http.MethodGet, target, s.a.ProjectAuth, nil)
		assert.Equal(t, http.StatusNotFound, rec.Code, target)
		assert.Equal(t, "LangfuseNotFoundError", apitest.Decode[map[string]string](t, rec)["error"], target)
	}

	huge := map[string]any{"traceIds": []string{strings.Repeat("x", 2<<20)}}
	rec = apitest.Do(t, s.h, http.MethodDelete, "/api/public/traces", s.a.ProjectAuth, huge)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
}

func TestHealth(t *testing.T) {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	h, err := httpx.NewRouter(Routes(NewDefaultOptions(), cp, ch, zap.NewNop()), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/health", "", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"status":"OK","version":"`+Version+`"}`, rec.Body.String())
}

func TestHealthReportsUnreachableStores(t *testing.T) {
	ctx := context.Background()
	ch, err := chstore.Open(ctx, chtest.Config(t))
	require.NoError(t, err)
	cp, err := controlplane.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "cp.db"))
	require.NoError(t, err)
	h, err := httpx.NewRouter(Routes(NewDefaultOptions(), cp, ch, zap.NewNop()), httpx.Options{Verifier: cp})
	require.NoError(t, err)

	require.NoError(t, ch.Close())
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/health", "", nil)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.JSONEq(t, `{"status":"ClickHouse is unreachable","version":"`+Version+`"}`, rec.Body.String())

	require.NoError(t, cp.Close())
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/projects", apitest.Basic("pk-lf-x", "sk-lf-x"), nil)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "a store outage is not a bad key")
	assert.JSONEq(t, `{"message":"Service Unavailable"}`, rec.Body.String())
}

// New opens both stores, migrates them, applies headless initialisation,
// and serves; Close releases the stores.
func TestNew(t *testing.T) {
	ctx := context.Background()
	chCfg := chtest.Config(t)
	cfg := NewDefaultConfig()
	cfg.ControlPlane.DSN = "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	cfg.ClickHouse.DSN, cfg.ClickHouse.Database = configopaque.String(chCfg.DSN), chCfg.Database
	cfg.PublicURL = "https://glassbox.example.com/gb/"
	cfg.InitFromEnv = true
	t.Setenv(controlplane.EnvInitOrgID, "org")
	t.Setenv(controlplane.EnvInitProjectID, "proj")
	t.Setenv(controlplane.EnvInitProjectName, "Proj")
	t.Setenv(controlplane.EnvInitPublicKey, "pk-lf-init")
	t.Setenv(controlplane.EnvInitSecretKey, "sk-lf-0123456789abcdef-0123456789abcdef0")

	t.Setenv(AdminAPIKeyEnv, "admin-key-from-the-environment")

	srv, err := New(ctx, cfg, zap.NewNop())
	require.NoError(t, err)
	rec := apitest.Do(t, srv.Handler(), http.MethodGet, "/api/admin/organizations", "Bearer admin-key-from-the-environment", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"id":"org"`, "ADMIN_API_KEY turns the admin API on")
	auth := apitest.Basic("pk-lf-init", "sk-lf-0123456789abcdef-0123456789abcdef0")
	rec = apitest.Do(t, srv.Handler(), http.MethodGet, "/api/public/projects", auth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"id":"proj"`)
	p, err := srv.Verify(ctx, "pk-lf-init", "sk-lf-0123456789abcdef-0123456789abcdef0")
	require.NoError(t, err)
	assert.Equal(t, "proj", p.ProjectID)
	assert.Equal(t, http.StatusOK, apitest.Do(t, srv.Handler(), http.MethodGet, "/api/public/health", "", nil).Code)
	// The tables exist even though nothing was ingested yet.
	rec = apitest.Do(t, srv.Handler(), http.MethodGet, "/api/public/traces", auth, nil)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, srv.Close())

	// A restart with the same environment changes nothing; without the
	// admin key the admin API is gone.
	t.Setenv(AdminAPIKeyEnv, "")
	again, err := New(ctx, cfg, zap.NewNop())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, apitest.Do(t, again.Handler(), http.MethodGet, "/api/public/projects", auth, nil).Code)
	rec = apitest.Do(t, again.Handler(), http.MethodGet, "/api/admin/organizations", "Bearer admin-key-from-the-environment", nil)
	assert.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
	require.NoError(t, again.Close())
}

// The review's sequence: 50 delete requests, for traces that exist and ids
// that do not. The requests start no mutation; the server's scheduled purge
// starts one per table, and the rows go.
// startWithProject starts a server on a fresh ClickHouse database with one
// project and key pair, configured by configure; it stops with the test.
func startWithProject(t *testing.T, project, publicKey, secretKey string, configure func(*Config)) (*Server, chstore.Config) {
	t.Helper()
	chCfg := chtest.Config(t)
	cfg := NewDefaultConfig()
	cfg.ControlPlane.DSN = "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	cfg.ClickHouse.DSN, cfg.ClickHouse.Database = configopaque.String(chCfg.DSN), chCfg.Database
	cfg.InitFromEnv, cfg.Evaluation.Enabled = true, false
	configure(&cfg)
	t.Setenv(controlplane.EnvInitOrgID, "org")
	t.Setenv(controlplane.EnvInitProjectID, project)
	t.Setenv(controlplane.EnvInitPublicKey, publicKey)
	t.Setenv(controlplane.EnvInitSecretKey, secretKey)
	srv, err := New(context.Background(), cfg, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv, chCfg
}

func TestDeleteRequestsArePurgedInBatches(t *testing.T) {
	ctx := context.Background()
	var cfg Config
	srv, chCfg := startWithProject(t, "proj", "pk-lf-purge", "sk-lf-0123456789abcdef-purge-0123456-012", func(c *Config) {
		c.ClickHouse.PurgeInterval = 2 * time.Second
		cfg = *c
	})
	auth := apitest.Basic("pk-lf-purge", "sk-lf-0123456789abcdef-purge-0123456-012")

	var batch []map[string]any
	for i := range 25 {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("e%d", i), "timestamp": "2024-05-01T12:00:00Z", "type": "trace-create",
			"body": map[string]any{"id": fmt.Sprintf("t%d", i), "name": "doomed"}})
	}
	rec := apitest.Do(t, srv.Handler(), http.MethodPost, "/api/public/ingestion", auth, map[string]any{"batch": batch})
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())

	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{strings.TrimPrefix(chCfg.DSN, "clickhouse://")}})
	require.NoError(t, err)
	defer conn.Close()
	count := func(query string) uint64 {
		var n uint64
		require.NoError(t, conn.QueryRow(ctx, query, chCfg.Database).Scan(&n))
		return n
	}
	mutations := func() uint64 { return count("SELECT count() FROM system.mutations WHERE database = ?") }
	rows := func() uint64 {
		return count("SELECT count() FROM system.parts_columns WHERE database = ? AND table = 'observations' AND active AND column = 'id' AND rows > 0")
	}
	require.NotZero(t, rows())

	// A purge finding work mutates observations and trace_index once each;
	// on a slow machine more purges fit in the time the requests take, but
	// never one per request.
	purgeBound := func(since time.Time) uint64 {
		return 2 * (1 + uint64(time.Since(since)/cfg.ClickHouse.PurgeInterval))
	}
	start := time.Now()
	for i := range 25 {
		rec := apitest.Do(t, srv.Handler(), http.MethodDelete, "/api/public/traces", auth,
			map[string]any{"traceIds": []string{fmt.Sprintf("t%d", i)}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rec = apitest.Do(t, srv.Handler(), http.MethodDelete, "/api/public/traces", auth,
			map[string]any{"traceIds": []string{fmt.Sprintf("missing-%d", i)}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	assert.LessOrEqual(t, mutations(), min(purgeBound(start), 24), "requests start no mutation; only the scheduled purges do")
	require.Eventually(t, func() bool { return rows() == 0 }, 30*time.Second, 100*time.Millisecond, "the purge removes the rows")
	assert.LessOrEqual(t, mutations(), purgeBound(start), "observations and trace_index, once each per purge that found work")
}

func TestNewFailsOnlyOnWhatItCannotDoWithout(t *testing.T) {
	ctx := context.Background()
	invalid := NewDefaultConfig()
	invalid.ControlPlane.DSN = ""
	_, err := New(ctx, invalid, zap.NewNop())
	assert.ErrorContains(t, err, "control_plane.dsn")

	// ClickHouse being down is no reason not to start: the store connects in
	// the background, and health says what is missing meanwhile.
	unreachable := NewDefaultConfig()
	unreachable.ControlPlane.DSN = "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	unreachable.ClickHouse.DSN = "clickhouse://127.0.0.1:1"
	unreachable.Evaluation.Enabled = false
	srv, err := New(ctx, unreachable, zap.NewNop())
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/public/health", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "ClickHouse is unreachable")
	require.NoError(t, srv.Close())

	badInit := NewDefaultConfig()
	badInit.ControlPlane.DSN = unreachable.ControlPlane.DSN
	badInit.InitFromEnv = true
	t.Setenv(controlplane.EnvInitProjectID, "orphan")
	_, err = New(ctx, badInit, zap.NewNop())
	assert.ErrorContains(t, err, "headless init")
}

func TestListener(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	l, err := Listen("127.0.0.1:0", h, zap.NewNop())
	require.NoError(t, err)
	resp, err := http.Get("http://" + l.Addr() + "/")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)

	_, err = Listen(l.Addr(), h, zap.NewNop())
	assert.ErrorContains(t, err, "listen on", "a taken port fails at once")

	require.NoError(t, l.Shutdown(context.Background()))
	assert.NoError(t, <-l.Done())
}

// A project's retention deletes its data older than that many days, on the
// retention interval; newer data and projects without retention stay.
func TestRetentionDeletesExpiredData(t *testing.T) {
	ctx := context.Background()
	srv, chCfg := startWithProject(t, "kept-short", "pk-lf-retention", "sk-lf-0123456789abcdef-retention-0123456", func(c *Config) {
		c.ClickHouse.RetentionInterval = 500 * time.Millisecond
	})
	cp := srv.ControlPlane()
	other, err := cp.CreateProject(ctx, "org", controlplane.NewProject{ID: "kept-forever", Name: "forever"})
	require.NoError(t, err)
	_, otherSecret, err := cp.CreateAPIKey(ctx, "org", other.ID, controlplane.NewAPIKey{PublicKey: "pk-lf-forever", SecretKey: "sk-lf-0123456789abcdef-forever-01234567"})
	require.NoError(t, err)

	old := time.Now().AddDate(0, 0, -30).UTC().Format(time.RFC3339)
	recent := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	ingest := func(auth string, events ...map[string]any) {
		rec := apitest.Do(t, srv.Handler(), http.MethodPost, "/api/public/ingestion", auth, map[string]any{"batch": events})
		require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	}
	trace := func(id, at string) map[string]any {
		return map[string]any{"id": "e-" + id, "timestamp": at, "type": "trace-create", "body": map[string]any{"id": id, "name": id, "timestamp": at}}
	}
	score := func(id, traceID, at string) map[string]any {
		return map[string]any{"id": "e-" + id, "timestamp": at, "type": "score-create", "body": map[string]any{"id": id, "traceId": traceID, "name": "q", "value": 1}}
	}
	short := apitest.Basic("pk-lf-retention", "sk-lf-0123456789abcdef-retention-0123456")
	forever := apitest.Basic("pk-lf-forever", otherSecret)
	ingest(short, trace("old", old), trace("new", recent), score("old-score", "old", old), score("new-score", "new", recent))
	ingest(forever, trace("ancient", old))

	get := func(auth, path string) int {
		return apitest.Do(t, srv.Handler(), http.MethodGet, path, auth, nil).Code
	}
	require.Equal(t, http.StatusOK, get(short, "/api/public/traces/old"))
	// Retention starts only now, so the old trace was there to be read.
	week := 7
	_, err = cp.UpdateProject(ctx, "org", "kept-short", controlplane.ProjectUpdate{RetentionDays: &week})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return get(short, "/api/public/traces/old") == http.StatusNotFound }, 2*time.Second, 20*time.Millisecond,
		"the trace older than the project's 7 days disappears from reads at once")
	// The scores table has its own delete mutation, which may finish later.
	assert.Eventually(t, func() bool { return get(short, "/api/public/v2/scores/old-score") == http.StatusNotFound }, 30*time.Second,
		200*time.Millisecond, "and its score")
	assert.Equal(t, http.StatusOK, get(short, "/api/public/traces/new"))
	assert.Equal(t, http.StatusOK, get(short, "/api/public/v2/scores/new-score"))
	assert.Equal(t, http.StatusOK, get(forever, "/api/public/traces/ancient"), "a project without retention keeps everything")
	// A store without retention windows still reads the rows until the job
	// removes them.
	raw, err := chstore.Open(ctx, chCfg)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.GetTrace(ctx, "kept-short", "new")
	require.NoError(t, err, "the raw store reads the project's traces")
	require.Eventually(t, func() bool {
		_, err := raw.GetTrace(ctx, "kept-short", "old")
		return errors.Is(err, chstore.ErrNotFound)
	}, 30*time.Second, 200*time.Millisecond, "the job removes the rows themselves")

	// An organization's retention applies to its projects that set none.
	_, err = cp.UpdateOrganization(ctx, "org", controlplane.OrganizationUpdate{RetentionDays: &week})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return get(forever, "/api/public/traces/ancient") == http.StatusNotFound }, 2*time.Second,
		20*time.Millisecond, "the organization's 7 days reach its project without one at once")
}
