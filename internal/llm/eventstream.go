package llm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// AWS event stream framing (application/vnd.amazon.eventstream), in which
// Bedrock streams: each message is a prelude (total length, headers
// length, CRC of the two), headers, a payload and a CRC of everything
// before it, all lengths and CRCs big-endian CRC-32 (IEEE).
const (
	eventPreludeLen = 12
	eventMinLen     = eventPreludeLen + 4
	// maxEventMessage bounds one message: AWS allows 16 MiB of payload
	// and 128 KiB of headers.
	maxEventMessage = 16<<20 + 128<<10 + eventMinLen
	maxEventHeaders = 128 << 10
)

// eventMessage is one decoded message; only string and byte-array header
// values are kept, the others are checked and skipped.
type eventMessage struct {
	Headers map[string]string
	Payload []byte
}

// errEventFrame is a malformed message; the stream cannot continue.
var errEventFrame = errors.New("malformed event stream message")

// readEvent reads the next message of r: io.EOF when the stream ends
// between messages, io.ErrUnexpectedEOF when it ends inside one.
func readEvent(r io.Reader) (eventMessage, error) {
	var prelude [eventPreludeLen]byte
	if _, err := io.ReadFull(r, prelude[:]); err != nil {
		return eventMessage{}, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headersLen := binary.BigEndian.Uint32(prelude[4:8])
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return eventMessage{}, fmt.Errorf("%w: prelude checksum", errEventFrame)
	}
	if total < eventMinLen || total > maxEventMessage || headersLen > maxEventHeaders || headersLen > total-eventMinLen {
		return eventMessage{}, fmt.Errorf("%w: length %d with %d bytes of headers", errEventFrame, total, headersLen)
	}
	rest := make([]byte, total-eventPreludeLen)
	if _, err := io.ReadFull(r, rest); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return eventMessage{}, err
	}
	body, sum := rest[:len(rest)-4], binary.BigEndian.Uint32(rest[len(rest)-4:])
	crc := crc32.Update(crc32.ChecksumIEEE(prelude[:]), crc32.IEEETable, body)
	if crc != sum {
		return eventMessage{}, fmt.Errorf("%w: message checksum", errEventFrame)
	}
	headers, err := eventHeaders(body[:headersLen])
	if err != nil {
		return eventMessage{}, err
	}
	return eventMessage{Headers: headers, Payload: body[headersLen:]}, nil
}

// eventHeaderSizes is the value size of each fixed-size header type; -1
// marks the types with a 2-byte length (byte array, string).
var eventHeaderSizes = [10]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: -1, 7: -1, 8: 8, 9: 16}

func eventHeaders(b []byte) (map[string]string, error) {
	headers := map[string]string{}
	for len(b) > 0 {
		nameLen := int(b[0])
		if nameLen == 0 || len(b) < 1+nameLen+1 {
			return nil, fmt.Errorf("%w: header name", errEventFrame)
		}
		name, typ := string(b[1:1+nameLen]), b[1+nameLen]
		b = b[2+nameLen:]
		if int(typ) >= len(eventHeaderSizes) {
			return nil, fmt.Errorf("%w: header %q has unknown type %d", errEventFrame, name, typ)
		}
		size := eventHeaderSizes[typ]
		if size >= 0 {
			if len(b) < size {
				return nil, fmt.Errorf("%w: header %q is cut short", errEventFrame, name)
			}
			b = b[size:]
			continue
		}
		if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
			return nil, fmt.Errorf("%w: header %q is cut short", errEventFrame, name)
		}
		n := int(binary.BigEndian.Uint16(b))
		headers[name] = string(b[2 : 2+n])
		b = b[2+n:]
	}
	return headers, nil
}
