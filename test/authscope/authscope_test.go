// Package authscope checks the one auth-scope rule from the outside: the
// same principal gets the same status, error name and message from the
// ingest receiver's OTLP route, from an API route, and (its text) from the
// authenticator that stock receivers use.
package authscope

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/extension/apikeyauthextension"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
	"github.com/glassbox-dev/glassbox/receiver/ingestreceiver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var storeID = component.MustNewID("keystore")

// keyStore is the key store behind every surface.
type keyStore struct {
	component.StartFunc
	component.ShutdownFunc

	mu   sync.Mutex
	down bool
}

var principals = map[string]apikey.Principal{
	"pk-project":   {PublicKey: "pk-project", ProjectID: "p1", OrganizationID: "o1", Scope: apikey.ScopeProject},
	"pk-org":       {PublicKey: "pk-org", OrganizationID: "o1", Scope: apikey.ScopeOrganization},
	"pk-noproject": {PublicKey: "pk-noproject", OrganizationID: "o1", Scope: apikey.ScopeProject},
}

func (s *keyStore) VerifyPublicKey(_ context.Context, publicKey string) (apikey.Principal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return apikey.Principal{}, errors.New("dial tcp 10.0.0.9:5432: connection refused")
	}
	p, ok := principals[publicKey]
	if !ok {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	return p, nil
}

func (s *keyStore) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	p, err := s.VerifyPublicKey(ctx, publicKey)
	if err != nil {
		return p, err
	}
	if secretKey != strings.Replace(publicKey, "pk-", "sk-", 1) {
		return apikey.Principal{}, apikey.ErrInvalidCredentials
	}
	return p, nil
}

func (s *keyStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

type host struct {
	component.Host
	extensions map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.extensions }

func basic(publicKey, secretKey string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(publicKey+":"+secretKey))
}

type answer struct {
	Status  int
	Name    string
	Message string
}

func call(t *testing.T, method, url, auth, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var b struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &b), string(raw))
	return answer{Status: resp.StatusCode, Name: b.Error, Message: b.Message}
}

// surfaces starts the authenticator on the key store, the ingest receiver
// verifying through it, and an API router on the key store.
func surfaces(t *testing.T, store *keyStore) (auth extensionauth.Server, ingestURL, apiURL string) {
	t.Helper()
	ctx := context.Background()

	authFactory := apikeyauthextension.NewFactory()
	authCfg := authFactory.CreateDefaultConfig().(*apikeyauthextension.Config)
	id := storeID
	authCfg.Verifier = &id
	authCfg.CacheTTL, authCfg.NegativeCacheTTL = time.Nanosecond, time.Nanosecond
	ext, err := authFactory.Create(ctx, extensiontest.NewNopSettings(authFactory.Type()), authCfg)
	require.NoError(t, err)
	authID := component.NewID(authFactory.Type())
	h := host{Host: componenttest.NewNopHost(), extensions: map[component.ID]component.Component{storeID: store, authID: ext}}
	require.NoError(t, ext.Start(ctx, h))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })

	recvFactory := ingestreceiver.NewFactory()
	recvCfg := recvFactory.CreateDefaultConfig().(*ingestreceiver.Config)
	recvCfg.Authenticator = authID
	addr := freeport.Addr(t)
	recvCfg.HTTP.NetAddr.Endpoint = addr
	recv, err := recvFactory.CreateTraces(ctx, receivertest.NewNopSettings(recvFactory.Type()), recvCfg, new(consumertest.TracesSink))
	require.NoError(t, err)
	require.NoError(t, recv.Start(ctx, h))
	t.Cleanup(func() { require.NoError(t, recv.Shutdown(context.Background())) })

	api, err := httpx.NewRouter([]httpx.Route{{
		Method: http.MethodGet, Path: "/api/public/traces", Access: httpx.ProjectKey,
		Handler: func(*http.Request) (any, error) { return map[string]string{}, nil },
	}}, httpx.Options{Verifier: store})
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	return ext.(extensionauth.Server), "http://" + addr + ingestreceiver.TracesPath, srv.URL + "/api/public/traces"
}

func TestOneAnswerPerPrincipal(t *testing.T) {
	store := &keyStore{}
	auth, ingestURL, apiURL := surfaces(t, store)

	tests := []struct {
		name, header string
		want         answer
	}{
		{"no credentials", "", answer{401, "", "No authorization header"}},
		{"malformed header", "Token pk-project", answer{401, "",
			"Invalid authorization header, expected Basic base64(publicKey:secretKey). Confirm that you've configured the correct host."}},
		{"wrong secret", basic("pk-project", "sk-wrong"), answer{401, "", "Invalid credentials. Confirm that you've configured the correct host."}},
		{"unknown key", basic("pk-unknown", "sk-unknown"), answer{401, "", "Invalid credentials. Confirm that you've configured the correct host."}},
		{"organization key", basic("pk-org", "sk-org"), answer{403, "",
			"Access denied - this endpoint requires a project API key, not an organization key"}},
		{"project key without a project", basic("pk-noproject", "sk-noproject"), answer{401, "",
			"Invalid credentials. Confirm that you've configured the correct host."}},
		{"public key alone", "Bearer pk-project", answer{403, "", "Access denied - insufficient permissions for this endpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ingest := call(t, http.MethodPost, ingestURL, tt.header, "application/json", `{"resourceSpans":[]}`)
			api := call(t, http.MethodGet, apiURL, tt.header, "", "")
			assert.Equal(t, tt.want, ingest, "ingest receiver")
			assert.Equal(t, tt.want, api, "API")

			headers := map[string][]string{}
			if tt.header != "" {
				headers["Authorization"] = []string{tt.header}
			}
			_, err := auth.Authenticate(context.Background(), headers)
			assert.EqualError(t, err, tt.want.Message, "authenticator of stock receivers")
		})
	}

	t.Run("key store down", func(t *testing.T) {
		store.setDown(true)
		defer store.setDown(false)
		want := answer{503, "", "Service Unavailable"}
		assert.Equal(t, want, call(t, http.MethodPost, ingestURL, basic("pk-project", "sk-project"), "application/json", `{}`), "ingest receiver")
		assert.Equal(t, want, call(t, http.MethodGet, apiURL, basic("pk-project", "sk-project"), "", ""), "API")
		_, err := auth.Authenticate(context.Background(), map[string][]string{"Authorization": {basic("pk-project", "sk-project")}})
		assert.EqualError(t, err, want.Message, "authenticator of stock receivers")
	})
}
