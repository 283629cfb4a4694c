// Package httpx holds what every API resource shares: the route table type,
// the router that turns it into an http.Handler (auth, JSON errors, 404/405,
// body limits, panic recovery), query parsing and pagination.
package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Error is an API error: what the client sent was wrong, or is not allowed.
// Handlers return it; the router writes it as {"message", "error"}. Its
// names and the auth step's messages are internal/apierr's, which the
// ingest receiver answers with too.
type Error = apierr.Error

// BadRequest is a 400; the message names the parameter at fault.
func BadRequest(format string, args ...any) *Error {
	return apierr.New(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// NotFound is a 404.
func NotFound(format string, args ...any) *Error {
	return apierr.New(http.StatusNotFound, fmt.Sprintf(format, args...))
}

// Forbidden is a 403: the key is valid but may not use this route.
func Forbidden(message string) *Error {
	return apierr.New(http.StatusForbidden, message)
}

// Conflict is a 409.
func Conflict(format string, args ...any) *Error {
	return apierr.New(http.StatusConflict, fmt.Sprintf(format, args...))
}

// NotFoundAs answers the stores' not-found verdict with a 404 that names
// what was not found; any other error is returned as it is, for ClientError
// to classify.
func NotFoundAs(err error, format string, args ...any) error {
	if !errors.Is(err, chstore.ErrNotFound) && !errors.Is(err, controlplane.ErrNotFound) {
		return err
	}
	return StoreErrorAs(err, func(*Error) string { return fmt.Sprintf(format, args...) })
}

// StoreErrorAs answers a store's verdict (not found, invalid, conflict)
// with the status ClientError gives it, in the words a handler has for it:
// words gets that answer and returns the message. Any other error is
// returned as it is.
func StoreErrorAs(err error, words func(verdict *Error) string) error {
	v, ok := ClientError(err)
	if !ok || v.Status >= http.StatusInternalServerError || !isStoreVerdict(err) {
		return err
	}
	e := apierr.New(v.Status, words(v))
	e.Cause = err
	return e
}

func isStoreVerdict(err error) bool {
	for _, verdict := range []error{chstore.ErrNotFound, chstore.ErrInvalid, controlplane.ErrNotFound, controlplane.ErrInvalid, controlplane.ErrConflict} {
		if errors.Is(err, verdict) {
			return true
		}
	}
	return false
}

var (
	errInternal         = apierr.New(http.StatusInternalServerError, apierr.MsgInternal)
	errMethodNotAllowed = apierr.New(http.StatusMethodNotAllowed, apierr.MsgMethodNotAllowed)
	errRouteNotFound    = apierr.New(http.StatusNotFound, apierr.MsgRouteNotFound)
	errClientGone       = apierr.New(http.StatusServiceUnavailable, apierr.MsgUnavailable)
	errClickHouseDown   = apierr.New(http.StatusServiceUnavailable,
		"ClickHouse is unavailable; traces, observations, scores and metrics cannot be read or written until it is back. Retry shortly.")
)

func payloadTooLarge(limit int64) *Error {
	return apierr.New(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body exceeds the limit of %d bytes", limit))
}
