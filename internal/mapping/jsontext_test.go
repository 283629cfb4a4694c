package mapping

import (
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r", "\x00\x1f", "ü€😀", "bad\xffutf8", "\u2028"} {
		got := appendString(nil, s)
		require.True(t, json.Valid(got), "%q -> %s", s, got)
		var back string
		require.NoError(t, json.Unmarshal(got, &back))
		if utf8.ValidString(s) {
			assert.Equal(t, s, back)
		}
	}
	assert.Equal(t, `"bad\ufffdutf8"`, string(appendString(nil, "bad\xffutf8")))
}

func TestAppendFloat(t *testing.T) {
	tests := map[float64]string{
		0: "0", 1: "1", -2.5: "-2.5", 0.1: "0.1", 1e21: "1e+21", 1e-7: "1e-7", 123456789: "123456789",
		math.NaN(): `"NaN"`, math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`,
	}
	for f, want := range tests {
		assert.Equal(t, want, string(appendFloat(nil, f)))
	}
}

func TestJSONScanning(t *testing.T) {
	obj := ` { "a" : 1 , "b\"q" : {"x":[1,{"y":"}"}]} , "c":"s\\\"" ,"d":null} `
	require.True(t, json.Valid([]byte(obj)))
	var keys, raws []string
	assert.True(t, eachMember(obj, func(k, raw string) {
		keys = append(keys, k)
		raws = append(raws, raw)
	}))
	assert.Equal(t, []string{"a", `b"q`, "c", "d"}, keys)
	assert.Equal(t, []string{"1", `{"x":[1,{"y":"}"}]}`, `"s\\\""`, "null"}, raws)
	assert.False(t, eachMember(`[1]`, func(string, string) {}))

	var els []string
	assert.True(t, eachElement(` [ "a,b" , [1,2], 3 ] `, func(raw string) { els = append(els, raw) }))
	assert.Equal(t, []string{`"a,b"`, "[1,2]", "3"}, els)

	v, ok := member(`{"openai":{"serviceTier":"flex"}}`, "openai", "serviceTier")
	assert.True(t, ok)
	assert.Equal(t, `"flex"`, v)
	_, ok = member(`{"openai":{}}`, "openai", "serviceTier")
	assert.False(t, ok)
}

func TestIsJSON(t *testing.T) {
	assert.True(t, isJSON(`{"a":1}`))
	assert.True(t, isJSON(`12`))
	assert.True(t, isJSON(`"s"`))
	assert.False(t, isJSON(`hello`))
	assert.False(t, isJSON(`{"a":`))
	assert.False(t, isJSON(``))
	assert.True(t, isJSONObject(` {}`))
	assert.False(t, isJSONObject(`[]`))
	assert.True(t, isJSONArray(`[1] `))
	assert.False(t, isJSONArray(`[1`))
}
