package media

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"maps"
)

// referencePattern is the reference the Langfuse SDKs put in place of the
// base64 data they upload: @@@langfuseMedia:type=image/png|id=...|source=...@@@.
var referencePattern = regexp.MustCompile(`^@@@langfuseMedia:type=([A-Za-z0-9.+/-]+)\|id=([A-Za-z0-9_-]{1,128})\|source=[A-Za-z0-9_]+@@@$`)

// Reference is one media reference found in a JSON value.
type Reference struct {
	// Text is the reference string as stored.
	Text        string
	ContentType string
	MediaID     string
	// JSONPath locates the string within its value: $ for the value itself,
	// else $['key'][0]... as Langfuse writes it.
	JSONPath string
}

// ParseReference reads a string that is a media reference (surrounding
// space allowed).
func ParseReference(s string) (Reference, bool) {
	text := strings.TrimSpace(s)
	m := referencePattern.FindStringSubmatch(text)
	if m == nil {
		return Reference{}, false
	}
	return Reference{Text: text, ContentType: m[1], MediaID: m[2], JSONPath: "$"}, true
}

// maxReferences bounds what one value may name, so a hostile item cannot
// make a read resolve thousands of media.
const maxReferences = 100

// FindReferences returns the media references in a JSON value, in document
// order (object keys sorted), at most maxReferences.
func FindReferences(raw json.RawMessage) []Reference {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []Reference
	var walk func(v any, path string)
	walk = func(v any, path string) {
		if len(out) >= maxReferences {
			return
		}
		switch x := v.(type) {
		case string:
			if ref, ok := ParseReference(x); ok {
				ref.JSONPath = path
				out = append(out, ref)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", path, i))
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], path+"['"+strings.ReplaceAll(strings.ReplaceAll(k, `\`, `\\`), "'", `\'`)+"']")
			}
		}
	}
	walk(v, "$")
	return out
}
