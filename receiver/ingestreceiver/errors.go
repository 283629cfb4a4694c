package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/glassbox-dev/glassbox/internal/apierr"
)

// retryAfterSeconds is what a client is asked to wait when the pipeline
// refuses data for now; memory_limiter recovers within its check interval.
const retryAfterSeconds = 1

// requestError is a refusal with the HTTP status it is answered with; the
// gRPC path maps the same status to a gRPC code.
type requestError struct {
	status  int
	message string
}

func (e *requestError) Error() string { return e.message }

func newRequestError(status int, message string) *requestError {
	return &requestError{status: status, message: message}
}

// retryable statuses tell the client to come back; they carry Retry-After.
func retryable(statusCode int) bool {
	return statusCode == http.StatusTooManyRequests || statusCode == http.StatusServiceUnavailable
}

// writeJSONError answers with the error name of the status
// (internal/apierr, the API server's vocabulary).
func writeJSONError(w http.ResponseWriter, statusCode int, message string) {
	writeAPIError(w, apierr.New(statusCode, message))
}

func writeAPIError(w http.ResponseWriter, e *apierr.Error) {
	body, _ := json.Marshal(e.Body())
	if retryable(e.Status) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	writeBody(w, e.Status, contentTypeJSON, body)
}

func writeBody(w http.ResponseWriter, statusCode int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(statusCode)
	_, _ = w.Write(body)
}

// consumerErrorStatus maps an error of the next consumer to an HTTP status:
// a gRPC status keeps its meaning, a permanent error means the data will
// never be accepted, anything else is backpressure the client should retry.
func consumerErrorStatus(err error) int {
	if s, ok := status.FromError(err); ok {
		return httpStatusFromCode(s.Code())
	}
	if consumererror.IsPermanent(err) {
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// httpStatusFromCode follows the OTLP specification's retryable classes.
func httpStatusFromCode(c codes.Code) int {
	switch c {
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return http.StatusServiceUnavailable
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

func grpcCodeFromHTTP(statusCode int) codes.Code {
	switch statusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	}
	return codes.Internal
}

// grpcError turns a refusal or a consumer error into a gRPC status error.
func grpcError(err error) error {
	var re *requestError
	if errors.As(err, &re) {
		return status.Error(grpcCodeFromHTTP(re.status), re.message)
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return status.Error(grpcCodeFromHTTP(ae.Status), ae.Message)
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(grpcCodeFromHTTP(consumerErrorStatus(err)), err.Error())
}
