package ingestreceiver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// encodings a fuzz input may be labelled with; bit 2 of mode says whether the
// input is compressed before sending (exercising the parsers behind the
// decompressors) or sent as is (exercising the decompressors on garbage).
var fuzzEncodings = []struct {
	name     string
	compress func(testing.TB, []byte) []byte
}{
	{"", nil},
	{"gzip", gzipped},
	{"zstd", zstded},
	{"deflate", zlibbed},
}

func fuzzHandler(t testing.TB) http.Handler {
	cfg := createDefaultConfig().(*Config)
	cfg.MaxRequestBodyBytes = 1 << 20
	cfg.MaxDecompressedBodyBytes = 4 << 20
	r, err := newIngestReceiver(cfg, receivertest.NewNopSettings(Type), consumertest.NewNop())
	require.NoError(t, err)
	r.verifier = newFakeVerifier()
	return r.newHandler(nil)
}

func fuzzDecode(f *testing.F, contentType string, seeds [][]byte) {
	for _, seed := range seeds {
		for mode := range uint8(8) {
			enc := fuzzEncodings[mode%4]
			body := seed
			if mode&4 == 0 && enc.compress != nil {
				body = enc.compress(f, seed)
			}
			f.Add(body, mode)
		}
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		enc := fuzzEncodings[mode%4]
		if mode&4 != 0 && enc.compress != nil {
			body = enc.compress(t, body)
		}
		req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(body))
		req.Header.Set("Authorization", basic("pk-lf-1", "sk-lf-1"))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Content-Encoding", enc.name)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %s body %q: %s", rec.Code, enc.name, body, rec.Body.String())
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	fuzzDecode(f, ctJSON, [][]byte{
		readTestdata(f, "js_sdk_export.json"),
		jsonBody(f, invalidSpans()),
		[]byte(`{}`),
		[]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"","spanId":"x"}]}]}]}`),
		[]byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":{"kvlistValue":{"values":[{"key":"a","value":{"intValue":"9223372036854775808"}}]}}}]}}]}`),
	})
}

func FuzzDecodeProtobuf(f *testing.F) {
	fuzzDecode(f, ctProto, [][]byte{
		protoBody(f, newTraces(4)),
		protoBody(f, invalidSpans()),
		{},
		{0x0a, 0x02, 0x0a, 0x00},
	})
}
