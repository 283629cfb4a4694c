package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// keys: two project keys and an organization key.
type verifier struct{}

func (verifier) Verify(_ context.Context, public, secret string) (apikey.Principal, error) {
	switch {
	case public == "pk-a" && secret == "sk-a":
		return apikey.Principal{PublicKey: public, ProjectID: "project-a", OrganizationID: "o", Scope: apikey.ScopeProject}, nil
	case public == "pk-b" && secret == "sk-b":
		return apikey.Principal{PublicKey: public, ProjectID: "project-b", OrganizationID: "o", Scope: apikey.ScopeProject}, nil
	case public == "pk-org" && secret == "sk-org":
		return apikey.Principal{PublicKey: public, OrganizationID: "o", Scope: apikey.ScopeOrganization}, nil
	}
	return apikey.Principal{}, apikey.ErrInvalidCredentials
}

func (v verifier) VerifyPublicKey(ctx context.Context, public string) (apikey.Principal, error) {
	return v.Verify(ctx, public, strings.Replace(public, "pk-", "sk-", 1))
}

func basic(public, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(public+":"+secret))
}

var (
	authA = basic("pk-a", "sk-a")
	authB = basic("pk-b", "sk-b")
)

// secrets is the shared secret store of a deployment.
type secrets struct{}

func (secrets) Secret(_ context.Context, name string) ([]byte, error) {
	return []byte("key of " + name), nil
}

// echo answers what the route received: the key's project, the query
// parameters and the path wildcard.
type echo struct {
	Project string              `json:"project"`
	Query   map[string][]string `json:"query"`
	Path    string              `json:"path,omitempty"`
}

func echoed(r *http.Request, wildcard string) echo {
	e := echo{Project: httpx.ProjectID(r), Query: r.URL.Query()}
	if wildcard != "" {
		e.Path = r.PathValue(wildcard)
	}
	return e
}

// apiRoutes stand in for the API's routes: they echo, fail, or answer
// large bodies on demand.
func apiRoutes() []httpx.Route {
	get := func(path string, params []httpx.Param, h httpx.Handler) httpx.Route {
		return httpx.Route{Method: http.MethodGet, Path: path, Access: httpx.ProjectKey, Handler: h, Doc: httpx.Doc{Query: params}}
	}
	listParams := []httpx.Param{
		{Name: "limit", Type: httpx.TypeInteger}, {Name: "name", Type: httpx.TypeString},
		{Name: "tags", Type: httpx.TypeString, Repeated: true}, {Name: "fromTimestamp", Type: httpx.TypeDateTime},
		{Name: "filter", Type: httpx.TypeString},
	}
	return []httpx.Route{
		get("/api/public/v2/prompts", []httpx.Param{{Name: "label", Type: httpx.TypeString}, {Name: "page", Type: httpx.TypeInteger}},
			func(r *http.Request) (any, error) { return echoed(r, ""), nil }),
		get("/api/public/v2/prompts/{promptName}", []httpx.Param{{Name: "label", Type: httpx.TypeString},
			{Name: "version", Type: httpx.TypeInteger}, {Name: "resolve", Type: httpx.TypeBoolean}},
			func(r *http.Request) (any, error) {
				if r.PathValue("promptName") == "missing" {
					return nil, httpx.NotFound("Prompt not found: missing with label production")
				}
				if r.PathValue("promptName") == "broken" {
					return nil, errors.New("secret internal detail")
				}
				return echoed(r, "promptName"), nil
			}),
		get("/api/public/traces", listParams, func(r *http.Request) (any, error) {
			switch r.URL.Query().Get("name") {
			case "long":
				return map[string]any{"data": []string{strings.Repeat("é", 300_000)}}, nil
			case "many":
				items := make([]int, 100_000)
				return map[string]any{"data": items}, nil
			}
			return echoed(r, ""), nil
		}),
		get("/api/public/traces/{traceId}", nil, func(r *http.Request) (any, error) {
			id := r.PathValue("traceId")
			n := 3
			if id == "big" {
				n = 2000
			}
			obs := make([]map[string]any, n)
			for i := range obs {
				obs[i] = map[string]any{"id": fmt.Sprintf("o%d", i), "input": strings.Repeat("x", 1000)}
			}
			return map[string]any{"id": id, "project": httpx.ProjectID(r), "observations": obs}, nil
		}),
		get("/api/public/v2/observations", append(listParams, httpx.Param{Name: "parseIoAsJson", Type: httpx.TypeBoolean}),
			func(r *http.Request) (any, error) { return echoed(r, ""), nil }),
		get("/api/public/v2/metrics", []httpx.Param{{Name: "query", Type: httpx.TypeString, Required: true}},
			func(r *http.Request) (any, error) { return echoed(r, ""), nil }),
	}
}

type fixture struct {
	h      http.Handler
	srv    *server
	logs   *observer.ObservedLogs
	mu     sync.Mutex
	nowVal time.Time
}

func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nowVal
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nowVal = f.nowVal.Add(d)
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{nowVal: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	core, logs := observer.New(zap.InfoLevel)
	f.logs = logs
	api := apiRoutes()
	f.srv = newServer(Config{PublicURL: "https://glassbox.example.com/gb", Version: "1.2.3"}, api, secrets{}, zap.New(core), f.now)
	routes := append(api, f.srv.routes()...)
	h, err := httpx.NewRouter(routes, httpx.Options{Verifier: verifier{}, MaxBodyBytes: 64 << 10})
	require.NoError(t, err)
	f.h = h
	return f
}

// do sends a request to the endpoint with JSON headers, plus extra ones.
func (f *fixture) do(t testing.TB, method, auth, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, Path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func initBody(version string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
}

// initialize starts a session and returns its id.
func (f *fixture) initialize(t testing.TB, auth, version string) string {
	t.Helper()
	rec := f.do(t, http.MethodPost, auth, initBody(version))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	id := rec.Header().Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	return id
}

// rpc sends one request in a session and decodes the answer.
func (f *fixture) rpc(t *testing.T, auth, session, method, params string) map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"r1","method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	rec := f.do(t, http.MethodPost, auth, body+"}", "Mcp-Session-Id", session)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	out := decode(t, rec)
	assert.Equal(t, "2.0", out["jsonrpc"])
	assert.Equal(t, "r1", out["id"])
	return out
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return out
}

func errorCode(t *testing.T, out map[string]any) float64 {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "an error response: %v", out)
	assert.NotContains(t, out, "result")
	return e["code"].(float64)
}

// call runs a tool and returns its result.
func (f *fixture) call(t *testing.T, auth, session, name string, args any) map[string]any {
	t.Helper()
	buf, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	require.NoError(t, err)
	out := f.rpc(t, auth, session, "tools/call", string(buf))
	result, ok := out["result"].(map[string]any)
	require.True(t, ok, "a result: %v", out)
	return result
}

// structured checks that the text content is the structured content's JSON
// and returns the latter.
func structured(t *testing.T, result map[string]any) map[string]any {
	t.Helper()
	require.Equal(t, false, result["isError"] == true, "not an error: %v", result)
	content := result["content"].([]any)
	require.Len(t, content, 1)
	text := content[0].(map[string]any)
	assert.Equal(t, "text", text["type"])
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(text["text"].(string)), &fromText))
	assert.Equal(t, result["structuredContent"], fromText)
	return fromText
}

func toolErrorText(t *testing.T, result map[string]any) string {
	t.Helper()
	require.Equal(t, true, result["isError"], "an error result: %v", result)
	assert.NotContains(t, result, "structuredContent")
	return result["content"].([]any)[0].(map[string]any)["text"].(string)
}

func TestInitialize(t *testing.T) {
	f := newFixture(t)
	for requested, want := range map[string]string{
		"2025-06-18": "2025-06-18",
		"2025-03-26": "2025-03-26",
		"2024-11-05": "2025-06-18", // not served: the newest is offered
		"9999-01-01": "2025-06-18",
	} {
		rec := f.do(t, http.MethodPost, authA, initBody(requested))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		session := rec.Header().Get("Mcp-Session-Id")
		assert.NotEmpty(t, session)
		for _, c := range session {
			assert.True(t, c >= 0x21 && c <= 0x7e, "session ids are visible ASCII: %q", session)
		}
		assert.Equal(t, "Mcp-Session-Id", rec.Header().Get("Access-Control-Expose-Headers"))
		out := decode(t, rec)
		assert.Equal(t, float64(0), out["id"])
		result := out["result"].(map[string]any)
		assert.Equal(t, want, result["protocolVersion"], requested)
		assert.Equal(t, map[string]any{"tools": map[string]any{"listChanged": false}}, result["capabilities"])
		assert.Equal(t, map[string]any{"name": "glassbox", "version": "1.2.3"}, result["serverInfo"])
		assert.NotEmpty(t, result["instructions"])
	}
	// Every initialize is a new session, even one sent with an old id.
	first := f.initialize(t, authA, "2025-06-18")
	rec := f.do(t, http.MethodPost, authA, initBody("2025-06-18"), "Mcp-Session-Id", first)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.NotEqual(t, first, rec.Header().Get("Mcp-Session-Id"))

	rec = f.do(t, http.MethodPost, authA, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, float64(codeInvalidParams), errorCode(t, decode(t, rec)))
	assert.Empty(t, rec.Header().Get("Mcp-Session-Id"))
}

func TestPingAndNotifications(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`, // a response: the server never asks, so it is dropped
		`{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"no"}}`,
	} {
		rec := f.do(t, http.MethodPost, authA, body, "Mcp-Session-Id", session)
		assert.Equal(t, http.StatusAccepted, rec.Code, body)
		assert.Empty(t, rec.Body.String(), body)
	}
	out := f.rpc(t, authA, session, "ping", "")
	assert.Equal(t, map[string]any{}, out["result"])
	out = f.rpc(t, authA, session, "ping", "null")
	assert.Equal(t, map[string]any{}, out["result"])
}

func TestSessions(t *testing.T) {
	f := newFixture(t)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	session := f.initialize(t, authA, "2025-06-18")

	rec := f.do(t, http.MethodPost, authA, ping)
	assert.Equal(t, http.StatusBadRequest, rec.Code, "no session header")
	assert.Contains(t, rec.Body.String(), "Mcp-Session-Id header is required")
	rec = f.do(t, http.MethodPost, authA, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Equal(t, http.StatusBadRequest, rec.Code, "notifications need the session too")

	for name, id := range map[string]string{
		"made up":      "not-a-session",
		"forged mac":   session[:strings.LastIndex(session, ".")+1] + "AAAA",
		"other nonce":  "x" + session,
		"bad version":  strings.Replace(session, "2025-06-18", "2025-03-26", 1),
		"empty fields": "...",
	} {
		rec := f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", id)
		assert.Equal(t, http.StatusNotFound, rec.Code, name)
		assert.Equal(t, float64(codeTransport), errorCode(t, decode(t, rec)), name)
	}
	// A session belongs to the project whose key created it.
	rec = f.do(t, http.MethodPost, authB, ping, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNotFound, rec.Code)
	rec = f.do(t, http.MethodDelete, authB, "", "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNotFound, rec.Code, "another project cannot end it")

	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	// Another server of the deployment (same store secret) that never saw
	// the session takes it up; so does this one after evicting it.
	other := newServer(Config{}, apiRoutes(), secrets{}, nil, f.now)
	h, err := httpx.NewRouter(append(apiRoutes(), other.routes()...), httpx.Options{Verifier: verifier{}})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(ping))
	req.Header.Set("Authorization", authA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", session)
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	assert.Equal(t, http.StatusOK, rr.Code, rr.Body.String())
	assert.Equal(t, 1, other.sessions.count())

	f.advance(2 * time.Hour) // idle: evicted when the next session comes
	f.initialize(t, authB, "2025-06-18")
	assert.Equal(t, 1, f.srv.sessions.count(), "the idle sessions were evicted")
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusOK, rec.Code, "an evicted session is recreated from its id")

	// DELETE ends it for good.
	rec = f.do(t, http.MethodDelete, authA, "", "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNotFound, rec.Code)
	rec = f.do(t, http.MethodDelete, authA, "", "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNotFound, rec.Code)
	rec = f.do(t, http.MethodDelete, authA, "")
	assert.Equal(t, http.StatusBadRequest, rec.Code)

	// Sessions expire a day after initialize, however busy.
	session = f.initialize(t, authA, "2025-03-26")
	for range 4 {
		f.advance(50 * time.Minute)
		rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
		require.Equal(t, http.StatusOK, rec.Code)
	}
	f.advance(sessionLifetime - 4*50*time.Minute)
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

func TestSessionCountIsBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.srv.sessions.create(ctx, "project-a", version20250618)
	require.NoError(t, err)
	for range maxSessions + 10 {
		_, err := f.srv.sessions.create(ctx, "project-a", version20250618)
		require.NoError(t, err)
	}
	assert.Equal(t, maxSessions, f.srv.sessions.count())
	// The least recently seen was evicted, and comes back from its id.
	sess, err := f.srv.sessions.lookup(ctx, "project-a", first.id)
	require.NoError(t, err)
	require.NotNil(t, sess)
	assert.Equal(t, version20250618, sess.version)
	assert.Equal(t, maxSessions, f.srv.sessions.count())

	for range maxEnded + 10 {
		sess, err := f.srv.sessions.create(ctx, "project-a", version20250618)
		require.NoError(t, err)
		f.srv.sessions.end(sess)
	}
	assert.LessOrEqual(t, len(f.srv.sessions.ended), maxEnded)
}

func TestProtocolVersionHeader(t *testing.T) {
	f := newFixture(t)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	session := f.initialize(t, authA, "2025-06-18")
	rec := f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-06-18")
	assert.Equal(t, http.StatusOK, rec.Code)
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "MCP-Protocol-Version", "2024-11-05")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "Unsupported MCP-Protocol-Version")
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-03-26")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "negotiated version 2025-06-18")
	// Without the header the session's version applies.
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusOK, rec.Code)
}

func TestJSONRPCErrors(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	for _, c := range []struct {
		body   string
		status int
		code   float64
		id     any
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, http.StatusBadRequest, codeParseError, nil},
		{`not json`, http.StatusBadRequest, codeParseError, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, http.StatusBadRequest, codeParseError, nil},
		{`"ping"`, http.StatusBadRequest, codeInvalidRequest, nil},
		{`null`, http.StatusBadRequest, codeInvalidRequest, nil},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"id":1,"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":1}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, http.StatusBadRequest, codeInvalidRequest, float64(1)},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, http.StatusOK, codeMethodNotFound, float64(1)},
		{`{"jsonrpc":"2.0","id":"x","method":"prompts/get"}`, http.StatusOK, codeMethodNotFound, "x"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}`, http.StatusOK, codeInvalidParams, float64(2)},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}`, http.StatusOK, codeInvalidParams, float64(2)},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf"}}`, http.StatusOK, codeInvalidParams, float64(2)},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_trace","arguments":[1]}}`, http.StatusOK, codeInvalidParams, float64(2)},
	} {
		rec := f.do(t, http.MethodPost, authA, c.body, "Mcp-Session-Id", session)
		assert.Equal(t, c.status, rec.Code, c.body)
		out := decode(t, rec)
		assert.Equal(t, c.code, errorCode(t, out), c.body)
		assert.Equal(t, c.id, out["id"], c.body)
		assert.Equal(t, "2.0", out["jsonrpc"])
	}
}

func TestTransportChecks(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	rec := f.do(t, http.MethodGet, authA, "", "Accept", "text/event-stream", "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, "no server-initiated stream")
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "Content-Type", "text/plain")
	assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code)
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "Accept", "text/html")
	assert.Equal(t, http.StatusNotAcceptable, rec.Code)
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "Accept", "*/*")
	assert.Equal(t, http.StatusOK, rec.Code)
	rec = f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "Content-Type", "application/json; charset=utf-8")
	assert.Equal(t, http.StatusOK, rec.Code)

	// Browsers: only the public URL's origin and loopback pages.
	for origin, want := range map[string]int{
		"https://glassbox.example.com":      http.StatusOK,
		"https://GLASSBOX.example.com":      http.StatusOK,
		"http://localhost:6274":             http.StatusOK,
		"http://127.0.0.1:3000":             http.StatusOK,
		"http://[::1]:8080":                 http.StatusOK,
		"https://evil.example":              http.StatusForbidden,
		"http://glassbox.example.com":       http.StatusForbidden, // another scheme is another origin
		"https://glassbox.example.com:8443": http.StatusForbidden,
		"https://glassbox.example.com.evil": http.StatusForbidden,
		"null":                              http.StatusForbidden,
		"file://":                           http.StatusForbidden,
	} {
		rec := f.do(t, http.MethodPost, authA, ping, "Mcp-Session-Id", session, "Origin", origin)
		assert.Equal(t, want, rec.Code, origin)
		rec = f.do(t, http.MethodPost, authA, initBody("2025-06-18"), "Origin", origin)
		assert.Equal(t, want, rec.Code, "initialize from %s", origin)
	}
	rec = f.do(t, http.MethodDelete, authA, "", "Mcp-Session-Id", session, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, rec.Code)

	// Key pairs as on every project route.
	rec = f.do(t, http.MethodPost, "", initBody("2025-06-18"))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Empty(t, rec.Header().Get("Mcp-Session-Id"))
	rec = f.do(t, http.MethodPost, basic("pk-a", "wrong"), initBody("2025-06-18"))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	rec = f.do(t, http.MethodPost, basic("pk-org", "sk-org"), initBody("2025-06-18"))
	assert.Equal(t, http.StatusForbidden, rec.Code)
	rec = f.do(t, http.MethodPost, "Bearer pk-a", initBody("2025-06-18"))
	assert.Equal(t, http.StatusForbidden, rec.Code, "a public key alone reads nothing")

	// Bodies over the limit are refused unread.
	rec = f.do(t, http.MethodPost, authA, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("a", 70<<10)+`"}}`,
		"Mcp-Session-Id", session)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
}

func TestBatches(t *testing.T) {
	f := newFixture(t)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"nope"},7,` +
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}]`

	current := f.initialize(t, authA, "2025-06-18")
	rec := f.do(t, http.MethodPost, authA, batch, "Mcp-Session-Id", current)
	assert.Equal(t, http.StatusBadRequest, rec.Code, "2025-06-18 has no batches")
	assert.Equal(t, float64(codeInvalidRequest), errorCode(t, decode(t, rec)))

	old := f.initialize(t, authA, "2025-03-26")
	rec = f.do(t, http.MethodPost, authA, batch, "Mcp-Session-Id", old)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out []map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.Len(t, out, 5, "one answer per request and per invalid message, none for the notification")
	assert.Equal(t, map[string]any{}, out[0]["result"])
	assert.Len(t, out[1]["result"].(map[string]any)["tools"], 6)
	assert.Equal(t, float64(codeMethodNotFound), errorCode(t, out[2]))
	assert.Equal(t, float64(codeInvalidRequest), errorCode(t, out[3]))
	assert.Nil(t, out[3]["id"])
	assert.Equal(t, float64(codeInvalidRequest), errorCode(t, out[4]))
	assert.Equal(t, float64(4), out[4]["id"])

	rec = f.do(t, http.MethodPost, authA, `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":9,"result":{}}]`,
		"Mcp-Session-Id", old)
	assert.Equal(t, http.StatusAccepted, rec.Code)
	assert.Empty(t, rec.Body.String())

	rec = f.do(t, http.MethodPost, authA, `[]`, "Mcp-Session-Id", old)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, maxBatch+1), ",") + "]"
	rec = f.do(t, http.MethodPost, authA, many, "Mcp-Session-Id", old)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	// initialize cannot come batched, so a batch without a session is refused.
	rec = f.do(t, http.MethodPost, authA, "["+initBody("2025-03-26")+"]")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Empty(t, rec.Header().Get("Mcp-Session-Id"))
}

func TestToolsList(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	out := f.rpc(t, authA, session, "tools/list", `{"cursor":"ignored"}`)
	result := out["result"].(map[string]any)
	assert.NotContains(t, result, "nextCursor")
	tools := map[string]map[string]any{}
	for _, raw := range result["tools"].([]any) {
		tl := raw.(map[string]any)
		tools[tl["name"].(string)] = tl
		assert.NotEmpty(t, tl["title"])
		assert.NotEmpty(t, tl["description"])
		assert.Equal(t, map[string]any{"readOnlyHint": true, "openWorldHint": false}, tl["annotations"])
		schema := tl["inputSchema"].(map[string]any)
		assert.Equal(t, "object", schema["type"])
		assert.Equal(t, false, schema["additionalProperties"])
	}
	assert.Len(t, tools, 6)
	props := func(name string) map[string]any {
		return tools[name]["inputSchema"].(map[string]any)["properties"].(map[string]any)
	}
	// List tools take the routes' own parameters.
	traces := props("list_traces")
	assert.Equal(t, map[string]any{"type": "integer"}, traces["limit"])
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, traces["tags"])
	assert.Equal(t, "date-time", traces["fromTimestamp"].(map[string]any)["format"])
	filter := traces["filter"].(map[string]any)
	assert.Equal(t, "array", filter["type"])
	assert.Equal(t, []any{"type", "column", "operator"}, filter["items"].(map[string]any)["required"])
	assert.NotContains(t, props("list_observations"), "parseIoAsJson")
	assert.Equal(t, []any{"name"}, tools["get_prompt"]["inputSchema"].(map[string]any)["required"])
	assert.Equal(t, []any{"traceId"}, tools["get_trace"]["inputSchema"].(map[string]any)["required"])
	assert.Contains(t, props("query_metrics"), "timeDimension")
	assert.Contains(t, props("list_prompts"), "label")

	// 2025-03-26 has no tool titles.
	old := f.initialize(t, authA, "2025-03-26")
	for _, raw := range f.rpc(t, authA, old, "tools/list", "")["result"].(map[string]any)["tools"].([]any) {
		assert.NotContains(t, raw, "title")
	}
	// The listing is not changed by the copy.
	out = f.rpc(t, authA, session, "tools/list", "")
	assert.NotEmpty(t, out["result"].(map[string]any)["tools"].([]any)[0].(map[string]any)["title"])
}

func TestToolCallsRunTheRoutes(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")

	got := structured(t, f.call(t, authA, session, "list_traces", map[string]any{
		"limit": 5, "tags": []string{"a", "b"}, "name": nil, "fromTimestamp": "2026-01-01T00:00:00Z",
		"filter": []map[string]any{{"type": "string", "column": "name", "operator": "=", "value": "<x>"}},
	}))
	assert.Equal(t, "project-a", got["project"], "the key's project")
	assert.Equal(t, map[string]any{
		"limit": []any{"5"}, "tags": []any{"a", "b"}, "fromTimestamp": []any{"2026-01-01T00:00:00Z"},
		"filter": []any{`[{"column":"name","operator":"=","type":"string","value":"<x>"}]`},
	}, got["query"])

	got = structured(t, f.call(t, authB, f.initialize(t, authB, "2025-06-18"), "list_observations", map[string]any{"limit": 1}))
	assert.Equal(t, "project-b", got["project"])

	got = structured(t, f.call(t, authA, session, "get_prompt", map[string]any{"name": "folder/greeting", "label": "staging", "resolve": false}))
	assert.Equal(t, "folder/greeting", got["path"])
	assert.Equal(t, map[string]any{"label": []any{"staging"}, "resolve": []any{"false"}}, got["query"])

	got = structured(t, f.call(t, authA, session, "list_prompts", map[string]any{}))
	assert.Equal(t, map[string]any{}, got["query"])

	query := map[string]any{"view": "observations", "metrics": []any{map[string]any{"measure": "count", "aggregation": "count"}},
		"fromTimestamp": "2026-01-01T00:00:00Z", "toTimestamp": "2026-02-01T00:00:00Z", "config": map[string]any{"row_limit": 10}}
	got = structured(t, f.call(t, authA, session, "query_metrics", query))
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(got["query"].(map[string]any)["query"].([]any)[0].(string)), &sent))
	assert.Equal(t, map[string]any{"view": "observations", "metrics": []any{map[string]any{"measure": "count", "aggregation": "count"}},
		"fromTimestamp": "2026-01-01T00:00:00Z", "toTimestamp": "2026-02-01T00:00:00Z", "config": map[string]any{"row_limit": float64(10)}}, sent)

	got = structured(t, f.call(t, authA, session, "get_trace", map[string]any{"traceId": "t1"}))
	assert.Equal(t, "t1", got["id"])
	assert.Len(t, got["observations"], 3)
	assert.NotContains(t, got, "observationsOmitted")

	// 2025-03-26 results are text only.
	old := f.initialize(t, authA, "2025-03-26")
	result := f.call(t, authA, old, "get_trace", map[string]any{"traceId": "t1"})
	assert.NotContains(t, result, "structuredContent")
	assert.Contains(t, result["content"].([]any)[0].(map[string]any)["text"], `"id":"t1"`)
}

func TestToolArgumentsAreChecked(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	for _, c := range []struct {
		tool string
		args string
		want string
	}{
		{"get_trace", `{}`, "traceId is required"},
		{"get_trace", `{"traceId":7}`, "traceId must be a string"},
		{"get_trace", `{"traceId":"t","depth":2}`, "unknown argument depth; the arguments are traceId"},
		{"list_traces", `{"limit":"5"}`, "limit must be an integer"},
		{"list_traces", `{"limit":2.5}`, "limit must be an integer"},
		{"list_traces", `{"tags":"a"}`, "tags must be an array"},
		{"list_traces", `{"tags":["a",1]}`, "tags[1] must be a string"},
		{"list_traces", `{"fromTimestamp":"yesterday"}`, "fromTimestamp must be an ISO 8601 timestamp"},
		{"list_traces", `{"filter":[{"column":"name","operator":"="}]}`, "filter[0].type is required"},
		{"list_traces", `{"filter":[{"type":"regex","column":"name","operator":"="}]}`, "filter[0].type must be one of"},
		{"list_traces", `{"filter":[{"type":"string","column":"name","operator":"=","sql":"1"}]}`, "unknown argument filter[0].sql"},
		{"list_traces", `{"filter":"[]"}`, "filter must be an array"},
		{"get_prompt", `{"name":"p","resolve":"yes"}`, "resolve must be true or false"},
		{"query_metrics", `{"view":"traces","metrics":[],"fromTimestamp":"2026-01-01T00:00:00Z","toTimestamp":"2026-01-02T00:00:00Z"}`, "view must be one of"},
		{"query_metrics", `{"view":"observations","metrics":[{"measure":"count"}],"fromTimestamp":"2026-01-01T00:00:00Z","toTimestamp":"2026-01-02T00:00:00Z"}`, "metrics[0].aggregation is required"},
		{"query_metrics", `{"view":"observations","metrics":[]}`, "fromTimestamp is required"},
	} {
		out := f.rpc(t, authA, session, "tools/call", `{"name":"`+c.tool+`","arguments":`+c.args+`}`)
		assert.Equal(t, float64(codeInvalidParams), errorCode(t, out), c.args)
		assert.Contains(t, out["error"].(map[string]any)["message"], c.want, c.args)
	}
}

func TestToolErrorsAreResults(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	text := toolErrorText(t, f.call(t, authA, session, "get_prompt", map[string]any{"name": "missing"}))
	assert.Equal(t, "Prompt not found: missing with label production", text)

	text = toolErrorText(t, f.call(t, authA, session, "get_prompt", map[string]any{"name": "broken"}))
	assert.Equal(t, "Internal Server Error", text)
	assert.NotContains(t, text, "secret internal detail")
	logged := f.logs.FilterMessage("MCP tool failed").All()
	require.Len(t, logged, 1)
	assert.Equal(t, "get_prompt", logged[0].ContextMap()["tool"])

	// A route the build lacks fails its tool, not the server.
	s := newServer(Config{}, nil, secrets{}, nil, time.Now)
	_, err := s.byName["list_traces"].run(httptest.NewRequest(http.MethodPost, Path, nil), map[string]any{})
	assert.EqualError(t, err, "route GET /api/public/traces is not served")
}

func TestResultsAreBounded(t *testing.T) {
	f := newFixture(t)
	session := f.initialize(t, authA, "2025-06-18")
	size := func(result map[string]any) int {
		return len(result["content"].([]any)[0].(map[string]any)["text"].(string))
	}

	// Long strings are cut at a character boundary and marked.
	result := f.call(t, authA, session, "list_traces", map[string]any{"name": "long"})
	got := structured(t, result)
	s := got["data"].([]any)[0].(string)
	assert.LessOrEqual(t, size(result), maxResultBytes)
	assert.True(t, strings.HasPrefix(s, strings.Repeat("é", 100)))
	assert.Regexp(t, `é…\[truncated: \d+ more bytes\]$`, s)

	// A big trace keeps the observations that fit and says how many it left out.
	result = f.call(t, authA, session, "get_trace", map[string]any{"traceId": "big"})
	got = structured(t, result)
	assert.LessOrEqual(t, size(result), maxResultBytes)
	kept := len(got["observations"].([]any))
	assert.Positive(t, kept)
	assert.Equal(t, float64(2000-kept), got["observationsOmitted"])
	assert.Equal(t, "o0", got["observations"].([]any)[0].(map[string]any)["id"], "the first observations are kept")

	// What cannot be cut short enough is an error telling what to ask for.
	text := toolErrorText(t, f.call(t, authA, session, "list_traces", map[string]any{"name": "many"}))
	assert.Contains(t, text, "ask for fewer items (limit) or fewer fields")
}

func TestRoutesDocumentTheEndpoint(t *testing.T) {
	routes := Routes(Config{}, nil, secrets{}, nil)
	require.Len(t, routes, 2)
	for _, rt := range routes {
		assert.Equal(t, Path, rt.Path)
		assert.Equal(t, httpx.ProjectKey, rt.Access)
		assert.NotEmpty(t, rt.Doc.OperationID)
	}
	assert.Equal(t, http.MethodPost, routes[0].Method)
	assert.Equal(t, http.MethodDelete, routes[1].Method)
}

// Whatever the body, the endpoint answers a 2xx or 4xx, never a 5xx, and a
// body it sends is one JSON-RPC response or an array of them.
func FuzzPost(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"list_traces","arguments":{"limit":5,"filter":[{"type":"string","column":"name","operator":"=","value":"a"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_trace","arguments":{"traceId":"big"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `[]`, `[[]]`, `{}`, `null`, `1e999`, `{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	fx := newFixture(f)
	current := fx.initialize(f, authA, "2025-06-18")
	old := fx.initialize(f, authA, "2025-03-26")
	f.Fuzz(func(t *testing.T, body string, newest bool) {
		session := old
		if newest {
			session = current
		}
		rec := fx.do(t, http.MethodPost, authA, body, "Mcp-Session-Id", session)
		require.Less(t, rec.Code, 500, rec.Body.String())
		if rec.Body.Len() == 0 {
			return
		}
		var one response
		if json.Unmarshal(rec.Body.Bytes(), &one) == nil && one.JSONRPC == "2.0" {
			return
		}
		var many []response
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &many), rec.Body.String())
		require.NotEmpty(t, many)
		for _, r := range many {
			require.Equal(t, "2.0", r.JSONRPC)
		}
	})
}
