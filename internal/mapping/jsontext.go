package mapping

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The mapping writes and reads JSON by hand: the values are small, mostly
// attribute strings that are already JSON text, and going through reflection
// for each of them would dominate the cost of mapping a span.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD so that the output is always valid JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendFloat appends f the way JavaScript's JSON.stringify would print it,
// except that non-finite values, which JSON cannot hold, become strings.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Go prints e-07 where JavaScript prints e-7.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendValue appends the JSON form of an attribute value. Strings stay
// strings (they are not parsed); maps become objects and bytes base64 text.
func appendValue(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendString(dst, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return appendFloat(dst, v.Double())
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(dst, v.Bool())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = append(dst, '[')
		for i := 0; i < s.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, s.At(i))
		}
		return append(dst, ']')
	case pcommon.ValueTypeMap:
		return appendMap(dst, v.Map())
	case pcommon.ValueTypeBytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes().AsRaw())
		return append(dst, '"')
	default:
		return append(dst, "null"...)
	}
}

// appendMap appends the attributes of m as a JSON object.
func appendMap(dst []byte, m pcommon.Map) []byte {
	dst = append(dst, '{')
	first := true
	for k, v := range m.All() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, v)
	}
	return append(dst, '}')
}

// appendEmbedded appends s as raw JSON when it is valid JSON text and as a
// JSON string otherwise. It is how string values that SDKs JSON-encoded
// (numbers, objects) regain their type, as Langfuse does when reading them.
func appendEmbedded(dst []byte, s string) []byte {
	if isJSON(s) {
		return append(dst, s...)
	}
	return appendString(dst, s)
}

// appendEmbeddedValue is appendEmbedded for any attribute value.
func appendEmbeddedValue(dst []byte, v pcommon.Value) []byte {
	if v.Type() == pcommon.ValueTypeStr {
		return appendEmbedded(dst, v.Str())
	}
	return appendValue(dst, v)
}

// isJSON reports whether s is one complete JSON value.
func isJSON(s string) bool {
	end, ok := validValue(s, skipSpace(s, 0), 0)
	return ok && skipSpace(s, end) == len(s)
}

// isJSONObject reports whether s is a valid JSON object.
func isJSONObject(s string) bool {
	i := skipSpace(s, 0)
	return i < len(s) && s[i] == '{' && isJSON(s)
}

// isJSONArray reports whether s is a valid JSON array.
func isJSONArray(s string) bool {
	i := skipSpace(s, 0)
	return i < len(s) && s[i] == '[' && isJSON(s)
}

// maxJSONDepth bounds nesting; deeper input counts as invalid rather than
// costing stack.
const maxJSONDepth = 512

// validValue checks the JSON value starting at s[i] (RFC 8259) and returns
// the index just past it. It accepts what encoding/json's Valid accepts, up
// to maxJSONDepth, several times faster, which matters because attribute
// blobs are checked on every span.
func validValue(s string, i, depth int) (int, bool) {
	if i >= len(s) || depth > maxJSONDepth {
		return i, false
	}
	switch c := s[i]; {
	case c == '{':
		return validContainer(s, skipSpace(s, i+1), depth, '}', true)
	case c == '[':
		return validContainer(s, skipSpace(s, i+1), depth, ']', false)
	case c == '"':
		return validString(s, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return validNumber(s, i)
	case strings.HasPrefix(s[i:], "true"), strings.HasPrefix(s[i:], "null"):
		return i + 4, true
	case strings.HasPrefix(s[i:], "false"):
		return i + 5, true
	}
	return i, false
}

// validContainer checks the members of an object or the elements of an
// array, from just after the opening bracket.
func validContainer(s string, i, depth int, closing byte, object bool) (int, bool) {
	if i < len(s) && s[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			if i, ok = validString(s, i); !ok {
				return i, false
			}
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != ':' {
				return i, false
			}
			i = skipSpace(s, i+1)
		}
		if i, ok = validValue(s, i, depth+1); !ok {
			return i, false
		}
		i = skipSpace(s, i)
		if i < len(s) && s[i] == closing {
			return i + 1, true
		}
		if i >= len(s) || s[i] != ',' {
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

func validString(s string, i int) (int, bool) {
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func validNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// The scanner below walks JSON text that isJSON has accepted; it never
// has to report errors, only to find where values start and end.

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at s[i].
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(s) {
			switch s[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just past the string literal starting at s[i].
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// unquote decodes a JSON string literal, allocating only when it has
// escapes; text that is not a quoted literal is returned as it is.
func unquote(lit string) string {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return lit
	}
	inner := lit[1 : len(lit)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var out string
	if err := json.Unmarshal([]byte(lit), &out); err != nil {
		return inner
	}
	return out
}

// eachMember calls fn with every key and raw value of the JSON object s,
// which must be valid JSON; it reports false when s is not an object.
func eachMember(s string, fn func(key, raw string)) bool {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipSpace(s, i+1)
	for i < len(s) && s[i] == '"' {
		end := skipString(s, i)
		key := unquote(s[i:end])
		i = skipSpace(s, end)
		i = skipSpace(s, i+1) // ':'
		vend := skipValue(s, i)
		fn(key, s[i:vend])
		i = skipSpace(s, vend)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
	return true
}

// eachElement calls fn with every raw element of the JSON array s, which must
// be valid JSON; it reports false when s is not an array.
func eachElement(s string, fn func(raw string)) bool {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return false
	}
	i = skipSpace(s, i+1)
	for i < len(s) && s[i] != ']' {
		end := skipValue(s, i)
		fn(s[i:end])
		i = skipSpace(s, end)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
	return true
}

// rawString returns the text of a raw JSON value: strings are decoded,
// anything else is returned as written (String(x) in JavaScript terms for
// numbers and booleans).
func rawString(raw string) string {
	if raw != "" && raw[0] == '"' {
		return unquote(raw)
	}
	return raw
}

// rawNumber parses a raw JSON number, or a JSON string holding one.
func rawNumber(raw string) (float64, bool) {
	if raw != "" && raw[0] == '"' {
		raw = unquote(raw)
	}
	return parseNumber(raw)
}

// numberMember is one member of a JSON object of numbers.
type numberMember struct {
	key string
	n   float64
}

// appendFlatNumbers reads s in one pass when it is a JSON object of at most
// cap(dst)-len(dst) numbers under keys without escapes: the shape usage and
// cost details almost always take, and the one the cost processor writes.
// It appends the members and reports true; for anything else it reports
// false, and what it appended is to be dropped: the general reader
// (isJSONObject, then eachMember) decides, with the same result.
func appendFlatNumbers(dst []numberMember, s string) ([]numberMember, bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return dst, false
	}
	if i = skipSpace(s, i+1); i < len(s) && s[i] == '}' {
		return dst, skipSpace(s, i+1) == len(s)
	}
	for len(dst) < cap(dst) {
		if i >= len(s) || s[i] != '"' {
			return dst, false
		}
		end := i + 1
		for end < len(s) && s[end] != '"' && s[end] != '\\' && s[end] >= 0x20 {
			end++
		}
		if end >= len(s) || s[end] != '"' {
			return dst, false
		}
		key := s[i+1 : end]
		if i = skipSpace(s, end+1); i >= len(s) || s[i] != ':' {
			return dst, false
		}
		if i = skipSpace(s, i+1); i >= len(s) {
			return dst, false
		}
		numEnd, ok := validNumber(s, i)
		if !ok {
			return dst, false
		}
		n, ok := numberValue(s[i:numEnd])
		if !ok {
			return dst, false
		}
		dst = append(dst, numberMember{key, n})
		switch i = skipSpace(s, numEnd); {
		case i < len(s) && s[i] == '}':
			return dst, skipSpace(s, i+1) == len(s)
		case i < len(s) && s[i] == ',':
			i = skipSpace(s, i+1)
		default:
			return dst, false
		}
	}
	return dst, false
}

// numberValue is the value of a valid JSON number; plain integers of up to
// 15 digits, which float64 holds exactly, are read without ParseFloat.
func numberValue(num string) (float64, bool) {
	digits := strings.TrimPrefix(num, "-")
	if len(digits) <= 15 {
		var n int64
		for j := 0; j < len(digits); j++ {
			c := digits[j]
			if c < '0' || c > '9' {
				return parseNumber(num)
			}
			n = n*10 + int64(c-'0')
		}
		if len(digits) < len(num) {
			return -float64(n), true // -0 stays negative, as ParseFloat has it
		}
		return float64(n), true
	}
	return parseNumber(num)
}

// parseNumber parses decimal text such as "12" or " 0.5 ".
func parseNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// member returns the raw value at a path of member names in the JSON object
// obj (already validated).
func member(obj string, path ...string) (string, bool) {
	for _, name := range path {
		found := false
		eachMember(obj, func(k, raw string) {
			if !found && k == name {
				obj, found = raw, true
			}
		})
		if !found {
			return "", false
		}
	}
	return obj, true
}
