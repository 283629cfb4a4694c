package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeTransport is the server-defined code of transport-level refusals
	// (missing or unknown session, bad headers), sent with an HTTP error.
	codeTransport = -32000
)

// rpcError is the error member of a JSON-RPC response.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// response is a JSON-RPC response; ID is null when the request's id could
// not be read.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

func errorResponse(id json.RawMessage, err *rpcError) response {
	if id == nil {
		id = nullID
	}
	return response{JSONRPC: "2.0", ID: id, Error: err}
}

// kind is what a JSON-RPC message is.
type kind int

const (
	kindRequest kind = iota
	kindNotification
	kindResponse
)

// message is one incoming JSON-RPC message. Absent members are nil; a
// present null is the JSON text null.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	kind    kind
}

// parseMessage decodes and classifies one message. On failure it returns
// the id it could read (for the error response) and an Invalid Request.
func parseMessage(raw json.RawMessage) (message, *rpcError) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		// Valid JSON (the body parsed) that is not an object, or whose
		// members have the wrong types.
		return message{ID: idOf(raw)}, errorf(codeInvalidRequest, "Invalid Request: a JSON-RPC message is an object with jsonrpc, and method or result/error: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return m, errorf(codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`)
	}
	switch {
	case m.Method != nil && m.Result == nil && m.Error == nil:
		if m.ID != nil && !validID(m.ID) {
			m.ID = nil
			return m, errorf(codeInvalidRequest, "Invalid Request: id must be a string or an integer")
		}
		if *m.Method == "" {
			return m, errorf(codeInvalidRequest, "Invalid Request: method must not be empty")
		}
		if m.Params != nil && string(m.Params) != "null" && !isObject(m.Params) {
			return m, errorf(codeInvalidRequest, "Invalid Request: params must be an object")
		}
		m.kind = kindNotification
		if m.ID != nil {
			m.kind = kindRequest
		}
	case m.Method == nil && m.ID != nil && (m.Result == nil) != (m.Error == nil):
		m.kind = kindResponse
	default:
		return m, errorf(codeInvalidRequest, "Invalid Request: expected a request (method and id), a notification (method) or a response (id and result or error)")
	}
	return m, nil
}

// validID accepts what MCP allows as a request id: a string or an integer
// (not null, not a fraction).
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return !bytes.ContainsAny(raw, ".eE")
	}
	return false
}

// idOf returns the id of a malformed message when it has a usable one.
func idOf(raw json.RawMessage) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.ID != nil && validID(probe.ID) {
		return probe.ID
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// splitBody tells a batch (a JSON array) from a single message; the body
// must already be valid JSON.
func splitBody(body []byte) (msgs []json.RawMessage, batch bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return []json.RawMessage{json.RawMessage(body)}, false, nil
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		return nil, true, err
	}
	return msgs, true, nil
}
