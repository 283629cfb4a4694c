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
)

func readRequest(t *testing.T, b *bodyReader, body []byte, encoding string) ([]byte, error) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", encoding)
	return b.read(req)
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
	_, panicked, err := b.drain("gzip", panicReader{})
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
