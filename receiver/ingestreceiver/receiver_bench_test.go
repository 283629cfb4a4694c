package ingestreceiver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkTraces measures one export of 100 spans through the handler,
// authentication (fake verifier) to the next consumer (nop).
func BenchmarkTraces(b *testing.B) {
	td := newTraces(100)
	cases := []struct {
		name, contentType, encoding string
		body                        []byte
	}{
		{"json", ctJSON, "", jsonBody(b, td)},
		{"protobuf", ctProto, "", protoBody(b, td)},
		{"protobuf_gzip", ctProto, "gzip", gzipped(b, protoBody(b, td))},
		{"protobuf_zstd", ctProto, "zstd", zstded(b, protoBody(b, td))},
	}
	h := fuzzHandler(b)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(c.body))
				req.Header.Set("Authorization", basic("pk-lf-1", "sk-lf-1"))
				req.Header.Set("Content-Type", c.contentType)
				req.Header.Set("Content-Encoding", c.encoding)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
