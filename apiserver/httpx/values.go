package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// timestampLayout is how JavaScript's Date serialises: UTC, milliseconds, Z.
// The SDKs parse Langfuse's timestamps in exactly this form.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Timestamp is an instant written as an ISO 8601 string in UTC with a Z.
type Timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(timestampLayout) + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler; it accepts any RFC 3339 time.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	*t = Timestamp(parsed)
	return nil
}

// OpenAPISchema describes Timestamp in the OpenAPI document.
func (Timestamp) OpenAPISchema() map[string]any {
	return map[string]any{"type": "string", "format": "date-time"}
}

// FromMicros converts Unix microseconds, the stores' time unit.
func FromMicros(us int64) Timestamp {
	return Timestamp(time.UnixMicro(us))
}

// FromTime converts a time.Time.
func FromTime(t time.Time) Timestamp {
	return Timestamp(t)
}

// OptionalMicros is FromMicros, nil (JSON null) for zero.
func OptionalMicros(us int64) *Timestamp {
	if us == 0 {
		return nil
	}
	t := FromMicros(us)
	return &t
}

// OptionalTime is FromTime, nil (JSON null) for the zero time.
func OptionalTime(t time.Time) *Timestamp {
	if t.IsZero() {
		return nil
	}
	ts := Timestamp(t)
	return &ts
}

// JSON is a free-form JSON value (input, output, metadata, model parameters).
type JSON = json.RawMessage

// JSONValue turns stored text into a JSON value: text that is valid JSON is
// sent as is, any other text as a JSON string, and "" as null. Inputs and
// outputs are stored as JSON when the source was JSON, else as the raw string.
func JSONValue(text string) JSON {
	if text == "" {
		return JSON("null")
	}
	if json.Valid([]byte(text)) {
		return JSON(text)
	}
	quoted, _ := json.Marshal(text)
	return JSON(quoted)
}

// OptionalString is s, nil (JSON null) when empty.
func OptionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NonNil is s, or an empty slice (JSON []) when s is nil.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// EncodeCursor writes a keyset position (the last row of a page) as the
// opaque base64url text that the cursor-paged lists answer in meta.cursor.
func EncodeCursor(position any) string {
	raw, _ := json.Marshal(position)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// DecodeCursor reads a `cursor` parameter written by EncodeCursor into
// position; valid reports whether the position it holds is complete.
func DecodeCursor(text string, position any, valid func() bool) error {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || json.Unmarshal(raw, position) != nil || !valid() {
		return BadRequest("Invalid cursor: use meta.cursor of the previous page as it is")
	}
	return nil
}
