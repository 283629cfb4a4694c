package apikeyauthextension

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
)

// TestStockReceiverAuth wires the extension into confighttp the way a stock
// receiver does with `auth: {authenticator: glassbox_auth}`.
func TestStockReceiverAuth(t *testing.T) {
	a, _ := start(t, staticConfig(), nil, nil)
	id := component.NewID(Type)

	sc := confighttp.NewDefaultServerConfig()
	sc.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: id}})
	var seen string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = client.FromContext(r.Context()).Auth.GetAttribute(AttributeProjectID).(string)
		w.WriteHeader(http.StatusOK)
	})
	srv, err := sc.ToServer(context.Background(), map[component.ID]component.Component{id: a}, componenttest.NewNopTelemetrySettings(), handler)
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodPost, "/v1/traces", http.NoBody)
	req.Header.Set("Authorization", basic("pk-plain", "sk-plain"))
	rec := httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "proj-plain", seen)

	req = httptest.NewRequest(http.MethodPost, "/v1/traces", http.NoBody)
	req.Header.Set("Authorization", basic("pk-plain", "wrong"))
	rec = httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}
