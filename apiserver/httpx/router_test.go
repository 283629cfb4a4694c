package httpx

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// fakeVerifier knows three keys: a project key, an organization key, and a
// project key that names no project (which no key may be).
type fakeVerifier struct {
	down bool
}

func (f fakeVerifier) Verify(_ context.Context, public, secret string) (apikey.Principal, error) {
	if f.down {
		return apikey.Principal{}, errors.New("database is down")
	}
	switch {
	case public == "pk-project" && secret == "sk-project":
		return apikey.Principal{PublicKey: public, ProjectID: "p1", OrganizationID: "o1", Scope: apikey.ScopeProject}, nil
	case public == "pk-org" && secret == "sk-org":
		return apikey.Principal{PublicKey: public, OrganizationID: "o1", Scope: apikey.ScopeOrganization}, nil
	case public == "pk-noproject" && secret == "sk-noproject":
		return apikey.Principal{PublicKey: public, OrganizationID: "o1", Scope: apikey.ScopeProject}, nil
	}
	return apikey.Principal{}, apikey.ErrInvalidCredentials
}

func (f fakeVerifier) VerifyPublicKey(ctx context.Context, public string) (apikey.Principal, error) {
	switch public {
	case "pk-project":
		return f.Verify(ctx, public, "sk-project")
	case "pk-org":
		return f.Verify(ctx, public, "sk-org")
	case "pk-noproject":
		return f.Verify(ctx, public, "sk-noproject")
	}
	return f.Verify(ctx, public, "")
}

func basic(public, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(public+":"+secret))
}

type echo struct {
	Project string `json:"project"`
	Org     string `json:"org"`
}

func testRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/public/open", Access: Public, Handler: func(*http.Request) (any, error) {
			return map[string]string{"ok": "yes"}, nil
		}},
		{Method: http.MethodGet, Path: "/api/public/things/{id}", Access: ProjectKey, Handler: func(r *http.Request) (any, error) {
			if r.PathValue("id") == "missing" {
				return nil, NotFound("Thing %s not found", r.PathValue("id"))
			}
			p := Principal(r.Context())
			return echo{Project: ProjectID(r), Org: p.OrganizationID}, nil
		}},
		{Method: http.MethodPost, Path: "/api/public/things", Access: ProjectKey, Handler: func(r *http.Request) (any, error) {
			var body map[string]any
			if err := DecodeJSON(r, &body); err != nil {
				return nil, err
			}
			return WithStatus(http.StatusCreated, body), nil
		}},
		{Method: http.MethodPost, Path: "/api/public/raw", Access: ProjectKey, Handler: func(r *http.Request) (any, error) {
			return Respond(func(w http.ResponseWriter) {
				w.Header().Set("X-Project", ProjectID(r))
				w.WriteHeader(http.StatusAccepted)
			}), nil
		}},
		{Method: http.MethodPost, Path: "/api/public/scores", Access: ProjectOrScoresKey, Handler: func(r *http.Request) (any, error) {
			return map[string]any{"project": ProjectID(r), "scoresOnly": ScoresOnly(r)}, nil
		}},
		{Method: http.MethodPost, Path: "/api/public/batch", Access: ProjectKey, LargeBody: true, Handler: func(r *http.Request) (any, error) {
			var body map[string]any
			if err := DecodeJSON(r, &body); err != nil {
				return nil, err
			}
			return body, nil
		}},
		{Method: http.MethodGet, Path: "/api/public/org", Access: OrganizationKey, Handler: func(r *http.Request) (any, error) {
			return echo{Org: Principal(r.Context()).OrganizationID}, nil
		}},
		{Method: http.MethodGet, Path: "/api/public/boom", Access: Public, Handler: func(*http.Request) (any, error) {
			panic("handler bug")
		}},
		{Method: http.MethodGet, Path: "/api/public/fail", Access: Public, Handler: func(*http.Request) (any, error) {
			return nil, errors.New("secret internal detail")
		}},
		{Method: http.MethodGet, Path: "/api/public/verdict/{kind}", Access: Public, Handler: func(r *http.Request) (any, error) {
			return nil, map[string]error{
				"missing":  fmt.Errorf("%w: trace t9 of this project", chstore.ErrNotFound),
				"invalid":  fmt.Errorf("%w: name must not be empty", controlplane.ErrInvalid),
				"conflict": fmt.Errorf("%w: a prompt with this version exists", controlplane.ErrConflict),
				"bare":     controlplane.ErrNotFound,
			}[r.PathValue("kind")]
		}},
		{Method: http.MethodGet, Path: "/api/public/stored", Access: Public, Handler: func(*http.Request) (any, error) {
			return nil, fmt.Errorf("list traces: %w: dial tcp 10.0.0.9:9000: connection refused", chstore.ErrUnavailable)
		}},
	}
}

func newTestRouter(t *testing.T, v KeyVerifier) (http.Handler, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	h, err := NewRouter(testRoutes(), Options{Verifier: v, Logger: zap.New(core), MaxBodyBytes: 64, MaxLargeBodyBytes: 256})
	require.NoError(t, err)
	return h, logs
}

func do(t *testing.T, h http.Handler, method, target, auth, body string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
		assert.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
	}
	return rec.Code, out, rec.Header()
}

// A handler that writes its own answer gets the request authenticated and
// nothing else written for it.
func TestRouterRespond(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	status, body, header := do(t, h, http.MethodPost, "/api/public/raw", basic("pk-project", "sk-project"), "")
	assert.Equal(t, http.StatusAccepted, status)
	assert.Nil(t, body)
	assert.Equal(t, "p1", header.Get("X-Project"))
	assert.Empty(t, header.Get("Content-Type"))

	status, _, header = do(t, h, http.MethodPost, "/api/public/raw", "", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Empty(t, header.Get("X-Project"))
}

func TestRouterAuth(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	project, org := basic("pk-project", "sk-project"), basic("pk-org", "sk-org")

	code, body, _ := do(t, h, http.MethodGet, "/api/public/things/t1", project, "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"project": "p1", "org": "o1"}, body)

	tests := []struct {
		name, target, auth string
		status             int
		message            string
	}{
		{"no header", "/api/public/things/t1", "", 401, "No authorization header"},
		{"other scheme", "/api/public/things/t1", "Token pk-project", 401, "Invalid authorization header, expected Basic base64(publicKey:secretKey). Confirm that you've configured the correct host."},
		{"public key alone on a project route", "/api/public/things/t1", "Bearer pk-project", 403, "Access denied - insufficient permissions for this endpoint"},
		{"public key alone on an org route", "/api/public/org", "Bearer pk-org", 403, "Access denied - insufficient permissions for this endpoint"},
		{"unknown public key", "/api/public/things/t1", "Bearer pk-unknown", 401, "Invalid credentials. Confirm that you've configured the correct host."},
		{"empty bearer", "/api/public/things/t1", "Bearer ", 401, "Invalid authorization header, expected Bearer <publicKey>. Confirm that you've configured the correct host."},
		{"wrong secret", "/api/public/things/t1", basic("pk-project", "nope"), 401, "Invalid credentials. Confirm that you've configured the correct host."},
		{"org key on project route", "/api/public/things/t1", org, 403, "Access denied - this endpoint requires a project API key, not an organization key"},
		{"project key on org route", "/api/public/org", project, 403, "Access denied - this endpoint requires an organization API key, not a project key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := do(t, h, http.MethodGet, tt.target, tt.auth, "")
			assert.Equal(t, tt.status, code)
			assert.Equal(t, tt.message, body["message"])
			assert.NotContains(t, body, "error", "the auth step's refusals carry only a message, as Langfuse's do")
		})
	}

	code, body, _ = do(t, h, http.MethodGet, "/api/public/org", org, "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "o1", body["org"])

	code, body, _ = do(t, h, http.MethodGet, "/api/public/open", "", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "yes", body["ok"])
}

// A public key alone (Bearer) grants the scores scope, on the routes that
// take it; a key pair there keeps its full project scope.
func TestRouterScoresScope(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	code, body, _ := do(t, h, http.MethodPost, "/api/public/scores", "Bearer pk-project", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"project": "p1", "scoresOnly": true}, body)

	code, body, _ = do(t, h, http.MethodPost, "/api/public/scores", "bearer  pk-project ", "")
	assert.Equal(t, http.StatusOK, code, "the scheme is case-insensitive, the token trimmed")
	assert.Equal(t, true, body["scoresOnly"])

	code, body, _ = do(t, h, http.MethodPost, "/api/public/scores", basic("pk-project", "sk-project"), "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"project": "p1", "scoresOnly": false}, body)

	code, body, _ = do(t, h, http.MethodPost, "/api/public/scores", "Bearer pk-org", "")
	assert.Equal(t, http.StatusForbidden, code, "an organization key has no project to score")
	assert.Equal(t, "Access denied - this endpoint requires a project API key, not an organization key", body["message"])

	// A project key naming no project is not valid, whichever way it is sent.
	for _, auth := range []string{"Bearer pk-noproject", basic("pk-noproject", "sk-noproject")} {
		code, body, _ = do(t, h, http.MethodPost, "/api/public/scores", auth, "")
		assert.Equal(t, http.StatusUnauthorized, code, auth)
		assert.Equal(t, "Invalid credentials. Confirm that you've configured the correct host.", body["message"], auth)
	}

	code, body, _ = do(t, h, http.MethodPost, "/api/public/scores", basic("pk-org", "sk-org"), "")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "Access denied - this endpoint requires a project API key, not an organization key", body["message"])

	code, _, _ = do(t, h, http.MethodPost, "/api/public/scores", "Bearer pk-unknown", "")
	assert.Equal(t, http.StatusUnauthorized, code)

	h, logs := newTestRouter(t, fakeVerifier{down: true})
	code, _, _ = do(t, h, http.MethodPost, "/api/public/scores", "Bearer pk-project", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, 1, logs.FilterMessage("API key verification failed").Len())
}

func TestRouterStoreOutageIs503(t *testing.T) {
	h, logs := newTestRouter(t, fakeVerifier{down: true})
	code, body, _ := do(t, h, http.MethodGet, "/api/public/things/t1", basic("pk-project", "sk-project"), "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "Service Unavailable", body["message"])
	assert.Equal(t, 1, logs.FilterMessage("API key verification failed").Len())
}

func TestClickHouseOutageIs503(t *testing.T) {
	h, logs := newTestRouter(t, fakeVerifier{})
	code, body, _ := do(t, h, http.MethodGet, "/api/public/stored", "", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body["message"], "ClickHouse is unavailable")
	assert.NotContains(t, body["message"], "10.0.0.9", "the address stays in the log")
	assert.Equal(t, 1, logs.FilterMessage("ClickHouse is unavailable").Len())
}

// A store's verdict that a handler passes on keeps its meaning and message.
func TestStoreVerdicts(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	for kind, want := range map[string]struct {
		status  int
		message string
	}{
		"missing":  {http.StatusNotFound, "not found: trace t9 of this project"},
		"invalid":  {http.StatusBadRequest, "invalid input: name must not be empty"},
		"conflict": {http.StatusConflict, "conflict: a prompt with this version exists"},
		"bare":     {http.StatusNotFound, "Not found"},
	} {
		code, body, _ := do(t, h, http.MethodGet, "/api/public/verdict/"+kind, "", "")
		assert.Equal(t, want.status, code, kind)
		assert.Equal(t, want.message, body["message"], kind)
	}
}

func TestRouterErrors(t *testing.T) {
	h, logs := newTestRouter(t, fakeVerifier{})
	project := basic("pk-project", "sk-project")

	code, body, _ := do(t, h, http.MethodGet, "/api/public/nowhere", project, "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, map[string]any{"message": "Route not found", "error": "LangfuseNotFoundError"}, body)

	code, body, _ = do(t, h, http.MethodGet, "/api/public/things/t1?id=%zz", project, "")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["message"], "Malformed query string")

	code, body, _ = do(t, h, http.MethodGet, "/api/public/things/missing", project, "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "Thing missing not found", body["message"])

	code, body, hdr := do(t, h, http.MethodDelete, "/api/public/things/t1", project, "")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, map[string]any{"message": "Method not allowed", "error": "MethodNotAllowedError"}, body)
	assert.Equal(t, "GET, HEAD, OPTIONS", hdr.Get("Allow"))

	req := httptest.NewRequest(http.MethodHead, "/api/public/open", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code, "HEAD is served by the GET route")

	code, body, _ = do(t, h, http.MethodPost, "/api/public/things", project, `{"a":1}`)
	assert.Equal(t, http.StatusCreated, code)
	assert.Equal(t, map[string]any{"a": float64(1)}, body)

	code, body, _ = do(t, h, http.MethodPost, "/api/public/things", project, `{"a":`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "InvalidRequestError", body["error"])

	code, body, _ = do(t, h, http.MethodPost, "/api/public/things", project, `{"a":1} {"b":2}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["message"], "unexpected data after the JSON value")

	code, body, _ = do(t, h, http.MethodPost, "/api/public/things", project, `{"a":"`+strings.Repeat("x", 100)+`"}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Equal(t, "PayloadTooLargeError", body["error"])

	code, body, _ = do(t, h, http.MethodGet, "/api/public/boom", "", "")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, map[string]any{"message": "Internal Server Error", "error": "InternalServerError"}, body)
	assert.Equal(t, 1, logs.FilterMessage("handler panicked").Len())

	code, body, _ = do(t, h, http.MethodGet, "/api/public/fail", "", "")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.NotContains(t, body["message"], "secret internal detail", "internal errors are logged, not sent")
	assert.Equal(t, 1, logs.FilterMessage("request failed").Len())

	// The router survived all of the above.
	code, _, _ = do(t, h, http.MethodGet, "/api/public/open", "", "")
	assert.Equal(t, http.StatusOK, code)
}

// LargeBody routes take up to MaxLargeBodyBytes, the others MaxBodyBytes;
// a declared length over the limit and a chunked body that runs past it
// both get a JSON 413.
func TestRouterBodyLimits(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	project := basic("pk-project", "sk-project")
	body := func(n int) string { return `{"a":"` + strings.Repeat("x", n-8) + `"}` }

	code, _, _ := do(t, h, http.MethodPost, "/api/public/batch", project, body(200))
	assert.Equal(t, http.StatusOK, code)
	code, _, _ = do(t, h, http.MethodPost, "/api/public/things", project, body(64))
	assert.Equal(t, http.StatusCreated, code, "the limit itself is accepted")
	for _, tt := range []struct {
		path  string
		size  int
		limit string
	}{
		{"/api/public/things", 65, "64"},
		{"/api/public/things", 200, "64"},
		{"/api/public/batch", 257, "256"},
	} {
		for _, chunked := range []bool{false, true} {
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(body(tt.size)))
			if chunked {
				req.ContentLength = -1
			}
			req.Header.Set("Authorization", project)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "%s %d chunked=%v", tt.path, tt.size, chunked)
			assert.JSONEq(t, `{"message":"Request body exceeds the limit of `+tt.limit+` bytes","error":"PayloadTooLargeError"}`,
				rec.Body.String())
		}
	}

	// Raising the general limit above the large one raises both.
	h, err := NewRouter(testRoutes(), Options{Verifier: fakeVerifier{}, MaxBodyBytes: 512, MaxLargeBodyBytes: 256})
	require.NoError(t, err)
	code, _, _ = do(t, h, http.MethodPost, "/api/public/batch", project, body(400))
	assert.Equal(t, http.StatusOK, code)
}

func TestRouterCORS(t *testing.T) {
	h, _ := newTestRouter(t, fakeVerifier{})
	req := httptest.NewRequest(http.MethodOptions, "/api/public/things", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusNoContent, rec.Code)
	assert.Equal(t, "https://app.example", rec.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "OPTIONS, POST", rec.Header().Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "authorization,content-type", rec.Header().Get("Access-Control-Allow-Headers"))
}

func TestNewRouterRejectsBadTables(t *testing.T) {
	ok := func(*http.Request) (any, error) { return nil, nil }
	tests := []struct {
		name   string
		routes []Route
		opts   Options
		msg    string
	}{
		{"duplicate", []Route{{Method: "GET", Path: "/a", Handler: ok}, {Method: "GET", Path: "/a", Handler: ok}}, Options{}, "registered twice"},
		{"no handler", []Route{{Method: "GET", Path: "/a"}}, Options{}, "no handler"},
		{"relative path", []Route{{Method: "GET", Path: "a", Handler: ok}}, Options{}, "must start with /"},
		{"lower-case method", []Route{{Method: "get", Path: "/a", Handler: ok}}, Options{}, "upper-case"},
		{"explicit HEAD", []Route{{Method: "HEAD", Path: "/a", Handler: ok}}, Options{}, "other than OPTIONS and HEAD"},
		{"rest wildcard", []Route{{Method: "GET", Path: "/a/{rest...}", Handler: ok}}, Options{}, "single-segment"},
		{"key without verifier", []Route{{Method: "GET", Path: "/a", Access: ProjectKey, Handler: ok}}, Options{}, "no verifier"},
		{"conflicting patterns", []Route{{Method: "GET", Path: "/a/{x}/b", Handler: ok}, {Method: "GET", Path: "/a/b/{y}", Handler: ok}}, Options{}, "register routes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRouter(tt.routes, tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func adminRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/admin/things", Access: AdminKey, Handler: func(r *http.Request) (any, error) {
			return map[string]any{"principal": Principal(r.Context()).Scope}, nil
		}},
		{Method: http.MethodDelete, Path: "/api/admin/things/{id}", Access: AdminKey, Handler: func(*http.Request) (any, error) {
			return map[string]bool{"success": true}, nil
		}},
	}
}

// Without an admin key the admin routes do not exist, whatever the method
// and credentials; the other routes are served as before.
func TestAdminKeyOffMeansNotFound(t *testing.T) {
	h, err := NewRouter(append(adminRoutes(), testRoutes()...), Options{Verifier: fakeVerifier{}})
	require.NoError(t, err)
	for _, req := range []struct{ method, path, auth string }{
		{http.MethodGet, "/api/admin/things", ""},
		{http.MethodGet, "/api/admin/things", "Bearer "},
		{http.MethodGet, "/api/admin/things", "Bearer anything"},
		{http.MethodGet, "/api/admin/things", basic("pk-org", "sk-org")},
		{http.MethodPost, "/api/admin/things", "Bearer anything"},
		{http.MethodDelete, "/api/admin/things/1", "Bearer anything"},
	} {
		code, body, _ := do(t, h, req.method, req.path, req.auth, "")
		assert.Equal(t, http.StatusNotFound, code, "%+v: %v", req, body)
		assert.Equal(t, "Route not found", body["message"])
	}
	code, body, _ := do(t, h, http.MethodGet, "/api/public/org", basic("pk-org", "sk-org"), "")
	assert.Equal(t, http.StatusOK, code, body)
}

func TestAdminKey(t *testing.T) {
	const key = "admin-key-0123456789abcdef"
	_, err := NewRouter(adminRoutes(), Options{AdminKey: key})
	require.NoError(t, err, "admin routes need no API key verifier")
	h, err := NewRouter(append(adminRoutes(), testRoutes()...), Options{Verifier: fakeVerifier{}, AdminKey: key})
	require.NoError(t, err)
	tests := []struct {
		name, auth string
		status     int
		message    string
	}{
		{"the key", "Bearer " + key, http.StatusOK, ""},
		{"scheme in any case", "bearer " + key, http.StatusOK, ""},
		{"no header", "", http.StatusUnauthorized, "No authorization header"},
		{"empty bearer", "Bearer ", http.StatusUnauthorized, "Invalid admin API key"},
		{"wrong key", "Bearer admin-key-0123456789abcdeX", http.StatusUnauthorized, "Invalid admin API key"},
		{"prefix of the key", "Bearer " + key[:len(key)-1], http.StatusUnauthorized, "Invalid admin API key"},
		{"key with more", "Bearer " + key + "0", http.StatusUnauthorized, "Invalid admin API key"},
		{"key as basic password", basic("admin", key), http.StatusUnauthorized, "expected Bearer <admin API key>"},
		{"organization key", basic("pk-org", "sk-org"), http.StatusUnauthorized, "expected Bearer <admin API key>"},
		{"project key", basic("pk-project", "sk-project"), http.StatusUnauthorized, "expected Bearer <admin API key>"},
		{"public key alone", "Bearer pk-project", http.StatusUnauthorized, "Invalid admin API key"},
		{"hash of the key", "Bearer " + apikey.HashSecret(key), http.StatusUnauthorized, "Invalid admin API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := do(t, h, http.MethodGet, "/api/admin/things", tt.auth, "")
			assert.Equal(t, tt.status, code, body)
			if tt.message != "" {
				assert.Contains(t, body["message"], tt.message)
			} else {
				assert.Equal(t, map[string]any{"principal": ""}, body, "no API key principal")
			}
		})
	}
	code, body, _ := do(t, h, http.MethodDelete, "/api/admin/things/1", "Bearer "+key, "")
	assert.Equal(t, http.StatusOK, code, body)
	code, _, _ = do(t, h, http.MethodPut, "/api/admin/things", "Bearer "+key, "")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "the admin paths exist when the key is set")
	// The admin key opens nothing else.
	for _, path := range []string{"/api/public/org", "/api/public/things/1"} {
		code, body, _ = do(t, h, http.MethodGet, path, "Bearer "+key, "")
		assert.Equal(t, http.StatusUnauthorized, code, "%s: %v", path, body)
	}
}

// NotFoundAs words the 404 of either store and leaves every other error to
// ClientError.
func TestStoreErrorAs(t *testing.T) {
	words := func(v *Error) string { return fmt.Sprintf("%d in our words", v.Status) }
	for verdict, status := range map[error]int{
		fmt.Errorf("x: %w", controlplane.ErrNotFound): http.StatusNotFound,
		fmt.Errorf("x: %w", chstore.ErrInvalid):       http.StatusBadRequest,
		fmt.Errorf("x: %w", controlplane.ErrConflict): http.StatusConflict,
	} {
		apiErr, ok := ClientError(StoreErrorAs(verdict, words))
		require.True(t, ok)
		assert.Equal(t, status, apiErr.Status, "the status is ClientError's")
		assert.Equal(t, fmt.Sprintf("%d in our words", status), apiErr.Message)
		assert.ErrorIs(t, apiErr, verdict)
	}
	for _, other := range []error{chstore.ErrUnavailable, errors.New("boom"), BadRequest("already an answer")} {
		assert.Same(t, other, StoreErrorAs(other, words), "only store verdicts are reworded")
	}
}

func TestNotFoundAs(t *testing.T) {
	for _, notFound := range []error{chstore.ErrNotFound, fmt.Errorf("get dataset: %w", controlplane.ErrNotFound)} {
		apiErr, ok := ClientError(NotFoundAs(notFound, "Dataset %s not found", "d1"))
		require.True(t, ok)
		assert.Equal(t, http.StatusNotFound, apiErr.Status)
		assert.Equal(t, "Dataset d1 not found", apiErr.Message)
		assert.ErrorIs(t, apiErr, notFound, "the cause stays reachable")
	}
	conflict := fmt.Errorf("%w: a dataset named d1 exists", controlplane.ErrConflict)
	assert.Same(t, conflict, NotFoundAs(conflict, "Dataset not found"))
	apiErr, ok := ClientError(NotFoundAs(conflict, "Dataset not found"))
	require.True(t, ok)
	assert.Equal(t, http.StatusConflict, apiErr.Status)
}
