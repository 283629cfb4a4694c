package apiserver

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/mcp"
)

func mcpInitialize() any {
	return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}
}

var mcpAttacks = map[string]attack{
	"POST /api/public/mcp": {auth: projectKey, target: fixed(mcp.Path),
		body: func(server) any { return mcpInitialize() },
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			onlyOwn(t, s, rec)
			assert.NotEmpty(t, rec.Header().Get("Mcp-Session-Id"))
		}},
	"DELETE /api/public/mcp": {auth: projectKey, target: fixed(mcp.Path),
		check: func(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
			assert.Equal(t, http.StatusBadRequest, rec.Code, "no session to end: %s", rec.Body.String())
		}},
}

func init() {
	maps.Copy(attacks, mcpAttacks)
}

// mcpClient speaks MCP to the server's handler with one key.
type mcpClient struct {
	t       *testing.T
	h       http.Handler
	auth    string
	session string
}

func newMCPClient(t *testing.T, s server, auth string) *mcpClient {
	c := &mcpClient{t: t, h: s.h, auth: auth}
	rec := c.post(mcpInitialize())
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	c.session = rec.Header().Get("Mcp-Session-Id")
	require.NotEmpty(t, c.session)
	return c
}

func (c *mcpClient) post(body any) *httptest.ResponseRecorder {
	buf, err := json.Marshal(body)
	require.NoError(c.t, err)
	req := httptest.NewRequest(http.MethodPost, mcp.Path, strings.NewReader(string(buf)))
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec
}

// call runs a tool and returns the recorded answer and the tool result.
func (c *mcpClient) call(name string, args map[string]any) (*httptest.ResponseRecorder, map[string]any) {
	rec := c.post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	require.Equal(c.t, http.StatusOK, rec.Code, rec.Body.String())
	var out struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(c.t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.NotNil(c.t, out.Result, rec.Body.String())
	return rec, out.Result
}

// The MCP tools answer what the routes answer to the same key: tenant a
// reaches its own data and none of tenant b's, whatever it asks for.
func TestMCPToolsSeeOnlyTheKeysProject(t *testing.T) {
	s := newServer(t)
	a := newMCPClient(t, s, s.a.ProjectAuth)
	window := map[string]any{"fromTimestamp": "2000-01-01T00:00:00Z", "toTimestamp": "2100-01-01T00:00:00Z"}

	own := func(name string, args map[string]any, want string) {
		t.Run(name, func(t *testing.T) {
			rec, result := a.call(name, args)
			assert.NotEqual(t, true, result["isError"], rec.Body.String())
			assert.Contains(t, rec.Body.String(), want)
			onlyOwn(t, s, rec)
		})
	}
	own("list_traces", map[string]any{"limit": 100}, s.a.trace)
	own("list_traces", map[string]any{"filter": []any{map[string]any{"type": "string", "column": "name", "operator": "starts with", "value": "trace"}}}, s.a.trace)
	own("list_observations", map[string]any{"limit": 1000, "fields": "core,basic,io,trace_context"}, s.a.observation)
	own("list_observations", map[string]any{"traceId": sharedTrace}, sharedTrace)
	own("get_trace", map[string]any{"traceId": s.a.trace}, s.a.observation)
	own("get_trace", map[string]any{"traceId": sharedTrace}, "shared in "+s.a.ProjectID)
	own("list_prompts", map[string]any{}, `"data"`)
	own("query_metrics", map[string]any{"view": "observations", "dimensions": []any{map[string]any{"field": "traceId"}, map[string]any{"field": "traceName"}},
		"metrics": []any{map[string]any{"measure": "count", "aggregation": "count"}}, "fromTimestamp": window["fromTimestamp"],
		"toTimestamp": window["toTimestamp"], "config": map[string]any{"row_limit": 100}, "orderBy": []any{map[string]any{"field": "count_count", "direction": "desc"}}},
		s.a.trace)

	for name, args := range map[string]map[string]any{
		"get_trace":  {"traceId": s.b.trace},
		"get_prompt": {"name": "prompt-b"},
	} {
		rec, result := a.call(name, args)
		assert.Equal(t, true, result["isError"], "%s: %s", name, rec.Body.String())
		assert.Contains(t, rec.Body.String(), "not found", name)
		assert.NotContains(t, rec.Body.String(), "secret-of-b", name)
	}
	// What the route refuses, the tool reports.
	rec, result := a.call("list_traces", map[string]any{"filter": []any{map[string]any{"type": "string", "column": "nope", "operator": "=", "value": "x"}}})
	assert.Equal(t, true, result["isError"], rec.Body.String())
	assert.Contains(t, rec.Body.String(), "nope")
	rec, result = a.call("query_metrics", map[string]any{"view": "observations", "dimensions": []any{map[string]any{"field": "traceId"}},
		"metrics": []any{map[string]any{"measure": "count", "aggregation": "count"}}, "fromTimestamp": window["fromTimestamp"], "toTimestamp": window["toTimestamp"]})
	assert.Equal(t, true, result["isError"], rec.Body.String())
	assert.Contains(t, rec.Body.String(), "missing_top_n")

	// Tenant b's session is not a's to use or end.
	b := newMCPClient(t, s, s.b.ProjectAuth)
	b.auth = s.a.ProjectAuth
	rec = b.post(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "ping"})
	assert.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
	req := httptest.NewRequest(http.MethodDelete, mcp.Path, nil)
	req.Header.Set("Authorization", s.a.ProjectAuth)
	req.Header.Set("Mcp-Session-Id", b.session)
	del := httptest.NewRecorder()
	s.h.ServeHTTP(del, req)
	assert.Equal(t, http.StatusNotFound, del.Code)
	b.auth = s.b.ProjectAuth
	rec, result = b.call("get_prompt", map[string]any{"name": "prompt-b"})
	assert.NotEqual(t, true, result["isError"])
	assert.Contains(t, rec.Body.String(), "secret-of-b", "b's session and data are whole")
}
