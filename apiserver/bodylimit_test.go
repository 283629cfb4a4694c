package apiserver

import (
	"context"
	"go.opentelemetry.io/collector/config/configopaque"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func tooLarge(t *testing.T, rec *httptest.ResponseRecorder, limit int64) {
	t.Helper()
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"message":"Request body exceeds the limit of `+strconv.FormatInt(limit, 10)+` bytes","error":"PayloadTooLargeError"}`,
		rec.Body.String())
}

// Ingestion batches and dataset items take 4.5 MB, as Langfuse's do; every
// other JSON route keeps 1 MB.
func TestDefaultBodyLimits(t *testing.T) {
	s := newServer(t)
	twoMB := strings.Repeat("x", 2<<20)
	batch := func(log string) any {
		return map[string]any{"batch": []any{map[string]any{"id": "log", "timestamp": "2024-05-01T12:00:00Z", "type": "sdk-log",
			"body": map[string]any{"log": log}}}}
	}
	rec := apitest.Do(t, s.h, http.MethodPost, "/api/public/ingestion", s.a.ProjectAuth, batch(twoMB))
	assert.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	tooLarge(t, apitest.Do(t, s.h, http.MethodPost, "/api/public/ingestion", s.a.ProjectAuth, batch(strings.Repeat("x", 5<<20))), 4718592)

	rec = apitest.Do(t, s.h, http.MethodPost, "/api/public/v2/datasets", s.a.ProjectAuth, map[string]any{"name": "big"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = apitest.Do(t, s.h, http.MethodPost, "/api/public/dataset-items", s.a.ProjectAuth,
		map[string]any{"datasetName": "big", "input": twoMB})
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	tooLarge(t, apitest.Do(t, s.h, http.MethodPost, "/api/public/scores", s.a.ProjectAuth,
		map[string]any{"traceId": s.a.trace, "name": "q", "value": 1, "comment": twoMB}), 1<<20)
	tooLarge(t, apitest.Do(t, s.h, http.MethodPost, "/api/public/v2/datasets", s.a.ProjectAuth,
		map[string]any{"name": "big", "description": twoMB}), 1<<20)
}

// Both limits come from the configuration.
func TestConfiguredBodyLimits(t *testing.T) {
	chCfg := chtest.Config(t)
	cfg := NewDefaultConfig()
	cfg.ControlPlane.DSN = "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	cfg.ClickHouse.DSN, cfg.ClickHouse.Database = configopaque.String(chCfg.DSN), chCfg.Database
	cfg.Media.Dir = t.TempDir()
	cfg.Evaluation.Enabled = false
	cfg.MaxRequestBodyBytes, cfg.MaxLargeRequestBodyBytes = 2048, 8192
	cfg.InitFromEnv = true
	t.Setenv(controlplane.EnvInitOrgID, "org")
	t.Setenv(controlplane.EnvInitProjectID, "proj")
	t.Setenv(controlplane.EnvInitProjectName, "Proj")
	t.Setenv(controlplane.EnvInitPublicKey, "pk-lf-init")
	t.Setenv(controlplane.EnvInitSecretKey, "sk-lf-0123456789abcdef-0123456789abcdef0")
	srv, err := New(context.Background(), cfg, zap.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	h, auth := srv.Handler(), apitest.Basic("pk-lf-init", "sk-lf-0123456789abcdef-0123456789abcdef0")

	log := func(n int) any {
		return map[string]any{"batch": []any{map[string]any{"id": "log", "timestamp": "2024-05-01T12:00:00Z", "type": "sdk-log",
			"body": map[string]any{"log": strings.Repeat("x", n)}}}}
	}
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/ingestion", auth, log(4096))
	assert.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	tooLarge(t, apitest.Do(t, h, http.MethodPost, "/api/public/ingestion", auth, log(8192)), 8192)
	tooLarge(t, apitest.Do(t, h, http.MethodPost, "/api/public/scores", auth,
		map[string]any{"traceId": "t", "name": "q", "value": 1, "comment": strings.Repeat("x", 4096)}), 2048)
}
