package mapping

import (
	"slices"
	"strings"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// unsafeString views b as a string without copying; the caller must not
// modify b while the string is in use.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // audited: callers read the string only while b is unchanged
}

// pick returns the first attribute that is present ("a ?? b").
func pick(as ...attr) attr {
	for _, a := range as {
		if a.ok {
			return a
		}
	}
	return attr{}
}

// firstTruthy returns the first attribute that is truthy ("a || b").
func firstTruthy(as ...attr) attr {
	for _, a := range as {
		if a.truthy() {
			return a
		}
	}
	return attr{}
}

// floatOf reads a number from a numeric attribute or a string holding one.
func floatOf(a attr) (float64, bool) {
	if !a.ok {
		return 0, false
	}
	switch a.v.Type() {
	case pcommon.ValueTypeInt:
		return float64(a.v.Int()), true
	case pcommon.ValueTypeDouble:
		return a.v.Double(), true
	case pcommon.ValueTypeStr:
		return parseNumber(a.v.Str())
	}
	return 0, false
}

// intOf reads a whole number from a numeric attribute or a string holding one.
func intOf(a attr) (int64, bool) {
	if a.ok && a.v.Type() == pcommon.ValueTypeInt {
		return a.v.Int(), true
	}
	f, ok := floatOf(a)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// sampleRate is the span's or else the resource's glassbox.sample_rate when
// it is a fraction in (0, 1]; 1 otherwise.
func sampleRate(span, res attr) float64 {
	for _, a := range [...]attr{span, res} {
		if f, ok := floatOf(a); ok && f > 0 && f <= 1 {
			return f
		}
	}
	return 1
}

// parseTime reads an ISO 8601 timestamp in microseconds. Older SDKs encoded
// it as a JSON string (quoted twice); Python may omit the zone (UTC then).
func parseTime(s string) (int64, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = unquote(s)
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMicro(), true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t.UnixMicro(), true
	}
	return 0, false
}

var levelAliases = [...]struct{ alias, level string }{
	{"DEFAULT", model.LevelDefault},
	{"ERROR", model.LevelError},
	{"WARNING", model.LevelWarning},
	{"DEBUG", model.LevelDebug},
	{"INFO", model.LevelDefault},
	{"WARN", model.LevelWarning},
	{"TRACE", model.LevelDebug},
	{"VERBOSE", model.LevelDebug},
	{"LOG", model.LevelDefault},
	{"NOTICE", model.LevelDefault},
	{"OK", model.LevelDefault},
	{"SUCCESS", model.LevelDefault},
	{"FATAL", model.LevelError},
	{"CRITICAL", model.LevelError},
}

// level maps langfuse.observation.level (with its aliases) and otherwise
// the span status.
func level(a attr, code ptrace.StatusCode) string {
	if s := strings.TrimSpace(a.str()); s != "" {
		for _, l := range levelAliases {
			if strings.EqualFold(s, l.alias) {
				return l.level
			}
		}
	}
	if code == ptrace.StatusCodeError {
		return model.LevelError
	}
	return model.LevelDefault
}

const (
	defaultEnvironment = "default"
	maxEnvironmentLen  = 40
)

// normalizeEnvironment applies Langfuse's environment rule: lower case, no
// leading "langfuse" prefixes (reserved), at most 40 characters of
// [a-z0-9_-], else "default".
func normalizeEnvironment(env string) string {
	if !isLowerEnv(env) {
		env = strings.ToLower(env)
	}
	for {
		switch {
		case strings.HasPrefix(env, "langfuse-"), strings.HasPrefix(env, "langfuse_"):
			env = env[len("langfuse-"):]
			continue
		case strings.HasPrefix(env, "langfuse"):
			env = env[len("langfuse"):]
			continue
		}
		break
	}
	if len(env) > maxEnvironmentLen {
		env = env[:maxEnvironmentLen]
	}
	if env == "" || !isLowerEnv(env) {
		return defaultEnvironment
	}
	return env
}

func isLowerEnv(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// parseTags reads trace tags from an array, a JSON array in a string, a
// comma-separated string or a single string. The result is sorted and
// without duplicates or empty tags, the way trace tags are merged.
func parseTags(a attr) []string {
	if !a.truthy() {
		return nil
	}
	var out []string
	switch a.v.Type() {
	case pcommon.ValueTypeSlice:
		s := a.v.Slice()
		out = make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			out = append(out, attr{v: s.At(i), ok: true}.text())
		}
	case pcommon.ValueTypeStr:
		s := a.v.Str()
		switch {
		case isJSONArray(s):
			eachElement(s, func(raw string) { out = append(out, rawString(raw)) })
		case strings.IndexByte(s, ',') >= 0:
			for t := range strings.SplitSeq(s, ",") {
				out = append(out, strings.TrimSpace(t))
			}
		default:
			out = []string{s}
		}
	default:
		out = []string{a.text()}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// jsString renders a value the way JavaScript's String() does, which is how
// Langfuse stringifies the Vercel AI SDK model settings.
func jsString(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return append(dst, v.Str()...)
	case pcommon.ValueTypeDouble:
		n := len(dst)
		dst = appendFloat(dst, v.Double())
		if dst[n] == '"' { // non-finite numbers print bare
			copy(dst[n:], dst[n+1:len(dst)-1])
			dst = dst[:len(dst)-2]
		}
		return dst
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := 0; i < s.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsString(dst, s.At(i))
		}
		return dst
	case pcommon.ValueTypeInt, pcommon.ValueTypeBool, pcommon.ValueTypeMap, pcommon.ValueTypeBytes:
		return appendValue(dst, v)
	}
	return dst
}
