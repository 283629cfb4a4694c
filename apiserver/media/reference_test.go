package media

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseReference(t *testing.T) {
	ref, ok := ParseReference("  @@@langfuseMedia:type=image/png|id=abc_-1|source=base64_data_uri@@@ ")
	assert.True(t, ok)
	assert.Equal(t, Reference{Text: "@@@langfuseMedia:type=image/png|id=abc_-1|source=base64_data_uri@@@",
		ContentType: "image/png", MediaID: "abc_-1", JSONPath: "$"}, ref)
	for _, bad := range []string{
		"@@@langfuseMedia:type=image/png|id=../../etc|source=x@@@",
		"text @@@langfuseMedia:type=image/png|id=a|source=x@@@",
		"@@@langfuseMedia:type=image/png|id=a@@@",
		"@@@langfuseMedia:type=image/png|id=" + strings.Repeat("a", 129) + "|source=x@@@",
	} {
		_, ok := ParseReference(bad)
		assert.False(t, ok, bad)
	}
}

func TestFindReferencesIsBounded(t *testing.T) {
	refs := make([]string, 500)
	for i := range refs {
		refs[i] = "@@@langfuseMedia:type=image/png|id=m|source=bytes@@@"
	}
	raw, _ := json.Marshal(map[string]any{"list": refs})
	found := FindReferences(raw)
	assert.Len(t, found, maxReferences)
	assert.Equal(t, "$['list'][0]", found[0].JSONPath)
	assert.Empty(t, FindReferences(json.RawMessage(`{not json`)))
	assert.Empty(t, FindReferences(nil))
}

func FuzzFindReferences(f *testing.F) {
	f.Add([]byte(`{"a":["@@@langfuseMedia:type=image/png|id=m|source=bytes@@@"]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, ref := range FindReferences(raw) {
			if _, ok := ParseReference(ref.Text); !ok || !strings.HasPrefix(ref.JSONPath, "$") {
				t.Fatalf("found %+v", ref)
			}
		}
	})
}
