package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// Paths served by the receiver; everything else goes to the fallback.
const (
	TracesPath  = "/api/public/otel/v1/traces"
	MetricsPath = "/api/public/otel/v1/metrics"
	HealthPath  = "/api/public/health"
)

const (
	contentTypeJSON     = "application/json"
	contentTypeProtobuf = "application/x-protobuf"

	formatJSON     = "json"
	formatProtobuf = "protobuf"

	// maxIngestionVersion is the highest x-langfuse-ingestion-version served.
	maxIngestionVersion = 4

	msgUnsupportedT = "Invalid content type: use application/x-protobuf or application/json"
)

// HandlerProvider is implemented by an extension that serves the paths this
// receiver does not own (see Config.Fallback).
type HandlerProvider interface {
	Handler() http.Handler
}

// newHandler routes the receiver's paths; fallback serves all others. With a
// fallback the health path is the fallback's too, since it knows whether the
// stores behind the API answer.
func (r *ingestReceiver) newHandler(fallback http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(TracesPath, r.handleTraces)
	mux.HandleFunc(MetricsPath, r.handleMetrics)
	if fallback == nil {
		mux.HandleFunc(HealthPath, r.handleHealth)
		fallback = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSONError(w, http.StatusNotFound, apierr.MsgRouteNotFound)
		})
	}
	mux.Handle("/", fallback)
	return mux
}

func allowMethods(w http.ResponseWriter, req *http.Request, methods ...string) bool {
	for _, m := range methods {
		if req.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeJSONError(w, http.StatusMethodNotAllowed, apierr.MsgMethodNotAllowed)
	return false
}

func (r *ingestReceiver) handleHealth(w http.ResponseWriter, req *http.Request) {
	if !allowMethods(w, req, http.MethodGet, http.MethodHead) {
		return
	}
	body, _ := json.Marshal(struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}{"OK", r.settings.BuildInfo.Version})
	writeBody(w, http.StatusOK, contentTypeJSON, body)
}

// handleMetrics accepts OTLP metrics from authenticated clients and drops
// them, as Langfuse does: exporters that send both signals keep working.
func (r *ingestReceiver) handleMetrics(w http.ResponseWriter, req *http.Request) {
	if !allowMethods(w, req, http.MethodPost) {
		return
	}
	if _, err := r.authenticate(req.Context(), req.Header.Get("Authorization")); err != nil {
		writeRequestError(w, err)
		return
	}
	format, _ := requestFormat(req.Header.Get("Content-Type"))
	writeSuccess(w, format)
}

func (r *ingestReceiver) handleTraces(w http.ResponseWriter, req *http.Request) {
	if !allowMethods(w, req, http.MethodPost) {
		return
	}
	principal, err := r.authenticate(req.Context(), req.Header.Get("Authorization"))
	if err != nil {
		writeRequestError(w, err)
		return
	}
	if err = checkIngestionVersion(ingestionVersionHeader(req.Header)); err != nil {
		writeRequestError(w, err)
		return
	}
	format, ok := requestFormat(req.Header.Get("Content-Type"))
	if !ok {
		writeJSONError(w, http.StatusUnsupportedMediaType, msgUnsupportedT)
		return
	}
	body, err := r.bodies.read(req)
	if err != nil {
		writeRequestError(w, bodyError(err))
		return
	}
	exportReq, err := decodeTraces(format, body.Bytes())
	r.bodies.release(body)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	rej, err := r.ingest(req.Context(), r.obsHTTP, format, principal.ProjectID, exportReq.Traces())
	if err != nil {
		writeJSONError(w, consumerErrorStatus(err), err.Error())
		return
	}
	if rej.count == 0 {
		writeSuccess(w, format)
		return
	}
	resp := ptraceotlp.NewExportResponse()
	resp.PartialSuccess().SetRejectedSpans(rej.count)
	resp.PartialSuccess().SetErrorMessage(rej.message())
	writeResponse(w, format, resp)
}

// authenticate verifies the Authorization header value with the configured
// verifier and returns a project key's principal; a refusal is an
// *apierr.Error, worded as the API server words it.
func (r *ingestReceiver) authenticate(ctx context.Context, header string) (apikey.Principal, error) {
	publicKey, secretKey, err := apikey.ParseBasic(header)
	if err != nil {
		return apikey.Principal{}, apierr.Auth(err)
	}
	p, err := r.verifier.Verify(ctx, publicKey, secretKey)
	if err == nil {
		err = apikey.RequireProject(p)
	}
	if err != nil {
		return apikey.Principal{}, apierr.Auth(err)
	}
	return p, nil
}

// ingestionVersionHeader reads the header in both spellings SDKs use.
func ingestionVersionHeader(h http.Header) string {
	if v := h.Get("X-Langfuse-Ingestion-Version"); v != "" {
		return v
	}
	return h.Get("X_langfuse_ingestion_version")
}

// checkIngestionVersion accepts an absent header or an integer up to 4.
func checkIngestionVersion(value string) error {
	if value == "" {
		return nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || v > maxIngestionVersion {
		return newRequestError(http.StatusBadRequest, fmt.Sprintf(
			"Unsupported x-langfuse-ingestion-version: %q. Maximum supported: \"%d\".", value, maxIngestionVersion))
	}
	return nil
}

// requestFormat matches the content type by substring, as Langfuse does, so
// parameters such as charset do not matter.
func requestFormat(contentType string) (string, bool) {
	ct := strings.ToLower(contentType)
	switch {
	case strings.Contains(ct, contentTypeProtobuf):
		return formatProtobuf, true
	case strings.Contains(ct, contentTypeJSON):
		return formatJSON, true
	}
	return formatJSON, false
}

func decodeTraces(format string, body []byte) (ptraceotlp.ExportRequest, error) {
	req := ptraceotlp.NewExportRequest()
	if format == formatProtobuf {
		if err := req.UnmarshalProto(body); err != nil {
			return req, newRequestError(http.StatusBadRequest, "failed to parse OTLP protobuf trace export: "+err.Error())
		}
		return req, nil
	}
	if err := req.UnmarshalJSON(body); err != nil {
		return req, newRequestError(http.StatusBadRequest, "failed to parse OTLP JSON trace export: "+err.Error())
	}
	return req, nil
}

// bodyError maps a body read failure to its answer.
func bodyError(err error) error {
	var tooLarge *errBodyTooLarge
	var maxBytes *http.MaxBytesError
	var decode *decodeError
	var re *requestError
	switch {
	case errors.As(err, &tooLarge):
		return newRequestError(http.StatusRequestEntityTooLarge, tooLarge.Error())
	case errors.As(err, &maxBytes):
		return newRequestError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", maxBytes.Limit))
	case errors.As(err, &decode):
		return newRequestError(http.StatusBadRequest, decode.Error())
	case errors.As(err, &re):
		return re
	}
	return newRequestError(http.StatusBadRequest, "failed to read request body: "+err.Error())
}

func writeRequestError(w http.ResponseWriter, err error) {
	var re *requestError
	if errors.As(err, &re) {
		writeJSONError(w, re.status, re.message)
		return
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		writeAPIError(w, ae)
		return
	}
	writeJSONError(w, http.StatusInternalServerError, err.Error())
}

// writeSuccess answers an export with nothing rejected: {} for JSON, an empty
// ExportTraceServiceResponse for protobuf.
func writeSuccess(w http.ResponseWriter, format string) {
	if format == formatProtobuf {
		writeBody(w, http.StatusOK, contentTypeProtobuf, nil)
		return
	}
	writeBody(w, http.StatusOK, contentTypeJSON, []byte("{}"))
}

func writeResponse(w http.ResponseWriter, format string, resp ptraceotlp.ExportResponse) {
	var (
		body []byte
		err  error
		ct   = contentTypeJSON
	)
	if format == formatProtobuf {
		body, err = resp.MarshalProto()
		ct = contentTypeProtobuf
	} else {
		body, err = resp.MarshalJSON()
	}
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "failed to encode response: "+err.Error())
		return
	}
	writeBody(w, http.StatusOK, ct, body)
}
