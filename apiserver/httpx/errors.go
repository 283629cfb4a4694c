// Package httpx holds what every API resource shares: the route table type,
// the router that turns it into an http.Handler (auth, JSON errors, 404/405,
// body limits, panic recovery), query parsing and pagination.
package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"fmt"
	"net/http"
)

// Error names, as Langfuse spells them in the `error` field of an error body.
const (
	nameInvalidRequest   = "InvalidRequestError"
	nameForbidden        = "ForbiddenError"
	nameNotFound         = "LangfuseNotFoundError"
	nameMethodNotAllowed = "MethodNotAllowedError"
	nameConflict         = "LangfuseConflictError"
	namePayloadTooLarge  = "PayloadTooLargeError"
	nameInternal         = "InternalServerError"
)

// hostHint ends every 401 message: a wrong base URL is the usual cause of a
// key that does not verify.
const hostHint = " Confirm that you've configured the correct host."

// Error is an API error: what the client sent was wrong, or is not allowed.
// Handlers return it; the router writes it as {"message", "error"}.
type Error struct {
	Status  int
	Name    string // empty omits the `error` field, as Langfuse's 401 bodies do
	Message string
}

func (e *Error) Error() string {
	return e.Message
}

// BadRequest is a 400; the message names the parameter at fault.
func BadRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Name: nameInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a 404.
func NotFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Name: nameNotFound, Message: fmt.Sprintf(format, args...)}
}

// Forbidden is a 403: the key is valid but may not use this route.
func Forbidden(message string) *Error {
	return &Error{Status: http.StatusForbidden, Name: nameForbidden, Message: message}
}

// Conflict is a 409.
func Conflict(format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Name: nameConflict, Message: fmt.Sprintf(format, args...)}
}

func unauthorized(reason string) *Error {
	return &Error{Status: http.StatusUnauthorized, Message: reason + "." + hostHint}
}

var (
	errServiceUnavailable = &Error{Status: http.StatusServiceUnavailable, Message: "Service Unavailable"}
	errInternal           = &Error{Status: http.StatusInternalServerError, Name: nameInternal, Message: "Internal Server Error"}
	errMethodNotAllowed   = &Error{Status: http.StatusMethodNotAllowed, Name: nameMethodNotAllowed, Message: "Method not allowed"}
	errRouteNotFound      = NotFound("Route not found")
	errClickHouseDown     = &Error{Status: http.StatusServiceUnavailable, Name: "ServiceUnavailableError",
		Message: "ClickHouse is unavailable; traces, observations, scores and metrics cannot be read or written until it is back. Retry shortly."}
	errScopeForbidden = Forbidden("Access denied - insufficient permissions for this endpoint")
)

func payloadTooLarge(limit int64) *Error {
	return &Error{
		Status:  http.StatusRequestEntityTooLarge,
		Name:    namePayloadTooLarge,
		Message: fmt.Sprintf("Request body exceeds the limit of %d bytes", limit),
	}
}
