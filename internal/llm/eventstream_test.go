package llm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
)

func TestReadEvent(t *testing.T) {
	first := llmtest.EncodeEvent(map[string]string{":event-type": "contentBlockDelta", ":message-type": "event"}, []byte(`{"delta":{"text":"hi"}}`))
	second := llmtest.EncodeEvent(map[string]string{":message-type": "event"}, nil)
	r := bytes.NewReader(append(append([]byte{}, first...), second...))
	msg, err := readEvent(r)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{":event-type": "contentBlockDelta", ":message-type": "event"}, msg.Headers)
	assert.JSONEq(t, `{"delta":{"text":"hi"}}`, string(msg.Payload))
	msg, err = readEvent(r)
	require.NoError(t, err)
	assert.Empty(t, msg.Payload)
	_, err = readEvent(r)
	assert.ErrorIs(t, err, io.EOF, "the stream ends between messages")

	_, err = readEvent(bytes.NewReader(first[:len(first)-3]))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut inside a message")

	bad := bytes.Clone(first)
	bad[len(bad)-6] ^= 1 // a payload byte
	_, err = readEvent(bytes.NewReader(bad))
	assert.ErrorIs(t, err, errEventFrame, "message checksum")
	bad = bytes.Clone(first)
	bad[3]++ // the total length
	_, err = readEvent(bytes.NewReader(bad))
	assert.ErrorIs(t, err, errEventFrame, "prelude checksum")

	// Headers of every type: the strings are kept, the others skipped.
	var h []byte
	for typ, value := range map[byte][]byte{0: nil, 1: nil, 2: {1}, 3: {0, 2}, 4: {0, 0, 0, 3}, 5: make([]byte, 8), 6: {0, 1, 'x'}, 8: make([]byte, 8), 9: make([]byte, 16)} {
		h = append(append(h, 2, 'h', '0'+typ, typ), value...)
	}
	h = append(h, 2, 's', 's', 7, 0, 3, 'a', 'b', 'c')
	msg, err = readEvent(bytes.NewReader(frame(h, []byte("p"))))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"h6": "x", "ss": "abc"}, msg.Headers)
	assert.Equal(t, "p", string(msg.Payload))

	for name, headers := range map[string][]byte{
		"unknown type":   {1, 'a', 10},
		"empty name":     {0, 7, 0, 0},
		"short string":   {1, 'a', 7, 0, 5, 'x'},
		"short int":      {1, 'a', 4, 0},
		"name past end":  {5, 'a'},
		"no type":        {1, 'a'},
		"no string size": {1, 'a', 7, 0},
	} {
		_, err := readEvent(bytes.NewReader(frame(headers, nil)))
		assert.ErrorIs(t, err, errEventFrame, name)
	}
}

// frame builds a message from raw header bytes, with correct checksums.
func frame(headers, payload []byte) []byte {
	msg := binary.BigEndian.AppendUint32(nil, uint32(eventMinLen+len(headers)+len(payload)))
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(headers)))
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
	msg = append(append(msg, headers...), payload...)
	return binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
}

// Any bytes decode to messages or an error, never a panic or a message
// larger than its input; a frame with valid checksums around fuzzed
// headers decodes the same way.
func FuzzReadEvent(f *testing.F) {
	f.Add(llmtest.EncodeEvent(map[string]string{":message-type": "event", ":event-type": "metadata"}, []byte(`{"usage":{}}`)))
	f.Add(llmtest.EncodeEvent(nil, nil))
	f.Add(frame([]byte{1, 'a', 9}, nil))
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, frame(data, []byte("x"))} {
			r := bytes.NewReader(in)
			for {
				before := r.Len()
				msg, err := readEvent(r)
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errEventFrame) {
						t.Fatalf("unexpected error %v", err)
					}
					break
				}
				if consumed := before - r.Len(); len(msg.Payload) > consumed || consumed < eventMinLen {
					t.Fatalf("message of %d payload bytes from %d bytes", len(msg.Payload), consumed)
				}
			}
		}
	})
}

// Messages the fake encodes decode to what was encoded.
func FuzzEventRoundTrip(f *testing.F) {
	f.Add(":event-type", "contentBlockDelta", []byte(`{"delta":{"text":"a"}}`))
	f.Fuzz(func(t *testing.T, name, value string, payload []byte) {
		if name == "" || len(name) > 255 || len(value) > 0xffff {
			return
		}
		msg, err := readEvent(bytes.NewReader(llmtest.EncodeEvent(map[string]string{name: value}, payload)))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{name: value}, msg.Headers)
		assert.Equal(t, string(payload), string(msg.Payload))
	})
}
