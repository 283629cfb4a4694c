package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type pinger func(ctx context.Context) error

func (p pinger) Ping(ctx context.Context) error { return p(ctx) }

// paths are the health check and its readiness alias, which answer alike.
var paths = []string{"/api/public/health", "/api/public/ready"}

func serve(t *testing.T, path string, deps []Dependency, logger *zap.Logger) *httptest.ResponseRecorder {
	h, err := httpx.NewRouter(Routes("9.9.9", deps, logger), httpx.Options{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestHealthy(t *testing.T) {
	ok := pinger(func(ctx context.Context) error {
		_, hasDeadline := ctx.Deadline()
		assert.True(t, hasDeadline, "every check is bounded")
		return nil
	})
	for _, path := range paths {
		rec := serve(t, path, []Dependency{{Name: "A", Pinger: ok}, {Name: "B", Pinger: ok}}, zap.NewNop())
		assert.Equal(t, http.StatusOK, rec.Code, path)
		assert.JSONEq(t, `{"status":"OK","version":"9.9.9"}`, rec.Body.String(), path)
	}
}

func TestUnhealthy(t *testing.T) {
	for _, path := range paths {
		core, logs := observer.New(zap.WarnLevel)
		calledB := false
		rec := serve(t, path, []Dependency{
			{Name: "A", Pinger: pinger(func(context.Context) error { return errors.New("connection refused") })},
			{Name: "B", Pinger: pinger(func(context.Context) error { calledB = true; return nil })},
		}, zap.New(core))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		assert.JSONEq(t, `{"status":"A is unreachable","version":"9.9.9"}`, rec.Body.String(), path)
		assert.NotContains(t, rec.Body.String(), "connection refused", "the cause is logged, not published")
		assert.Equal(t, 1, logs.FilterMessage("health check failed").Len(), path)
		assert.False(t, calledB, path)
	}
}
