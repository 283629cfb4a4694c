package account_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/account"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// provider is an OpenID provider (zitadel's, with its example storage) on
// loopback: discovery, authorization with a login form, code exchange,
// RS256-signed ID tokens and a JWKS endpoint, userinfo.
type provider struct {
	issuer  string
	clients map[string]*storage.Client
}

type idpUser struct {
	ID, Username, Password, FirstName, LastName, Email string
	EmailVerified                                      bool
	PreferredLanguage                                  string
}

func startProvider(t *testing.T, users ...idpUser) *provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &provider{issuer: "http://" + ln.Addr().String(), clients: map[string]*storage.Client{}}
	byID := map[string]idpUser{}
	for _, u := range users {
		u.PreferredLanguage = "en"
		byID[u.ID] = u
	}
	file := filepath.Join(t.TempDir(), "users.json")
	raw, err := json.Marshal(byID)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, raw, 0o600))
	us, err := storage.StoreFromFile(file)
	require.NoError(t, err)
	st := storage.NewStorageWithClients(us, p.clients)
	srv := httptest.NewUnstartedServer(exampleop.SetupServer(p.issuer, st, nil, false))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

func (p *provider) register(clientID, secret, redirect string) {
	p.clients[clientID] = storage.WebClient(clientID, secret, redirect)
}

// ssoEnv is a Glassbox server that signs in through the provider.
func ssoEnv(t *testing.T, p *provider, signUp bool, domains ...string) *uitest.Env {
	t.Helper()
	env := uitest.Start(t, uitest.Options{Configure: func(cfg *apiserver.Config) {
		cfg.UI.SignUp = signUp
		cfg.UI.OIDC = account.SSOConfig{Name: "Loopback ID", Issuer: p.issuer, ClientID: "glassbox", ClientSecret: "client secret",
			AllowedDomains: domains}
	}})
	p.register("glassbox", "client secret", env.URL+"/auth/sso/callback")
	return env
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// ssoSignIn goes through the whole flow as a browser would: Glassbox's SSO
// button, the provider's login form, back to Glassbox's callback.
func ssoSignIn(t *testing.T, c *uitest.Client, p *provider, username, password string) *uitest.Response {
	t.Helper()
	res := c.Get("/auth/sso")
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.True(t, strings.HasPrefix(res.URL.String(), p.issuer+"/login/username"), "at the provider's login page: %s", res.URL)
	m := loginID.FindStringSubmatch(res.Body)
	require.NotNil(t, m, res.Body)
	form := url.Values{"id": {m[1]}, "username": {username}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, p.issuer+"/login/username", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Send(req)
}

func TestSSOSignsInAVerifiedEmail(t *testing.T) {
	p := startProvider(t,
		idpUser{ID: "u1", Username: "olive", Password: "idp password", FirstName: "Olive", Email: "OWNER@example.com", EmailVerified: true},
		idpUser{ID: "u2", Username: "nobody", Password: "idp password", Email: "nobody@example.com", EmailVerified: true},
		idpUser{ID: "u3", Username: "unverified", Password: "idp password", Email: "owner@example.com", EmailVerified: false},
	)
	env := ssoEnv(t, p, false)

	c := uitest.NewClient(t, env.URL)
	assert.Contains(t, c.Get("/auth/sign-in").Body, "Sign in with Loopback ID")
	res := ssoSignIn(t, c, p, "olive", "idp password")
	assert.Equal(t, env.URL+"/project/"+env.ProjectID, res.URL.String(), "signed in as the owner, matched by email")
	assert.Contains(t, res.Body, "Olive Owner")

	// Without sign-up an unknown email is turned away.
	c = uitest.NewClient(t, env.URL)
	res = ssoSignIn(t, c, p, "nobody", "idp password")
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
	assert.Contains(t, res.Body, "There is no account for nobody@example.com")

	// An email the provider has not verified does not sign anyone in.
	c = uitest.NewClient(t, env.URL)
	res = ssoSignIn(t, c, p, "unverified", "idp password")
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
	assert.Contains(t, res.Body, "has no verified email address")
}

func TestSSOCreatesAccountsWhenSignUpIsOnAndRespectsDomains(t *testing.T) {
	p := startProvider(t,
		idpUser{ID: "u1", Username: "new", Password: "idp password", FirstName: "Nia", Email: "nia@corp.example", EmailVerified: true},
		idpUser{ID: "u2", Username: "other", Password: "idp password", Email: "eve@elsewhere.example", EmailVerified: true},
	)
	env := ssoEnv(t, p, true, "corp.example")
	c := uitest.NewClient(t, env.URL)
	res := ssoSignIn(t, c, p, "new", "idp password")
	assert.Equal(t, "/setup", res.URL.Path, "a new account, asked to create its organization")
	u, err := env.Store.GetUserByEmail(t.Context(), "nia@corp.example")
	require.NoError(t, err)
	assert.False(t, u.HasPassword, "an SSO account has no password")

	c = uitest.NewClient(t, env.URL)
	res = ssoSignIn(t, c, p, "other", "idp password")
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
	assert.Contains(t, res.Body, "is not allowed here")
}

func TestSSOCallbackRefusesForgedResponses(t *testing.T) {
	p := startProvider(t, idpUser{ID: "u1", Username: "olive", Password: "idp password", Email: "owner@example.com", EmailVerified: true})
	env := ssoEnv(t, p, false)

	// A callback this browser did not start.
	c := uitest.NewClient(t, env.URL)
	res := c.Get("/auth/sso/callback?code=stolen&state=whatever")
	assert.Equal(t, "/auth/sign-in", res.URL.Path)
	assert.Contains(t, res.Body, "started in another browser")

	// A started flow answered with another state.
	c = uitest.NewClient(t, env.URL).NoRedirects()
	res = c.Get("/auth/sso")
	require.Equal(t, http.StatusFound, res.Status)
	res = c.Get("/auth/sso/callback?code=stolen&state=forged")
	assert.Contains(t, res.Header.Get("Location"), "does+not+belong+to+this+browser")

	// The right state with a made-up code: the provider refuses the exchange.
	loc, err := url.Parse(uitest.NewClient(t, env.URL).NoRedirects().Get("/auth/sso").Header.Get("Location"))
	require.NoError(t, err)
	c2 := uitest.NewClient(t, env.URL).NoRedirects()
	first := c2.Get("/auth/sso")
	state := mustQuery(t, first.Header.Get("Location"), "state")
	res = c2.Get("/auth/sso/callback?code=made-up&state=" + url.QueryEscape(state))
	assert.Contains(t, res.Header.Get("Location"), "refused+the+sign-in")
	assert.NotEmpty(t, loc.Query().Get("code_challenge"), "PKCE")
	assert.Equal(t, "S256", loc.Query().Get("code_challenge_method"))
	assert.NotEmpty(t, loc.Query().Get("nonce"))
}

func mustQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Query().Get(key)
}
