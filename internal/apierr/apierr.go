// Package apierr is the one error vocabulary of Glassbox's HTTP surfaces:
// the ingest receiver, the API server and the authenticator of stock
// receivers answer with the names and messages held here, so one port
// never answers one case in two dialects.
//
// A body is {"message", "error"}, as Langfuse's public API writes it: the
// error names are Langfuse's error classes. Refusals of the auth step (no,
// bad or insufficient credentials, the key store down) carry a message
// alone, as Langfuse's auth step answers them.
package apierr // import "github.com/glassbox-dev/glassbox/internal/apierr"

import (
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// Error names, as Langfuse spells them in the `error` field of a body.
const (
	NameInvalidRequest       = "InvalidRequestError"
	NameUnauthorized         = "UnauthorizedError"
	NameForbidden            = "ForbiddenError"
	NameNotFound             = "LangfuseNotFoundError"
	NameMethodNotAllowed     = "MethodNotAllowedError"
	NameConflict             = "LangfuseConflictError"
	NamePayloadTooLarge      = "PayloadTooLargeError"
	NameUnsupportedMediaType = "UnsupportedMediaTypeError"
	NameTooManyRequests      = "TooManyRequestsError"
	NameServiceUnavailable   = "ServiceUnavailableError"
	NameInternal             = "InternalServerError"
)

// Name is the error name of a status; InternalServerError for any status
// without one of its own.
func Name(status int) string {
	switch status {
	case http.StatusBadRequest:
		return NameInvalidRequest
	case http.StatusUnauthorized:
		return NameUnauthorized
	case http.StatusForbidden:
		return NameForbidden
	case http.StatusNotFound:
		return NameNotFound
	case http.StatusMethodNotAllowed:
		return NameMethodNotAllowed
	case http.StatusConflict:
		return NameConflict
	case http.StatusRequestEntityTooLarge:
		return NamePayloadTooLarge
	case http.StatusUnsupportedMediaType:
		return NameUnsupportedMediaType
	case http.StatusTooManyRequests:
		return NameTooManyRequests
	case http.StatusServiceUnavailable:
		return NameServiceUnavailable
	}
	return NameInternal
}

// HostHint ends the 401 messages of a key that was sent but does not
// verify: a wrong base URL is the usual cause.
const HostHint = " Confirm that you've configured the correct host."

// Messages shared by every surface.
const (
	MsgMissingAuth        = "No authorization header"
	MsgMalformedAuth      = "Invalid authorization header, expected Basic base64(publicKey:secretKey)." + HostHint
	MsgInvalidCredentials = "Invalid credentials." + HostHint
	MsgNotProjectKey      = "Access denied - this endpoint requires a project API key, not an organization key"
	MsgScopeDenied        = "Access denied - insufficient permissions for this endpoint"
	MsgUnavailable        = "Service Unavailable"
	MsgRouteNotFound      = "Route not found"
	MsgMethodNotAllowed   = "Method not allowed"
	MsgInternal           = "Internal Server Error"
)

// Error is an answer: its status, its name (empty leaves the `error` field
// out) and its message, which is all a client is told. Cause, when set, is
// what it answers, for errors.Is and the server's log; it is never sent.
type Error struct {
	Status  int
	Name    string
	Message string
	Cause   error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// New is an answer with the name of its status.
func New(status int, message string) *Error {
	return &Error{Status: status, Name: Name(status), Message: message}
}

// Body is the JSON form of an answer.
type Body struct {
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

// Body returns the JSON form of e.
func (e *Error) Body() Body {
	return Body{Message: e.Message, Error: e.Name}
}

// Auth is the answer to credentials that did not pass, from the errors of
// internal/apikey: no header 401, a malformed one or a key pair that does
// not verify 401, a key that may not act on a project's data
// (apikey.RequireProject) 403, a public key alone where a key pair is
// needed 403. Any other error means the key store could not be asked: 503,
// and the cause stays out of the message.
func Auth(err error) *Error {
	e := &Error{Cause: err}
	switch {
	case errors.Is(err, apikey.ErrMissingCredentials):
		e.Status, e.Message = http.StatusUnauthorized, MsgMissingAuth
	case errors.Is(err, apikey.ErrMalformedHeader):
		e.Status, e.Message = http.StatusUnauthorized, MsgMalformedAuth
	case errors.Is(err, apikey.ErrInvalidCredentials):
		e.Status, e.Message = http.StatusUnauthorized, MsgInvalidCredentials
	case errors.Is(err, apikey.ErrNotProjectKey):
		e.Status, e.Message = http.StatusForbidden, MsgNotProjectKey
	case errors.Is(err, apikey.ErrSecretRequired):
		e.Status, e.Message = http.StatusForbidden, MsgScopeDenied
	default:
		e.Status, e.Message = http.StatusServiceUnavailable, MsgUnavailable
	}
	return e
}
