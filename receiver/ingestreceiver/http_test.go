package ingestreceiver

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/glassbox-dev/glassbox/internal/model"
)

const (
	ctJSON  = "application/json"
	ctProto = "application/x-protobuf"
)

type errorBody struct {
	Message string `json:"message"`
	Error   string `json:"error"`
}

func readError(t *testing.T, resp *http.Response, body []byte) errorBody {
	t.Helper()
	assert.Equal(t, ctJSON, resp.Header.Get("Content-Type"))
	var eb errorBody
	require.NoError(t, json.Unmarshal(body, &eb), string(body))
	return eb
}

func protoBody(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return b
}

func jsonBody(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	require.NoError(t, err)
	return b
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use, and a new
// encoder per call would dominate the fuzzers' time.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) { return zstd.NewWriter(nil) })

func zstded(t testing.TB, b []byte) []byte {
	enc, err := zstdEncoder()
	require.NoError(t, err)
	return enc.EncodeAll(b, nil)
}

func zlibbed(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func deflated(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.DefaultCompression)
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestHealth(t *testing.T) {
	s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
	req, _ := http.NewRequest(http.MethodGet, s.url+HealthPath, http.NoBody)
	resp, body := do(t, req) // no credentials needed
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"OK","version":"`+testVersion+`"}`, string(body))

	resp, body = post(t, s.url+HealthPath, nil, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	assert.Equal(t, errorBody{"Method not allowed", "MethodNotAllowedError"}, readError(t, resp, body))
}

func TestAuthentication(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	payload := jsonBody(t, newTraces(2))
	// The auth step's refusals carry a message alone, as Langfuse's do, and
	// are worded as the API server's (internal/apierr).
	invalid := errorBody{"Invalid credentials. Confirm that you've configured the correct host.", ""}
	malformed := errorBody{"Invalid authorization header, expected Basic base64(publicKey:secretKey). Confirm that you've configured the correct host.", ""}
	tests := []struct {
		name   string
		auth   string
		status int
		want   errorBody
	}{
		{name: "missing", auth: "", status: 401, want: errorBody{"No authorization header", ""}},
		{name: "wrong secret", auth: basic("pk-lf-1", "sk-lf-2"), status: 401, want: invalid},
		{name: "unknown key", auth: basic("pk-lf-9", "sk-lf-1"), status: 401, want: invalid},
		{name: "public key alone", auth: "Bearer pk-lf-1", status: 403,
			want: errorBody{"Access denied - insufficient permissions for this endpoint", ""}},
		{name: "not base64", auth: "Basic !!!", status: 401, want: malformed},
		{name: "organization key", auth: basic("pk-lf-org", "sk-lf-org"), status: 403,
			want: errorBody{"Access denied - this endpoint requires a project API key, not an organization key", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{TracesPath, MetricsPath} {
				resp, body := post(t, s.url+path, payload, map[string]string{"Authorization": tt.auth, "Content-Type": ctJSON})
				assert.Equal(t, tt.status, resp.StatusCode, path)
				assert.Equal(t, tt.want, readError(t, resp, body), path)
			}
		})
	}
	assert.Zero(t, sink.SpanCount(), "nothing refused reaches the pipeline")

	t.Run("verifier unavailable", func(t *testing.T) {
		s.verifier.fail(errors.New("control plane down"))
		defer s.verifier.fail(nil)
		resp, body := post(t, s.url+TracesPath, payload, map[string]string{"Content-Type": ctJSON})
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		assert.Equal(t, errorBody{"Service Unavailable", ""}, readError(t, resp, body))
	})
}

func TestIngestionVersionHeader(t *testing.T) {
	s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
	payload := jsonBody(t, newTraces(2))
	tests := []struct {
		header, value string
		status        int
	}{
		{"X-Langfuse-Ingestion-Version", "", 200},
		{"X-Langfuse-Ingestion-Version", "4", 200},
		{"X-Langfuse-Ingestion-Version", "3", 200},
		{"X-Langfuse-Ingestion-Version", " 4 ", 200},
		{"X-Langfuse-Ingestion-Version", "5", 400},
		{"X-Langfuse-Ingestion-Version", "four", 400},
		{"X-Langfuse-Ingestion-Version", "4.0", 400},
		{"x_langfuse_ingestion_version", "5", 400},
		{"x_langfuse_ingestion_version", "2", 200},
	}
	for _, tt := range tests {
		t.Run(tt.header+"="+tt.value, func(t *testing.T) {
			resp, body := post(t, s.url+TracesPath, payload, map[string]string{"Content-Type": ctJSON, tt.header: tt.value})
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			if tt.status == 400 {
				eb := readError(t, resp, body)
				assert.Equal(t, `Unsupported x-langfuse-ingestion-version: "`+tt.value+`". Maximum supported: "4".`, eb.Message)
				assert.Equal(t, "InvalidRequestError", eb.Error)
			}
		})
	}
}

func TestContentType(t *testing.T) {
	s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
	td := newTraces(2)
	tests := []struct {
		contentType string
		body        []byte
		status      int
	}{
		{"", jsonBody(t, td), 415},
		{"text/plain", jsonBody(t, td), 415},
		{"application/x-www-form-urlencoded", jsonBody(t, td), 415},
		{"application/json; charset=utf-8", jsonBody(t, td), 200},
		{"Application/JSON", jsonBody(t, td), 200},
		{"application/x-protobuf", protoBody(t, td), 200},
		{"application/x-protobuf; proto=opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest", protoBody(t, td), 200},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			resp, body := post(t, s.url+TracesPath, tt.body, map[string]string{"Content-Type": tt.contentType})
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			if tt.status == 415 {
				assert.Equal(t, "UnsupportedMediaTypeError", readError(t, resp, body).Error)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
	for _, path := range []string{TracesPath, MetricsPath} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(method, s.url+path, http.NoBody)
			resp, body := do(t, req)
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, "POST", resp.Header.Get("Allow"))
			assert.Equal(t, "MethodNotAllowedError", readError(t, resp, body).Error)
		}
	}
}

func TestSuccessResponses(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	td := newTraces(4)

	resp, body := post(t, s.url+TracesPath, jsonBody(t, td), map[string]string{"Content-Type": ctJSON})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ctJSON, resp.Header.Get("Content-Type"))
	assert.Equal(t, "{}", string(body))

	resp, body = post(t, s.url+TracesPath, protoBody(t, td), map[string]string{"Content-Type": ctProto})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ctProto, resp.Header.Get("Content-Type"))
	assert.Empty(t, body, "an empty ExportTraceServiceResponse")
	assert.Equal(t, 8, sink.SpanCount())

	// No spans at all: success without bothering the pipeline.
	for _, empty := range []string{`{}`, `{"resourceSpans":[]}`} {
		resp, body = post(t, s.url+TracesPath, []byte(empty), map[string]string{"Content-Type": ctJSON})
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "{}", string(body))
	}
	resp, _ = post(t, s.url+TracesPath, nil, map[string]string{"Content-Type": ctProto})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Len(t, sink.AllTraces(), 2)
}

func TestMetricsNoop(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	resp, body := post(t, s.url+MetricsPath, []byte(`{"resourceMetrics":[]}`), map[string]string{"Content-Type": ctJSON})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "{}", string(body))
	resp, body = post(t, s.url+MetricsPath, []byte{}, map[string]string{"Content-Type": ctProto})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, body)
	assert.Zero(t, sink.SpanCount())
}

func TestJSSDKPayload(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	raw := readTestdata(t, "js_sdk_export.json")
	resp, body := post(t, s.url+TracesPath, raw, map[string]string{
		"Content-Type":          ctJSON,
		"X-Langfuse-Sdk-Name":   "javascript",
		"X-Langfuse-Public-Key": "pk-lf-1",
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Len(t, sink.AllTraces(), 1)
	td := sink.AllTraces()[0]
	require.Equal(t, 2, td.SpanCount())

	res := td.ResourceSpans().At(0).Resource().Attributes()
	project, ok := res.Get(model.ProjectIDAttribute)
	require.True(t, ok)
	assert.Equal(t, testProject, project.Str(), "the client's project id is overwritten")
	pid, _ := res.Get("process.pid")
	assert.Equal(t, int64(4242), pid.Int())

	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	root, gen := spans.At(0), spans.At(1)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", root.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", root.SpanID().String())
	assert.True(t, root.ParentSpanID().IsEmpty())
	assert.Equal(t, pcommon.Timestamp(1763769600123456789), root.StartTimestamp(), "string nanos keep full precision")
	assert.Equal(t, uint32(257), root.Flags())
	tags, _ := root.Attributes().Get("langfuse.trace.tags")
	assert.Equal(t, []any{"a", "b"}, tags.Slice().AsRaw())
	assert.Equal(t, "00f067aa0ba902b7", gen.ParentSpanID().String())
	version, _ := gen.Attributes().Get("langfuse.observation.prompt.version")
	assert.Equal(t, pcommon.ValueTypeInt, version.Type(), "intValue sent as a JSON number")
	assert.Equal(t, int64(3), version.Int())
	assert.Equal(t, ptrace.StatusCodeError, gen.Status().Code())
	assert.Equal(t, 1, gen.Events().Len())
}

func TestRoundTrips(t *testing.T) {
	tests := []struct {
		name, contentType, encoding string
		encode                      func(testing.TB, []byte) []byte
		proto                       bool
	}{
		{name: "json", contentType: ctJSON},
		{name: "protobuf", contentType: ctProto, proto: true},
		{name: "json gzip", contentType: ctJSON, encoding: "gzip", encode: gzipped},
		{name: "protobuf gzip", contentType: ctProto, encoding: "gzip", encode: gzipped, proto: true},
		{name: "protobuf x-gzip", contentType: ctProto, encoding: "x-gzip", encode: gzipped, proto: true},
		{name: "json zstd", contentType: ctJSON, encoding: "zstd", encode: zstded},
		{name: "protobuf zstd", contentType: ctProto, encoding: "zstd", encode: zstded, proto: true},
		{name: "json deflate (zlib)", contentType: ctJSON, encoding: "deflate", encode: zlibbed},
		{name: "protobuf deflate (raw)", contentType: ctProto, encoding: "deflate", encode: deflated, proto: true},
		{name: "json identity", contentType: ctJSON, encoding: "identity"},
	}
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink.Reset()
			td := newTraces(6)
			body := jsonBody(t, td)
			if tt.proto {
				body = protoBody(t, td)
			}
			if tt.encode != nil {
				body = tt.encode(t, body)
			}
			resp, rb := post(t, s.url+TracesPath, body, map[string]string{"Content-Type": tt.contentType, "Content-Encoding": tt.encoding})
			require.Equal(t, http.StatusOK, resp.StatusCode, string(rb))
			require.Len(t, sink.AllTraces(), 1)

			want := ptrace.NewTraces()
			td.CopyTo(want)
			for _, rs := range want.ResourceSpans().All() {
				rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, testProject)
			}
			assert.Equal(t, protoBody(t, want), protoBody(t, sink.AllTraces()[0]))
		})
	}
}

func TestProjectIDIsOverwritten(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)
	// Two resources: one claims another project twice (duplicate keys survive
	// OTLP decoding), one claims nothing.
	payload := `{"resourceSpans":[
	 {"resource":{"attributes":[
	   {"key":"glassbox.project.id","value":{"stringValue":"victim"}},
	   {"key":"service.name","value":{"stringValue":"x"}},
	   {"key":"glassbox.project.id","value":{"stringValue":"victim-2"}}]},
	  "scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"a"}]}]},
	 {"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b8","name":"b"}]}]}]}`
	resp, body := post(t, s.url+TracesPath, []byte(payload), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Len(t, sink.AllTraces(), 1)
	rss := sink.AllTraces()[0].ResourceSpans()
	require.Equal(t, 2, rss.Len())
	for _, rs := range rss.All() {
		var values []string
		for k, v := range rs.Resource().Attributes().All() {
			if k == model.ProjectIDAttribute {
				values = append(values, v.Str())
			}
		}
		assert.Equal(t, []string{testProject}, values)
	}
}

// invalidSpans builds a request with 2 valid and 3 unusable spans.
func invalidSpans() ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	add := func(tid pcommon.TraceID, sid, parent pcommon.SpanID) {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetParentSpanID(parent)
	}
	tid := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	add(tid, pcommon.SpanID{1}, pcommon.SpanID{})
	add(pcommon.TraceID{}, pcommon.SpanID{2}, pcommon.SpanID{})
	add(tid, pcommon.SpanID{}, pcommon.SpanID{1})
	add(tid, pcommon.SpanID{4}, pcommon.SpanID{4})
	add(tid, pcommon.SpanID{5}, pcommon.SpanID{1})
	// A resource whose only span is unusable disappears with it.
	only := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	only.SetSpanID(pcommon.SpanID{6})
	return td
}

const rejectionMessage = "4 span(s) rejected: 2 with an all-zero trace id, 1 with an all-zero span id, 1 with a parent span id equal to its own span id"

func TestPartialSuccess(t *testing.T) {
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, nil, nil)

	resp, body := post(t, s.url+TracesPath, jsonBody(t, invalidSpans()), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ctJSON, resp.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"partialSuccess":{"rejectedSpans":"4","errorMessage":"`+rejectionMessage+`"}}`, string(body))

	resp, body = post(t, s.url+TracesPath, protoBody(t, invalidSpans()), map[string]string{"Content-Type": ctProto})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, ctProto, resp.Header.Get("Content-Type"))
	er := ptraceotlp.NewExportResponse()
	require.NoError(t, er.UnmarshalProto(body))
	assert.Equal(t, int64(4), er.PartialSuccess().RejectedSpans())
	assert.Equal(t, rejectionMessage, er.PartialSuccess().ErrorMessage())

	require.Len(t, sink.AllTraces(), 2)
	for _, td := range sink.AllTraces() {
		assert.Equal(t, 2, td.SpanCount())
		assert.Equal(t, 1, td.ResourceSpans().Len(), "emptied resource removed")
		spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		assert.Equal(t, pcommon.SpanID{1}, spans.At(0).SpanID())
		assert.Equal(t, pcommon.SpanID{5}, spans.At(1).SpanID())
	}

	// Nothing usable: still a partial success, and the pipeline sees nothing.
	sink.Reset()
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	resp, body = post(t, s.url+TracesPath, jsonBody(t, td), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":"1 span(s) rejected: 1 with an all-zero trace id"}}`, string(body))
	assert.Empty(t, sink.AllTraces())
}

func TestUndecodableBodies(t *testing.T) {
	s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
	valid := jsonBody(t, newTraces(2))
	tests := []struct {
		name, contentType, encoding string
		body                        []byte
		status                      int
		message                     string
	}{
		{name: "bad json", contentType: ctJSON, body: []byte(`{"resourceSpans":[`), status: 400, message: "failed to parse OTLP JSON trace export"},
		{name: "bad trace id", contentType: ctJSON, body: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}`), status: 400, message: "failed to parse OTLP JSON trace export"},
		{name: "bad protobuf", contentType: ctProto, body: []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, status: 400, message: "failed to parse OTLP protobuf trace export"},
		{name: "json as protobuf", contentType: ctProto, body: valid, status: 400, message: "failed to parse OTLP protobuf trace export"},
		{name: "bad gzip", contentType: ctJSON, encoding: "gzip", body: valid, status: 400, message: "failed to decompress gzip request body"},
		{name: "truncated gzip", contentType: ctJSON, encoding: "gzip", body: gzipped(t, valid)[:20], status: 400, message: "failed to decompress gzip request body"},
		{name: "bad zstd", contentType: ctJSON, encoding: "zstd", body: valid, status: 400, message: "failed to decompress zstd request body"},
		{name: "bad deflate", contentType: ctJSON, encoding: "deflate", body: valid, status: 400, message: "failed to decompress deflate request body"},
		{name: "unknown encoding", contentType: ctJSON, encoding: "br", body: valid, status: 415, message: `unsupported Content-Encoding "br"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, s.url+TracesPath, tt.body, map[string]string{"Content-Type": tt.contentType, "Content-Encoding": tt.encoding})
			require.Equal(t, tt.status, resp.StatusCode, string(body))
			assert.Contains(t, readError(t, resp, body).Message, tt.message)
		})
	}
}

// bomb compresses n MiB of zeros cheaply: gzip members and zstd frames may be
// concatenated, so one compressed MiB is repeated.
func bomb(t *testing.T, encoding string, n int) []byte {
	mib := make([]byte, 1<<20)
	switch encoding {
	case "gzip":
		return bytes.Repeat(gzipped(t, mib), n)
	case "zstd":
		return bytes.Repeat(zstded(t, mib), n)
	}
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	for range n {
		_, err := w.Write(mib)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestBodyLimits(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRequestBodyBytes = 256 << 10
	cfg.MaxDecompressedBodyBytes = 1 << 20
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, cfg, sink, nil, nil)

	big := bytes.Repeat([]byte("a"), 512<<10)
	resp, body := post(t, s.url+TracesPath, big, map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, errorBody{"request body exceeds the limit of 262144 bytes", "PayloadTooLargeError"}, readError(t, resp, body))

	// Decompression bombs: 64 MiB (deflate: 32 MiB) of zeros under the
	// compressed limit. Decoding must stop at the 1 MiB decompressed limit,
	// allocating a few MiB rather than the whole expansion.
	for _, tt := range []struct {
		encoding string
		mib      int
	}{{"gzip", 64}, {"zstd", 64}, {"deflate", 32}} {
		t.Run(tt.encoding, func(t *testing.T) {
			payload := bomb(t, tt.encoding, tt.mib)
			require.LessOrEqual(t, len(payload), int(cfg.MaxRequestBodyBytes))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, body := post(t, s.url+TracesPath, payload, map[string]string{"Content-Type": ctJSON, "Content-Encoding": tt.encoding})
			runtime.ReadMemStats(&after)
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.Equal(t, "decompressed body exceeds the limit of 1048576 bytes", readError(t, resp, body).Message)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d compressed bytes, %d bytes allocated", tt.encoding, len(payload), allocated)
			assert.Less(t, allocated, uint64(16<<20))
		})
	}
	assert.Zero(t, sink.SpanCount())
}

func TestConsumerErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter bool
	}{
		{name: "backpressure", err: errors.New("memory limit exceeded"), status: 503, retryAfter: true},
		{name: "permanent", err: consumererror.NewPermanent(errors.New("cannot map span")), status: 400},
		{name: "resource exhausted", err: status.Error(codes.ResourceExhausted, "queue is full"), status: 429, retryAfter: true},
		{name: "grpc unavailable", err: status.Error(codes.Unavailable, "exporter down"), status: 503, retryAfter: true},
		{name: "grpc internal", err: status.Error(codes.Internal, "bug"), status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReceiver(t, testConfig(), consumertest.NewErr(tt.err), nil, nil)
			resp, body := post(t, s.url+TracesPath, jsonBody(t, newTraces(2)), map[string]string{"Content-Type": ctJSON})
			require.Equal(t, tt.status, resp.StatusCode)
			eb := readError(t, resp, body)
			assert.Equal(t, tt.err.Error(), eb.Message)
			if tt.retryAfter {
				assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			} else {
				assert.Empty(t, resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestFallback(t *testing.T) {
	t.Run("with fallback", func(t *testing.T) {
		cfg := testConfig()
		id := fallbackID
		cfg.Fallback = &id
		sink := new(consumertest.TracesSink)
		s := startReceiver(t, cfg, sink, nil, map[component.ID]component.Component{fallbackID: fakeFallback{}})
		for _, path := range []string{"/api/public/projects", "/", "/api/public/otel/v1/logs", "/ui/traces", HealthPath} {
			req, _ := http.NewRequest(http.MethodGet, s.url+path, http.NoBody)
			resp, body := do(t, req)
			assert.Equal(t, http.StatusTeapot, resp.StatusCode, path)
			assert.Equal(t, "fallback "+path, string(body))
		}
		resp, _ := post(t, s.url+TracesPath, jsonBody(t, newTraces(2)), map[string]string{"Content-Type": ctJSON})
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, 2, sink.SpanCount())
	})
	t.Run("without fallback", func(t *testing.T) {
		s := startReceiver(t, testConfig(), consumertest.NewNop(), nil, nil)
		req, _ := http.NewRequest(http.MethodGet, s.url+"/api/public/projects", http.NoBody)
		resp, body := do(t, req)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		assert.Equal(t, errorBody{"Route not found", "LangfuseNotFoundError"}, readError(t, resp, body))
	})
}

func TestObsReport(t *testing.T) {
	tt := componenttestTelemetry(t)
	sink := new(consumertest.TracesSink)
	s := startReceiver(t, testConfig(), sink, tt, nil)
	resp, _ := post(t, s.url+TracesPath, jsonBody(t, invalidSpans()), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	assert.Equal(t, int64(2), sumMetric(t, tt, "otelcol_receiver_accepted_spans"))
	assert.Equal(t, int64(4), sumMetric(t, tt, "otelcol_receiver_refused_spans"))
}

func TestOverCapAnsweredByListener(t *testing.T) {
	// The listener's own cap (confighttp's max_request_body_size, set from
	// max_request_body_bytes) also answers 413 with a JSON body.
	cfg := testConfig()
	cfg.MaxRequestBodyBytes = 1 << 10
	r, err := newIngestReceiver(cfg, receivertest.NewNopSettings(Type), consumertest.NewNop())
	require.NoError(t, err)
	r.bodies = newBodyReader(1<<20, 1<<20) // let the listener's cap act first
	require.NoError(t, r.Start(context.Background(), newHost(map[component.ID]component.Component{authID: newFakeVerifier()})))
	t.Cleanup(func() { require.NoError(t, r.Shutdown(context.Background())) })

	resp, body := post(t, "http://"+r.httpAddr.String()+TracesPath, bytes.Repeat([]byte("a"), 4<<10), map[string]string{"Content-Type": ctJSON})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, errorBody{"request body exceeds the limit of 1024 bytes", "PayloadTooLargeError"}, readError(t, resp, body))
}

func componenttestTelemetry(t *testing.T) *componenttest.Telemetry {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	return tt
}

func sumMetric(t *testing.T, tt *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err)
	var total int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		total += dp.Value
	}
	return total
}
