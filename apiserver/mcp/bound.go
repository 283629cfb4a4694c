package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// maxResultBytes bounds the JSON of one tool result: it goes into a
// model's context, twice (as text and as structuredContent), and the
// routes behind the tools can answer far more (a trace with thousands of
// observations, inputs of megabytes).
const maxResultBytes = 200_000

// cutLengths are the string lengths tried, longest first, when a result is
// over the bound.
var cutLengths = []int{16_384, 4096, 1024, 256}

// errTooLarge is a result over the bound even with strings cut short.
type errTooLarge struct{ size int }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("The result is %d bytes, over the limit of %d even with long strings cut short; ask for fewer items (limit) or fewer fields",
		e.size, maxResultBytes)
}

// bound returns v as a JSON object value within maxResultBytes: as it is
// when it fits, else with every string longer than some length cut there
// and marked. A result that cannot fit is errTooLarge.
func bound(v any) (map[string]any, error) {
	tree, size, err := decodeTree(v)
	if err != nil {
		return nil, err
	}
	if size <= maxResultBytes {
		return tree, nil
	}
	for _, n := range cutLengths {
		cut := cutStrings(tree, n).(map[string]any)
		buf, err := json.Marshal(cut)
		if err != nil {
			return nil, err
		}
		if len(buf) <= maxResultBytes {
			return cut, nil
		}
		size = len(buf)
	}
	return nil, errTooLarge{size: size}
}

// decodeTree turns v into generic JSON (numbers kept as written) and
// reports its encoded size.
func decodeTree(v any) (map[string]any, int, error) {
	buf, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, 0, fmt.Errorf("a tool result must be a JSON object: %w", err)
	}
	return tree, len(buf), nil
}

// cutStrings copies a generic JSON value with every string longer than n
// bytes cut at a character boundary and marked with what was left out.
func cutStrings(v any, n int) any {
	switch x := v.(type) {
	case string:
		if len(x) <= n {
			return x
		}
		end := n
		for end > 0 && !utf8.RuneStart(x[end]) {
			end--
		}
		return fmt.Sprintf("%s…[truncated: %d more bytes]", x[:end], len(x)-end)
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = cutStrings(item, n)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = cutStrings(item, n)
		}
		return out
	}
	return v
}
