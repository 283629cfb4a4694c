package mapping

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// objBuilder assembles a JSON object from members that may repeat a key.
// It follows JavaScript object spread, which is how Langfuse merges its
// sources: a repeated key keeps the position of its first occurrence and the
// value of its last. Values are stored as JSON text in one arena.
type objBuilder struct {
	arena []byte
	ents  []objEntry
	seen  map[string]int // only for large objects, see appendTo
}

type objEntry struct {
	key        string
	start, end int
}

func (b *objBuilder) reset() {
	b.arena = b.arena[:0]
	b.ents = b.ents[:0]
}

func (b *objBuilder) empty() bool { return len(b.ents) == 0 }

func (b *objBuilder) push(key string, start int) {
	b.ents = append(b.ents, objEntry{key: key, start: start, end: len(b.arena)})
}

// addRaw adds a member whose value is already JSON text.
func (b *objBuilder) addRaw(key, raw string) {
	start := len(b.arena)
	b.arena = append(b.arena, raw...)
	b.push(key, start)
}

// addString adds a member with a string value.
func (b *objBuilder) addString(key, s string) {
	start := len(b.arena)
	b.arena = appendString(b.arena, s)
	b.push(key, start)
}

// addValue adds a member with the JSON form of an attribute value.
func (b *objBuilder) addValue(key string, v pcommon.Value) {
	start := len(b.arena)
	b.arena = appendValue(b.arena, v)
	b.push(key, start)
}

// addEmbedded adds a member from an attribute value, reading string values
// that hold JSON text as that JSON (see appendEmbedded).
func (b *objBuilder) addEmbedded(key string, v pcommon.Value) {
	start := len(b.arena)
	b.arena = appendEmbeddedValue(b.arena, v)
	b.push(key, start)
}

// addMembers adds every member of the JSON object text obj (already validated).
func (b *objBuilder) addMembers(obj string) {
	eachMember(obj, b.addRaw)
}

// addBlob adds the members of a metadata blob: a JSON object in a string, or
// a map value. Anything else, including invalid JSON, adds nothing.
func (b *objBuilder) addBlob(a attr) {
	if !a.ok {
		return
	}
	switch a.v.Type() {
	case pcommon.ValueTypeStr:
		if s := a.v.Str(); isJSONObject(s) {
			b.addMembers(s)
		}
	case pcommon.ValueTypeMap:
		for k, v := range a.v.Map().All() {
			b.addValue(k, v)
		}
	}
}

// addAll copies the members of another builder.
func (b *objBuilder) addAll(o *objBuilder) {
	for _, e := range o.ents {
		start := len(b.arena)
		b.arena = append(b.arena, o.arena[e.start:e.end]...)
		b.push(e.key, start)
	}
}

// linearLimit is the member count up to which duplicate keys are found by
// scanning; metadata objects rarely come near it.
const linearLimit = 32

// appendTo appends the object, resolving repeated keys.
func (b *objBuilder) appendTo(dst []byte) []byte {
	dst = append(dst, '{')
	if len(b.ents) > linearLimit {
		return b.appendLarge(dst)
	}
	first := true
	for i, e := range b.ents {
		dup := false
		for j := 0; j < i; j++ {
			if b.ents[j].key == e.key {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		last := e
		for j := i + 1; j < len(b.ents); j++ {
			if b.ents[j].key == e.key {
				last = b.ents[j]
			}
		}
		dst = b.appendMember(dst, e.key, last, first)
		first = false
	}
	return append(dst, '}')
}

func (b *objBuilder) appendLarge(dst []byte) []byte {
	if b.seen == nil {
		b.seen = make(map[string]int, len(b.ents))
	}
	clear(b.seen)
	for i, e := range b.ents {
		b.seen[e.key] = i // last occurrence wins
	}
	first := true
	for _, e := range b.ents {
		i, ok := b.seen[e.key]
		if !ok {
			continue // written at its first position already
		}
		delete(b.seen, e.key)
		dst = b.appendMember(dst, e.key, b.ents[i], first)
		first = false
	}
	return append(dst, '}')
}

func (b *objBuilder) appendMember(dst []byte, key string, val objEntry, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = appendString(dst, key)
	dst = append(dst, ':')
	return append(dst, b.arena[val.start:val.end]...)
}
