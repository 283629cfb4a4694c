package ingestreceiver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func readRequest(t *testing.T, b *bodyReader, body []byte, encoding string) ([]byte, error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", encoding)
	buf, err := b.read(req)
	if err != nil {
		return nil, err
	}
	defer b.release(buf)
	return bytes.Clone(buf.Bytes()), nil
}

func TestLimitsAreInclusive(t *testing.T) {
	b := newBodyReader(100, 200)
	exact := bytes.Repeat([]byte("x"), 100)
	got, err := readRequest(t, b, exact, "")
	require.NoError(t, err)
	assert.Equal(t, exact, got)

	_, err = readRequest(t, b, append(exact, 'x'), "")
	var tooLarge *errBodyTooLarge
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, "request body", tooLarge.what)

	plain := bytes.Repeat([]byte("y"), 200)
	got, err = readRequest(t, b, gzipped(t, plain), "gzip")
	require.NoError(t, err)
	assert.Equal(t, plain, got)

	_, err = readRequest(t, b, gzipped(t, append(plain, 'y')), "gzip")
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, "decompressed body", tooLarge.what)
}

func TestStreamingZstdUnderSmallLimit(t *testing.T) {
	// Streaming encoders declare an 8 MiB window whatever the content size.
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	require.NoError(t, err)
	plain := bytes.Repeat([]byte("span "), 10_000)
	_, err = w.Write(plain)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	b := newBodyReader(64<<10, 64<<10)
	for range 3 { // pooled decoders are reused
		got, err := readRequest(t, b, buf.Bytes(), "zstd")
		require.NoError(t, err)
		assert.Equal(t, plain, got)
	}
}

func TestZstdDecoderReusedAfterError(t *testing.T) {
	b := newBodyReader(1<<20, 1<<20)
	_, err := readRequest(t, b, []byte("not zstd at all"), "zstd")
	var de *decodeError
	require.ErrorAs(t, err, &de)
	plain := []byte(`{"resourceSpans":[]}`)
	got, err := readRequest(t, b, zstded(t, plain), "zstd")
	require.NoError(t, err)
	assert.Equal(t, plain, got)
}

type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("hostile input") }

func TestDecoderPanicIsADecodeError(t *testing.T) {
	b := newBodyReader(10, 10)
	panicked, err := b.drain(new(bytes.Buffer), "gzip", panicReader{})
	assert.True(t, panicked)
	var de *decodeError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), "hostile input")
}

func TestReadFailureIsABadRequest(t *testing.T) {
	b := newBodyReader(10, 10)
	req := httptest.NewRequest(http.MethodPost, TracesPath, io.NopCloser(failingReader{}))
	_, err := b.read(req)
	require.Error(t, err)
	re := bodyError(err)
	var rerr *requestError
	require.True(t, errors.As(re, &rerr))
	assert.Equal(t, http.StatusBadRequest, rerr.status)
	assert.Equal(t, "failed to read request body: connection reset", rerr.message)
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestPooledBodiesHoldOnlyTheirRequest(t *testing.T) {
	b := newBodyReader(1<<20, 1<<20)
	large := bytes.Repeat([]byte("a"), 100_000)
	small := []byte("bc")
	for _, c := range []struct {
		body     []byte
		encoding string
		want     []byte
	}{
		{large, "", large}, {small, "", small}, {gzipped(t, large), "gzip", large}, {small, "", small},
	} {
		got, err := readRequest(t, b, c.body, c.encoding)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "a reused buffer holds its own request's bytes only")
	}
}

// The handler hands the body back before the spans go down the pipeline,
// which is sound only while the OTLP decoders copy what they keep.
func TestDecodedTracesDoNotShareTheBody(t *testing.T) {
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("chat-completion")
	span.SetTraceID(pcommon.TraceID{1, 2, 3})
	span.SetSpanID(pcommon.SpanID{4, 5, 6})
	span.Attributes().PutStr("langfuse.observation.input", "what is the capital of France?")
	span.Attributes().PutEmptyBytes("raw").FromRaw([]byte{7, 8, 9})
	span.Attributes().PutEmptySlice("langfuse.trace.tags").AppendEmpty().SetStr("bench")
	want, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	proto, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	for format, body := range map[string][]byte{formatProtobuf: proto, formatJSON: bytes.Clone(want)} {
		req, err := decodeTraces(format, body)
		require.NoError(t, err)
		for i := range body {
			body[i] = 'x'
		}
		got, err := (&ptrace.JSONMarshaler{}).MarshalTraces(req.Traces())
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), format)
	}
}

func TestOversizeBuffersAreNotPooled(t *testing.T) {
	b := newBodyReader(maxPooledBody*2, maxPooledBody*2)
	req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(make([]byte, maxPooledBody+1)))
	buf, err := b.read(req)
	require.NoError(t, err)
	b.release(buf)
	if again, _ := b.buffers.Get().(*bytes.Buffer); again != nil {
		assert.LessOrEqual(t, again.Cap(), maxPooledBody)
	}
}
