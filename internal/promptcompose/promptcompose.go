// Package promptcompose resolves prompt references: tags such as
// @@@langfusePrompt:name=greeting|label=production@@@ in a prompt's text,
// each replaced by the text of the prompt it names, recursively and within
// bounds. It holds no storage; the caller fetches prompts through a Lookup,
// so the rules are tested without a database.
package promptcompose

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TypeText is the only prompt type a reference may name: a chat prompt has
// no single text to put in its place.
const TypeText = "text"

// MaxDepth bounds how deep references may nest below the resolved prompt.
const MaxDepth = 5

// Limits bound what resolving one prompt may cost: a text referenced many
// times, at several levels, multiplies its size at each level.
type Limits struct {
	// MaxResolvedBytes bounds the text of the resolved prompt, and of each
	// referenced prompt once resolved.
	MaxResolvedBytes int `mapstructure:"max_resolved_bytes"`
	// MaxReferences bounds how many references one resolution follows.
	MaxReferences int `mapstructure:"max_references"`
}

// Check reports limits that are not positive. (Not named Validate, so
// that configurations that embed Limits report it once.)
func (l Limits) Check() error {
	var errs []error
	if l.MaxResolvedBytes <= 0 {
		errs = append(errs, errors.New("max_resolved_bytes must be positive"))
	}
	if l.MaxReferences <= 0 {
		errs = append(errs, errors.New("max_references must be positive"))
	}
	return errors.Join(errs...)
}

// Defaults of Limits: far above hand-written prompts, far below what would
// strain the server.
const (
	DefaultMaxResolvedBytes = 1 << 20
	DefaultMaxReferences    = 100
)

// DefaultLimits returns the default bounds.
func DefaultLimits() Limits {
	return Limits{MaxResolvedBytes: DefaultMaxResolvedBytes, MaxReferences: DefaultMaxReferences}
}

var (
	// ErrComposition means a prompt's references cannot be resolved: a
	// missing or non-text child, a cycle, nesting deeper than MaxDepth, or a
	// bound of Limits.
	ErrComposition = errors.New("prompt composition failed")
	// ErrInvalidReference means a tag does not follow the reference syntax.
	ErrInvalidReference = errors.New("invalid prompt reference")
)

const maxLabelLength = 36

var (
	// tagPattern finds composition tags.
	tagPattern   = regexp.MustCompile(`@@@langfusePrompt:(.*?)@@@`)
	labelPattern = regexp.MustCompile(`^[a-z0-9_\-.]+$`)
)

// ValidLabel reports whether l is a well-formed prompt label: 1 to 36
// characters of a-z, 0-9, '_', '-' and '.'. References and labels set on
// versions follow the same rule.
func ValidLabel(l string) bool {
	return len(l) > 0 && len(l) <= maxLabelLength && labelPattern.MatchString(l)
}

// LabelRule describes ValidLabel, for error messages.
const LabelRule = "1-36 characters of a-z, 0-9, '_', '-' or '.'"

// Ref is one parsed reference: a prompt name and either a version (when
// Version > 0) or a label.
type Ref struct {
	Tag     string // the full tag text, replaced on resolution
	Name    string
	Label   string
	Version int
}

// Selector names the version the reference picks, for messages.
func (r Ref) Selector() string {
	if r.Version > 0 {
		return fmt.Sprintf("version %d", r.Version)
	}
	return fmt.Sprintf("label '%s'", r.Label)
}

// ParseRefs returns the references in texts. A tag holds exactly
// name=<name> followed by label=<label> or version=<n>; anything else fails
// with ErrInvalidReference.
func ParseRefs(texts ...string) ([]Ref, error) {
	var refs []Ref
	for _, text := range texts {
		for _, m := range tagPattern.FindAllStringSubmatch(text, -1) {
			ref, err := parseRef(m[0], m[1])
			if err != nil {
				return nil, err
			}
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

func parseRef(tag, body string) (Ref, error) {
	parts := strings.Split(body, "|")
	name, ok := strings.CutPrefix(parts[0], "name=")
	if len(parts) != 2 || !ok || name == "" {
		return Ref{}, fmt.Errorf("%w: %q must be name=<name>|label=<label> or name=<name>|version=<n>", ErrInvalidReference, tag)
	}
	ref := Ref{Tag: tag, Name: name}
	key, value, _ := strings.Cut(parts[1], "=")
	switch key {
	case "label":
		if !ValidLabel(value) {
			return Ref{}, fmt.Errorf("%w: %q has an invalid label", ErrInvalidReference, tag)
		}
		ref.Label = value
	case "version":
		v, err := strconv.Atoi(value)
		if err != nil || v < 1 {
			return Ref{}, fmt.Errorf("%w: %q: version must be a positive integer", ErrInvalidReference, tag)
		}
		ref.Version = v
	default:
		return Ref{}, fmt.Errorf("%w: %q must select by label= or version=", ErrInvalidReference, tag)
	}
	return ref, nil
}

// Node names one prompt version.
type Node struct {
	ID      string
	Name    string
	Version int
}

// Graph records which prompt versions a resolved prompt was assembled from.
type Graph struct {
	Root Node
	// Dependencies maps a prompt version id to the versions it references.
	Dependencies map[string][]Node
}

// Prompt is what composition reads of one prompt version.
type Prompt struct {
	Node
	Type string // TypeText, or another type, which cannot be referenced
	// Texts are the text of a text prompt, or the contents of a chat
	// prompt's messages, in order.
	Texts []string
}

// Lookup fetches the version a reference names in the caller's scope;
// found is false when there is none.
type Lookup func(ctx context.Context, ref Ref) (p Prompt, found bool, err error)

// Resolve returns root's texts with every reference replaced by the text of
// the prompt it names, recursively, and the graph of versions used; the
// graph is nil when root references nothing. It fails with ErrComposition
// rather than leave a tag unresolved.
func Resolve(ctx context.Context, root Prompt, lookup Lookup, limits Limits) ([]string, *Graph, error) {
	refs, err := ParseRefs(root.Texts...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q: %w", ErrComposition, root.Name, err)
	}
	if len(refs) == 0 {
		return root.Texts, nil, nil
	}
	r := resolver{ctx: ctx, lookup: lookup, limits: limits, deps: map[string][]Node{}}
	replacements, err := r.children(root, refs, []string{root.Name}, 1)
	if err != nil {
		return nil, nil, err
	}
	if err := r.checkSize(root, replacements); err != nil {
		return nil, nil, err
	}
	return replaceTags(root.Texts, replacements), &Graph{Root: root.Node, Dependencies: r.deps}, nil
}

type resolver struct {
	ctx      context.Context
	lookup   Lookup
	limits   Limits
	followed int // references fetched so far
	deps     map[string][]Node
}

// checkSize refuses p when replacing its tags by texts would make it larger
// than the limit; it counts instead of building the text.
func (r *resolver) checkSize(p Prompt, texts map[string]string) error {
	size := 0
	for _, part := range p.Texts {
		size += len(part)
		for tag, text := range texts {
			size += strings.Count(part, tag) * (len(text) - len(tag))
		}
		if size > r.limits.MaxResolvedBytes {
			return fmt.Errorf("%w: %q would resolve to more than %d bytes (limit control_plane.prompt_composition.max_resolved_bytes); reference fewer or smaller prompts",
				ErrComposition, p.Name, r.limits.MaxResolvedBytes)
		}
	}
	return nil
}

// children resolves refs of parent, which sits at depth-1 below the root,
// and returns the text each tag stands for.
func (r *resolver) children(parent Prompt, refs []Ref, path []string, depth int) (map[string]string, error) {
	out := map[string]string{}
	for _, ref := range refs {
		if _, done := out[ref.Tag]; done {
			continue
		}
		switch {
		case slices.Contains(path, ref.Name):
			return nil, fmt.Errorf("%w: cycle: %s -> %s", ErrComposition, strings.Join(path, " -> "), ref.Name)
		case depth > MaxDepth:
			return nil, fmt.Errorf("%w: references nest deeper than %d levels below %q", ErrComposition, MaxDepth, path[0])
		}
		if r.followed++; r.followed > r.limits.MaxReferences {
			return nil, fmt.Errorf("%w: %q needs more than %d prompt references to resolve (limit control_plane.prompt_composition.max_references)",
				ErrComposition, path[0], r.limits.MaxReferences)
		}
		child, found, err := r.lookup(r.ctx, ref)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: %q references prompt '%s' with %s, which does not exist",
				ErrComposition, parent.Name, ref.Name, ref.Selector())
		}
		if child.Type != TypeText || len(child.Texts) != 1 {
			return nil, fmt.Errorf("%w: %q references %q, which is a %s prompt; only text prompts can be referenced",
				ErrComposition, parent.Name, child.Name, child.Type)
		}
		r.deps[parent.ID] = append(r.deps[parent.ID], child.Node)
		grand, err := ParseRefs(child.Texts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrComposition, child.Name, err)
		}
		text := child.Texts[0]
		if len(grand) > 0 {
			sub, err := r.children(child, grand, append(slices.Clone(path), child.Name), depth+1)
			if err != nil {
				return nil, err
			}
			if err := r.checkSize(child, sub); err != nil {
				return nil, err
			}
			text = replaceTags(child.Texts, sub)[0]
		}
		out[ref.Tag] = text
	}
	return out, nil
}

// replaceTags substitutes resolved texts for their tags.
func replaceTags(texts []string, resolved map[string]string) []string {
	out := make([]string, len(texts))
	for i, s := range texts {
		for tag, text := range resolved {
			s = strings.ReplaceAll(s, tag, text)
		}
		out[i] = s
	}
	return out
}
