// Package mcp serves the Model Context Protocol over Streamable HTTP at
// /api/public/mcp: JSON-RPC 2.0 over POST, answered with one JSON body (no
// server-initiated streams), authenticated with the project's key pair like
// every project route. Its tools read prompts, traces, observations and
// metrics by calling the API's own routes, so they answer what those
// routes answer to the same key.
package mcp // import "github.com/glassbox-dev/glassbox/apiserver/mcp"

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

// Path is the MCP endpoint.
const Path = "/api/public/mcp"

// Protocol revisions served, newest first. 2025-06-18 dropped JSON-RPC
// batches and added structuredContent and titles.
const (
	version20250618 = "2025-06-18"
	version20250326 = "2025-03-26"
)

var versions = []string{version20250618, version20250326}

func supported(v string) bool {
	return v == version20250618 || v == version20250326
}

// maxBatch bounds the messages of one 2025-03-26 batch.
const maxBatch = 100

// HTTP headers of the transport.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
)

// Config configures the endpoint.
type Config struct {
	// PublicURL is the base URL users reach Glassbox at; browsers' Origin
	// must be its origin (or a loopback one).
	PublicURL string
	// Version is the server version reported at initialize.
	Version string
}

type server struct {
	cfg      Config
	origin   string // of PublicURL, "" when none is configured
	tools    []tool
	byName   map[string]*tool
	sessions *sessions
	logger   *zap.Logger
}

// Routes returns the MCP endpoint's routes; api is the route table whose
// routes the tools call.
func Routes(cfg Config, api []httpx.Route, secrets Secrets, logger *zap.Logger) []httpx.Route {
	return newServer(cfg, api, secrets, logger, time.Now).routes()
}

func (s *server) routes() []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: Path, Access: httpx.ProjectKey, Handler: s.post,
			Doc: httpx.Doc{OperationID: "mcp_post", Tag: "MCP", Body: Message{}, Response: Message{},
				Summary: "MCP over Streamable HTTP: one JSON-RPC message (or a 2025-03-26 batch) per request; tools to read prompts, traces, observations and metrics (docs/mcp.md)."},
		},
		{
			Method: http.MethodDelete, Path: Path, Access: httpx.ProjectKey, Handler: s.delete,
			Doc: httpx.Doc{OperationID: "mcp_delete", Tag: "MCP", Response: struct{}{}, Status: http.StatusNoContent,
				Summary: "End the MCP session named by the Mcp-Session-Id header."},
		},
	}
}

// Message documents the JSON-RPC 2.0 message of the OpenAPI document.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func newServer(cfg Config, api []httpx.Route, secrets Secrets, logger *zap.Logger, now func() time.Time) *server {
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &server{cfg: cfg, tools: buildTools(api), byName: map[string]*tool{}, sessions: newSessions(secrets, now), logger: logger}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
		s.origin = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	for i := range s.tools {
		s.byName[s.tools[i].Name] = &s.tools[i]
	}
	return s
}

// reply writes a transport answer: status, the MCP headers, and body as
// JSON unless it is nil.
func reply(status int, sessionID string, body any) any {
	return httpx.Respond(func(w http.ResponseWriter) {
		h := w.Header()
		// Browser clients read the session id from the answer.
		h.Set("Access-Control-Expose-Headers", headerSession)
		if sessionID != "" {
			h.Set(headerSession, sessionID)
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		buf, err := json.Marshal(body)
		if err != nil {
			status = http.StatusInternalServerError
			buf, _ = json.Marshal(errorResponse(nil, errorf(codeInternalError, "Internal error")))
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(buf)
	})
}

// refuse is a transport-level refusal: an HTTP error status with a
// JSON-RPC error that has no id.
func refuse(status, code int, format string, args ...any) any {
	return reply(status, "", errorResponse(nil, errorf(code, format, args...)))
}

// checkHeaders applies the checks every method shares: Origin (DNS
// rebinding) and, when a body comes, its type and what the client accepts.
func (s *server) checkHeaders(r *http.Request, withBody bool) any {
	if origin := r.Header.Get("Origin"); origin != "" && !s.allowedOrigin(origin) {
		return refuse(http.StatusForbidden, codeTransport,
			"Origin %q is not allowed: browsers may call the MCP endpoint only from the configured public_url or a loopback address", origin)
	}
	if !withBody {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, codeTransport, "Content-Type must be application/json")
	}
	if accept := r.Header.Get("Accept"); accept != "" && !acceptsJSON(accept) {
		return refuse(http.StatusNotAcceptable, codeTransport, "Accept must include application/json: answers are JSON")
	}
	return nil
}

// allowedOrigin admits the public URL's origin and loopback origins: a
// rebinding attack's page has the attacker's origin, never these.
func (s *server) allowedOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if s.origin != "" && strings.ToLower(u.Scheme+"://"+u.Host) == s.origin {
		return true
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func acceptsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "application/json" || mt == "application/*" || mt == "*/*") {
			return true
		}
	}
	return false
}

// session finds the request's session: a refusal when there is none (400)
// or it is not live for this project (404, after which the client starts
// a new one), and a 400 when the protocol version header disagrees.
func (s *server) session(r *http.Request) (*session, any, error) {
	id := r.Header.Get(headerSession)
	if id == "" {
		return nil, refuse(http.StatusBadRequest, codeTransport, "Mcp-Session-Id header is required: send initialize first"), nil
	}
	sess, err := s.sessions.lookup(r.Context(), httpx.ProjectID(r), id)
	if err != nil {
		return nil, nil, err
	}
	if sess == nil {
		return nil, refuse(http.StatusNotFound, codeTransport, "Session not found: it ended or expired; send initialize to start a new one"), nil
	}
	if v := r.Header.Get(headerProtocol); v != "" && v != sess.version {
		if !supported(v) {
			return nil, refuse(http.StatusBadRequest, codeTransport, "Unsupported MCP-Protocol-Version %q; supported: %s", v, strings.Join(versions, ", ")), nil
		}
		return nil, refuse(http.StatusBadRequest, codeTransport, "MCP-Protocol-Version %q is not the session's negotiated version %s", v, sess.version), nil
	}
	return sess, nil, nil
}

func (s *server) post(r *http.Request) (any, error) {
	if refusal := s.checkHeaders(r, true); refusal != nil {
		return refusal, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err // over the body limit: the router answers 413
	}
	if !json.Valid(body) {
		return refuse(http.StatusBadRequest, codeParseError, "Parse error: the body is not valid JSON"), nil
	}
	raws, batch, err := splitBody(body)
	if err != nil {
		return refuse(http.StatusBadRequest, codeInvalidRequest, "Invalid Request: %v", err), nil
	}
	var msg message
	if !batch {
		var rpcErr *rpcError
		if msg, rpcErr = parseMessage(raws[0]); rpcErr != nil {
			return reply(http.StatusBadRequest, "", errorResponse(msg.ID, rpcErr)), nil
		}
		if msg.kind == kindRequest && *msg.Method == "initialize" {
			return s.initialize(r, msg)
		}
	}
	sess, refusal, err := s.session(r)
	if refusal != nil || err != nil {
		return refusal, err
	}
	if !batch {
		if msg.kind != kindRequest {
			return reply(http.StatusAccepted, "", nil), nil
		}
		return reply(http.StatusOK, "", s.handle(r, sess, msg)), nil
	}
	switch {
	case sess.version != version20250326:
		return refuse(http.StatusBadRequest, codeInvalidRequest, "Invalid Request: protocol version %s takes one JSON-RPC message per request, not a batch", sess.version), nil
	case len(raws) == 0:
		return refuse(http.StatusBadRequest, codeInvalidRequest, "Invalid Request: empty batch"), nil
	case len(raws) > maxBatch:
		return refuse(http.StatusBadRequest, codeInvalidRequest, "Invalid Request: a batch holds at most %d messages", maxBatch), nil
	}
	var out []response
	for _, raw := range raws {
		msg, rpcErr := parseMessage(raw)
		switch {
		case rpcErr != nil:
			out = append(out, errorResponse(msg.ID, rpcErr))
		case msg.kind != kindRequest:
		case *msg.Method == "initialize":
			out = append(out, errorResponse(msg.ID, errorf(codeInvalidRequest, "Invalid Request: initialize must not be part of a batch")))
		default:
			out = append(out, s.handle(r, sess, msg))
		}
	}
	if len(out) == 0 {
		return reply(http.StatusAccepted, "", nil), nil
	}
	return reply(http.StatusOK, "", out), nil
}

func (s *server) delete(r *http.Request) (any, error) {
	if refusal := s.checkHeaders(r, false); refusal != nil {
		return refusal, nil
	}
	sess, refusal, err := s.session(r)
	if refusal != nil || err != nil {
		return refusal, err
	}
	s.sessions.end(sess)
	return reply(http.StatusNoContent, "", nil), nil
}

type initializeParams struct {
	ProtocolVersion *string        `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ClientInfo      map[string]any `json:"clientInfo"`
}

// initialize negotiates the version and starts a session. A session id
// sent along (a client recovering from a 404) is ignored.
func (s *server) initialize(r *http.Request, msg message) (any, error) {
	var p initializeParams
	if err := json.Unmarshal(paramsOrEmpty(msg.Params), &p); err != nil || p.ProtocolVersion == nil {
		return reply(http.StatusOK, "", errorResponse(msg.ID, errorf(codeInvalidParams, "Invalid params: initialize needs protocolVersion (a string), capabilities and clientInfo"))), nil
	}
	version := *p.ProtocolVersion
	if !supported(version) {
		// Answer with the newest; the client disconnects if it cannot speak it.
		version = versions[0]
	}
	sess, err := s.sessions.create(r.Context(), httpx.ProjectID(r), version)
	if err != nil {
		return nil, err
	}
	result := map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": "glassbox", "version": s.cfg.Version},
		"instructions": "Glassbox holds this project's LLM traces, observations, scores and prompts. " +
			"Use list_traces and list_observations to find data (filters, time windows), get_trace for one trace's tree, " +
			"query_metrics for aggregates such as cost, latency percentiles and error counts, and list_prompts/get_prompt for prompts.",
	}
	return reply(http.StatusOK, sess.id, response{JSONRPC: "2.0", ID: msg.ID, Result: result}), nil
}

func paramsOrEmpty(params json.RawMessage) json.RawMessage {
	if params == nil || string(params) == "null" {
		return json.RawMessage("{}")
	}
	return params
}

// handle answers one request of a live session.
func (s *server) handle(r *http.Request, sess *session, msg message) response {
	result, rpcErr := s.dispatch(r, sess, *msg.Method, paramsOrEmpty(msg.Params))
	if rpcErr != nil {
		return errorResponse(msg.ID, rpcErr)
	}
	return response{JSONRPC: "2.0", ID: msg.ID, Result: result}
}

func (s *server) dispatch(r *http.Request, sess *session, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		tools := make([]tool, len(s.tools))
		copy(tools, s.tools)
		if sess.version == version20250326 {
			for i := range tools {
				tools[i].Title = "" // titles came with 2025-06-18
			}
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		return s.callTool(r, sess, params)
	}
	return nil, errorf(codeMethodNotFound, "Method not found: %s", method)
}

type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolResult is a tools/call result.
type toolResult struct {
	Content           []textContent  `json:"content"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func toolError(message string) toolResult {
	return toolResult{Content: []textContent{{Type: "text", Text: message}}, IsError: true}
}

// callTool runs a tool. Unknown tools and arguments that do not match the
// input schema are protocol errors; what the route refuses or fails at is
// a result with isError, which the model reads.
func (s *server) callTool(r *http.Request, sess *session, params json.RawMessage) (any, *rpcError) {
	var p callParams
	if err := json.Unmarshal(params, &p); err != nil || p.Name == nil {
		return nil, errorf(codeInvalidParams, "Invalid params: tools/call needs name (a string) and arguments (an object)")
	}
	t, ok := s.byName[*p.Name]
	if !ok {
		return nil, errorf(codeInvalidParams, "Unknown tool: %s", *p.Name)
	}
	args, err := decodeArguments(p.Arguments)
	if err == nil {
		err = t.InputSchema.checkObject("", args)
	}
	if err != nil {
		return nil, errorf(codeInvalidParams, "Invalid arguments for %s: %v", t.Name, err)
	}
	result, err := t.run(r, args)
	if err != nil {
		return s.failed(r, t, err), nil
	}
	text, err := json.Marshal(result)
	if err != nil {
		return s.failed(r, t, err), nil
	}
	out := toolResult{Content: []textContent{{Type: "text", Text: string(text)}}}
	if sess.version != version20250326 {
		out.StructuredContent = result // came with 2025-06-18
	}
	return out, nil
}

// decodeArguments reads tools/call arguments, numbers as written; a null
// argument counts as absent, as models often send them for optional ones.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if raw == nil || string(raw) == "null" {
		return args, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return nil, errors.New("arguments must be an object")
	}
	for name, v := range args {
		if v == nil {
			delete(args, name)
		}
	}
	return args, nil
}

// failed turns a tool's error into a result the model can read: what the
// route would have told an HTTP client, or a generic message (logged with
// the detail) for unexpected failures.
func (s *server) failed(r *http.Request, t *tool, err error) toolResult {
	var tooLarge errTooLarge
	if errors.As(err, &tooLarge) {
		return toolError(tooLarge.Error())
	}
	if apiErr, ok := httpx.ClientError(err); ok {
		return toolError(apiErr.Message)
	}
	if errors.Is(r.Context().Err(), context.Canceled) {
		return toolError("The request was cancelled")
	}
	s.logger.Error("MCP tool failed", zap.String("tool", t.Name), zap.Error(err))
	return toolError("Internal Server Error")
}
