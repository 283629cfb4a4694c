package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// The UI renders HTML, but a store's verdict gets the status the API
// answers it with (httpx.ClientError).
func TestFailTakesTheAPIStatus(t *testing.T) {
	app, err := New(Config{SessionTTL: time.Hour}, nil, make([]byte, 32), nil)
	require.NoError(t, err)
	fail := func(ctx context.Context, err error) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/project/p1/datasets", http.NoBody)
		(&Request{Request: req, w: rec, app: app}).fail(err)
		return rec
	}
	storeErrors := []error{
		fmt.Errorf("%w: an automation named %q exists", controlplane.ErrConflict, "nightly"),
		fmt.Errorf("%w: name is required", controlplane.ErrInvalid),
		fmt.Errorf("%w: unknown filter column", chstore.ErrInvalid),
		controlplane.ErrNotFound,
		chstore.ErrNotFound,
		fmt.Errorf("list traces: %w", chstore.ErrUnavailable),
	}
	for _, err := range storeErrors {
		api, ok := httpx.ClientError(err)
		require.True(t, ok, err)
		assert.Equal(t, api.Status, fail(context.Background(), err).Code, err)
	}
	conflict := fail(context.Background(), storeErrors[0])
	assert.Equal(t, http.StatusConflict, conflict.Code)
	assert.Contains(t, conflict.Body.String(), "an automation named &#34;nightly&#34; exists")

	assert.Equal(t, http.StatusForbidden, fail(context.Background(), fmt.Errorf("edit: %w", access.ErrDenied)).Code)
	assert.Equal(t, http.StatusInternalServerError, fail(context.Background(), errors.New("disk full")).Code)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, http.StatusOK, fail(ctx, errors.New("context canceled")).Code, "nobody reads the answer of a client that went away")
}
