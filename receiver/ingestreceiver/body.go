package ingestreceiver // import "github.com/glassbox-dev/glassbox/receiver/ingestreceiver"

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// errBodyTooLarge marks a body over one of the two limits.
type errBodyTooLarge struct {
	what  string // "request body" or "decompressed body"
	limit int64
}

func (e *errBodyTooLarge) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %d bytes", e.what, e.limit)
}

// cappedReader reads at most limit bytes from r and fails with tooLarge when
// r holds more, so neither a long body nor a decompression bomb is buffered
// beyond its limit.
type cappedReader struct {
	r        io.Reader
	left     int64
	tooLarge error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var probe [1]byte
		n, err := c.r.Read(probe[:])
		if n > 0 {
			return 0, c.tooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// bodyReader reads request bodies under the receiver's two limits into
// pooled buffers: a fresh buffer per request was a sixth of the collector's
// allocated bytes, each zeroed on allocation and collected soon after.
type bodyReader struct {
	maxCompressed   int64
	maxDecompressed int64
	zstdDecoders    sync.Pool
	buffers         sync.Pool // *bytes.Buffer
}

// maxPooledBody bounds the buffers kept for reuse, so that one large request
// does not pin its memory once it is answered.
const maxPooledBody = 4 << 20

func newBodyReader(maxCompressed, maxDecompressed int64) *bodyReader {
	return &bodyReader{maxCompressed: maxCompressed, maxDecompressed: maxDecompressed}
}

// decodeError is a body that could not be decompressed.
type decodeError struct {
	encoding string
	err      error
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("failed to decompress %s request body: %v", e.encoding, e.err)
}

func (e *decodeError) Unwrap() error { return e.err }

// read returns the decompressed body in a buffer of the pool, which the
// caller hands back through release once nothing refers to its bytes (the
// OTLP decoders copy what they keep). Errors are *errBodyTooLarge,
// *http.MaxBytesError (the listener's own cap), *decodeError, or
// *requestError for an unsupported Content-Encoding.
func (b *bodyReader) read(r *http.Request) (*bytes.Buffer, error) {
	buf, _ := b.buffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if err := b.readInto(buf, r); err != nil {
		b.release(buf)
		return nil, err
	}
	return buf, nil
}

// release returns a buffer that read gave out to the pool.
func (b *bodyReader) release(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		b.buffers.Put(buf)
	}
}

func (b *bodyReader) readInto(buf *bytes.Buffer, r *http.Request) error {
	raw := &cappedReader{r: r.Body, left: b.maxCompressed, tooLarge: &errBodyTooLarge{what: "request body", limit: b.maxCompressed}}
	encoding := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if encoding == "" || encoding == "identity" {
		return readAll(buf, raw, r.ContentLength, b.maxCompressed)
	}
	return b.decompress(buf, encoding, raw)
}

func (b *bodyReader) decompress(buf *bytes.Buffer, encoding string, raw io.Reader) error {
	switch encoding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return b.classify(encoding, err)
		}
		_, err = b.drain(buf, encoding, zr)
		return err
	case "deflate":
		_, err := b.drain(buf, encoding, newDeflateReader(raw))
		return err
	case "zstd":
		zr, err := b.zstdDecoder(raw)
		if err != nil {
			return b.classify(encoding, err)
		}
		panicked, err := b.drain(buf, encoding, zr)
		if !panicked {
			b.releaseZstd(zr)
		}
		return err
	}
	return newRequestError(http.StatusUnsupportedMediaType,
		fmt.Sprintf("unsupported Content-Encoding %q: use gzip, zstd, deflate or none", encoding))
}

// drain reads a decoder to the end under the decompressed limit. Some
// decoders panic on hostile input instead of failing; that is a decode error,
// and the decoder is not reused.
func (b *bodyReader) drain(buf *bytes.Buffer, encoding string, dec io.Reader) (panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, err = true, &decodeError{encoding: encoding, err: fmt.Errorf("decoder panic: %v", p)}
		}
	}()
	capped := &cappedReader{r: dec, left: b.maxDecompressed, tooLarge: b.decompressedTooLarge()}
	if err := readAll(buf, capped, -1, b.maxDecompressed); err != nil {
		return false, b.classify(encoding, err)
	}
	return false, nil
}

// classify keeps limit errors as they are and reports anything else as a
// decompression failure. zstd enforces the decompressed limit itself, from
// the sizes a frame declares, before producing any output.
func (b *bodyReader) classify(encoding string, err error) error {
	var tooLarge *errBodyTooLarge
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge), errors.As(err, &maxBytes):
		return err
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return b.decompressedTooLarge()
	}
	return &decodeError{encoding: encoding, err: err}
}

func (b *bodyReader) decompressedTooLarge() error {
	return &errBodyTooLarge{what: "decompressed body", limit: b.maxDecompressed}
}

// readAll appends r to buf. A known size is reserved with room for the
// last, empty read, which would otherwise double a buffer that is just full.
func readAll(buf *bytes.Buffer, r io.Reader, sizeHint, limit int64) error {
	if sizeHint > 0 && sizeHint <= limit {
		buf.Grow(int(sizeHint) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return err
}

// newDeflateReader accepts "deflate" as HTTP defines it (zlib) and, as many
// clients send, a raw DEFLATE stream.
func newDeflateReader(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if h, err := br.Peek(2); err == nil && isZlibHeader(h[0], h[1]) {
		if zr, err := zlib.NewReader(br); err == nil {
			return zr
		}
	}
	return flate.NewReader(br)
}

func isZlibHeader(cmf, flg byte) bool {
	return cmf&0x0f == 8 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}

// zstdDecoder takes a pooled decoder. Decoders are synchronous
// (concurrency 1, no goroutines). Their window may not exceed the decompressed
// limit, except that the 8 MiB window of ordinary encoders is always allowed.
func (b *bodyReader) zstdDecoder(r io.Reader) (*zstd.Decoder, error) {
	if d, ok := b.zstdDecoders.Get().(*zstd.Decoder); ok {
		if err := d.Reset(r); err != nil {
			return nil, err
		}
		return d, nil
	}
	window := min(max(uint64(b.maxDecompressed), 8<<20), zstd.MaxWindowSize) //nolint:gosec // maxDecompressed is validated positive
	return zstd.NewReader(r,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(b.maxDecompressed)), //nolint:gosec // validated positive
		zstd.WithDecoderMaxWindow(window),
	)
}

func (b *bodyReader) releaseZstd(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		b.zstdDecoders.Put(d)
	}
}
