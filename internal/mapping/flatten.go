package mapping

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxArraySlots bounds the array slots one rebuild may create, so that a
// key such as "llm.input_messages.99999999.x" cannot demand huge memory.
const maxArraySlots = 10001

// fnode is one node of a rebuilt structure: a leaf value, an object with
// members in first-seen order, or an array whose unset slots print as null.
type fnode struct {
	key   string
	leaf  bool
	val   pcommon.Value
	arr   bool
	kids  []*fnode
	isSet bool // false for array holes
}

// unflatten rebuilds the attributes under prefix (for example
// "gen_ai.prompt.0.role", "gen_ai.prompt.0.content") into JSON, turning
// numeric path segments into array indexes, and appends it to dst.
func unflatten(dst []byte, attrs pcommon.Map, prefix string) []byte {
	var root *fnode
	slots := 0
	for k, v := range attrs.All() {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		path := k[len(prefix):]
		if path == "" || !safePath(path) {
			continue
		}
		if root == nil {
			first, _, _ := strings.Cut(path, ".")
			root = &fnode{arr: isIndex(first), isSet: true}
		}
		root.insert(path, v, &slots)
	}
	if root == nil {
		return dst
	}
	return root.appendJSON(dst)
}

// safePath rejects segments that would be prototype pollution in the
// JavaScript original; they are ignored there, so they are here too.
func safePath(path string) bool {
	for seg := range strings.SplitSeq(path, ".") {
		switch seg {
		case "__proto__", "constructor", "prototype":
			return false
		}
	}
	return true
}

func isIndex(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// insert sets the value at path below n; entries that do not fit the shape
// built so far (a name inside an array, an index beyond the slot budget)
// are dropped.
func (n *fnode) insert(path string, v pcommon.Value, slots *int) {
	cur := n
	for {
		seg, rest, more := strings.Cut(path, ".")
		child := cur.child(seg, slots)
		if child == nil {
			return
		}
		if !more {
			*child = fnode{key: child.key, leaf: true, val: v, isSet: true}
			return
		}
		next, _, _ := strings.Cut(rest, ".")
		if child.leaf || !child.isSet {
			*child = fnode{key: child.key, arr: isIndex(next), isSet: true}
		}
		cur, path = child, rest
	}
}

// child finds or creates the slot for seg in container n.
func (n *fnode) child(seg string, slots *int) *fnode {
	if n.arr {
		if !isIndex(seg) {
			return nil
		}
		i := atoi(seg)
		if i >= len(n.kids) {
			grow := i + 1 - len(n.kids)
			if *slots+grow > maxArraySlots {
				return nil
			}
			*slots += grow
			for len(n.kids) <= i {
				n.kids = append(n.kids, &fnode{})
			}
		}
		return n.kids[i]
	}
	for _, k := range n.kids {
		if k.key == seg {
			return k
		}
	}
	c := &fnode{key: seg}
	n.kids = append(n.kids, c)
	return c
}

func (n *fnode) appendJSON(dst []byte) []byte {
	switch {
	case !n.isSet:
		return append(dst, "null"...)
	case n.leaf:
		return appendValue(dst, n.val)
	case n.arr:
		dst = append(dst, '[')
		for i, k := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = k.appendJSON(dst)
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		first := true
		for _, k := range n.kids {
			if !k.isSet {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendString(dst, k.key)
			dst = append(dst, ':')
			dst = k.appendJSON(dst)
		}
		return append(dst, '}')
	}
}
