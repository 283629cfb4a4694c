package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxPromptDepth bounds how deep references may nest below the fetched prompt.
const maxPromptDepth = 5

// PromptLimits bound what resolving one prompt may cost: a text referenced
// many times, at several levels, multiplies its size at each level.
type PromptLimits struct {
	// MaxResolvedBytes bounds the text of the resolved prompt, and of each
	// referenced prompt once resolved.
	MaxResolvedBytes int
	// MaxReferences bounds how many references one resolution follows.
	MaxReferences int
}

// Defaults of PromptLimits: far above hand-written prompts, far below what
// would strain the server.
const (
	DefaultPromptMaxResolvedBytes = 1 << 20
	DefaultPromptMaxReferences    = 100
)

// DefaultPromptLimits returns the limits a Store starts with.
func DefaultPromptLimits() PromptLimits {
	return PromptLimits{MaxResolvedBytes: DefaultPromptMaxResolvedBytes, MaxReferences: DefaultPromptMaxReferences}
}

// SetPromptLimits changes the bounds of prompt composition; call it before
// the store serves requests.
func (s *Store) SetPromptLimits(l PromptLimits) {
	s.promptLimits = l
}

// ErrPromptComposition means a prompt's references cannot be resolved: a
// missing or non-text child, a cycle, or nesting deeper than maxPromptDepth.
var ErrPromptComposition = errors.New("prompt composition failed")

// promptTagPattern finds composition tags such as
// @@@langfusePrompt:name=greeting|label=production@@@.
var promptTagPattern = regexp.MustCompile(`@@@langfusePrompt:(.*?)@@@`)

// promptRef is one parsed composition tag.
type promptRef struct {
	Tag     string // the full tag text, replaced on resolution
	Name    string
	Label   *string
	Version *int
}

func (r promptRef) selector() PromptSelector {
	if r.Version != nil {
		return PromptSelector{Version: *r.Version}
	}
	return PromptSelector{Label: *r.Label}
}

// PromptGraph records which prompts a resolved prompt was assembled from.
type PromptGraph struct {
	Root PromptNode
	// Dependencies maps a prompt version id to the versions it references.
	Dependencies map[string][]PromptNode
}

// PromptNode names one prompt version in a PromptGraph.
type PromptNode struct {
	ID      string
	Name    string
	Version int
}

// parsePromptRefs returns the composition tags in text. A tag holds exactly
// name=<name> followed by label=<label> or version=<n>.
func parsePromptRefs(text string) ([]promptRef, error) {
	var refs []promptRef
	for _, m := range promptTagPattern.FindAllStringSubmatch(text, -1) {
		parts := strings.Split(m[1], "|")
		name, ok := strings.CutPrefix(parts[0], "name=")
		if len(parts) != 2 || !ok || name == "" {
			return nil, fmt.Errorf("%w: prompt reference %q must be name=<name>|label=<label> or name=<name>|version=<n>", ErrInvalid, m[0])
		}
		ref := promptRef{Tag: m[0], Name: name}
		key, value, _ := strings.Cut(parts[1], "=")
		switch key {
		case "label":
			if _, err := checkLabels([]string{value}, true); err != nil || value == "" {
				return nil, fmt.Errorf("%w: prompt reference %q has an invalid label", ErrInvalid, m[0])
			}
			ref.Label = &value
		case "version":
			v, err := strconv.Atoi(value)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("%w: prompt reference %q: version must be a positive integer", ErrInvalid, m[0])
			}
			ref.Version = &v
		default:
			return nil, fmt.Errorf("%w: prompt reference %q must select by label= or version=", ErrInvalid, m[0])
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// ResolvePrompt returns one version of a prompt with every composition tag
// replaced by the text of the prompt it names, recursively. It fails with
// ErrPromptComposition rather than return a tag unresolved.
func (s *Store) ResolvePrompt(ctx context.Context, projectID, name string, sel PromptSelector) (Prompt, error) {
	c := s.conn()
	p, err := getPrompt(ctx, c, projectID, name, sel)
	if err != nil {
		return Prompt{}, err
	}
	refs, err := promptRefsOf(p)
	if err != nil {
		return Prompt{}, fmt.Errorf("%w: %w", ErrPromptComposition, err)
	}
	if p.Graph, err = s.resolveContent(ctx, c, projectID, &p, refs); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// PreviewPrompt checks np as CreatePrompt would and returns it resolved
// against the prompts stored now, without storing it: what an editor shows
// before the version is saved.
func (s *Store) PreviewPrompt(ctx context.Context, projectID string, np NewPrompt) (Prompt, error) {
	p, refs, err := s.checkNewPrompt(projectID, np)
	if err != nil {
		return Prompt{}, err
	}
	if p.Graph, err = s.resolveContent(ctx, s.conn(), projectID, &p, refs); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// promptRefsOf parses the tags of a stored prompt.
func promptRefsOf(p Prompt) ([]promptRef, error) {
	texts, err := promptTexts(p)
	if err != nil {
		return nil, err
	}
	var refs []promptRef
	for _, t := range texts {
		r, err := parsePromptRefs(t)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r...)
	}
	return refs, nil
}

func promptTexts(p Prompt) ([]string, error) {
	if p.Type == PromptText {
		var text string
		if err := json.Unmarshal(p.Prompt, &text); err != nil {
			return nil, fmt.Errorf("stored text prompt %q: %w", p.Name, err)
		}
		return []string{text}, nil
	}
	var msgs []ChatMessage
	if err := json.Unmarshal(p.Prompt, &msgs); err != nil {
		return nil, fmt.Errorf("stored chat prompt %q: %w", p.Name, err)
	}
	texts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		texts = append(texts, m.Content)
	}
	return texts, nil
}

// resolveContent replaces p's tags in place and returns the graph, nil when
// p has no references.
func (s *Store) resolveContent(ctx context.Context, c conn, projectID string, p *Prompt, refs []promptRef) (*PromptGraph, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	r := resolver{ctx: ctx, c: c, projectID: projectID, limits: s.promptLimits, deps: map[string][]PromptNode{}}
	replacements, err := r.children(*p, refs, []string{p.Name}, 1)
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(*p, replacements); err != nil {
		return nil, err
	}
	if p.Prompt, err = replaceTags(*p, replacements); err != nil {
		return nil, err
	}
	return &PromptGraph{Root: PromptNode{ID: p.ID, Name: p.Name, Version: p.Version}, Dependencies: r.deps}, nil
}

type resolver struct {
	ctx       context.Context
	c         conn
	projectID string
	limits    PromptLimits
	followed  int // references fetched so far
	deps      map[string][]PromptNode
}

// checkSize refuses p when replacing its tags by texts would make it larger
// than the limit; it counts instead of building the text.
func (r *resolver) checkSize(p Prompt, texts map[string]string) error {
	parts, err := promptTexts(p)
	if err != nil {
		return err
	}
	size := 0
	for _, part := range parts {
		size += len(part)
		for tag, text := range texts {
			size += strings.Count(part, tag) * (len(text) - len(tag))
		}
		if size > r.limits.MaxResolvedBytes {
			return fmt.Errorf("%w: %q would resolve to more than %d bytes (limit control_plane.prompt_composition.max_resolved_bytes); reference fewer or smaller prompts",
				ErrPromptComposition, p.Name, r.limits.MaxResolvedBytes)
		}
	}
	return nil
}

// children resolves refs of parent, which sits at depth-1 below the root,
// and returns the text each tag stands for.
func (r *resolver) children(parent Prompt, refs []promptRef, path []string, depth int) (map[string]string, error) {
	out := map[string]string{}
	for _, ref := range refs {
		if _, done := out[ref.Tag]; done {
			continue
		}
		switch {
		case slices.Contains(path, ref.Name):
			return nil, fmt.Errorf("%w: cycle: %s -> %s", ErrPromptComposition, strings.Join(path, " -> "), ref.Name)
		case depth > maxPromptDepth:
			return nil, fmt.Errorf("%w: references nest deeper than %d levels below %q", ErrPromptComposition, maxPromptDepth, path[0])
		}
		if r.followed++; r.followed > r.limits.MaxReferences {
			return nil, fmt.Errorf("%w: %q needs more than %d prompt references to resolve (limit control_plane.prompt_composition.max_references)",
				ErrPromptComposition, path[0], r.limits.MaxReferences)
		}
		child, err := getPrompt(r.ctx, r.c, r.projectID, ref.Name, ref.selector())
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w: %q references prompt '%s' with %s, which does not exist",
				ErrPromptComposition, parent.Name, ref.Name, ref.selector())
		}
		if err != nil {
			return nil, err
		}
		if child.Type != PromptText {
			return nil, fmt.Errorf("%w: %q references %q, which is a %s prompt; only text prompts can be referenced",
				ErrPromptComposition, parent.Name, child.Name, child.Type)
		}
		r.deps[parent.ID] = append(r.deps[parent.ID], PromptNode{ID: child.ID, Name: child.Name, Version: child.Version})
		grand, err := promptRefsOf(child)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPromptComposition, err)
		}
		if len(grand) > 0 {
			sub, err := r.children(child, grand, append(slices.Clone(path), child.Name), depth+1)
			if err != nil {
				return nil, err
			}
			if err := r.checkSize(child, sub); err != nil {
				return nil, err
			}
			if child.Prompt, err = replaceTags(child, sub); err != nil {
				return nil, err
			}
		}
		var text string
		if err := json.Unmarshal(child.Prompt, &text); err != nil {
			return nil, fmt.Errorf("stored text prompt %q: %w", child.Name, err)
		}
		out[ref.Tag] = text
	}
	return out, nil
}

// replaceTags substitutes resolved texts into a prompt's text or messages.
func replaceTags(p Prompt, texts map[string]string) (json.RawMessage, error) {
	replace := func(s string) string {
		for tag, text := range texts {
			s = strings.ReplaceAll(s, tag, text)
		}
		return s
	}
	if p.Type == PromptText {
		var text string
		if err := json.Unmarshal(p.Prompt, &text); err != nil {
			return nil, fmt.Errorf("text prompt %q: %w", p.Name, err)
		}
		return json.Marshal(replace(text))
	}
	var msgs []ChatMessage
	if err := json.Unmarshal(p.Prompt, &msgs); err != nil {
		return nil, fmt.Errorf("chat prompt %q: %w", p.Name, err)
	}
	for i := range msgs {
		msgs[i].Content = replace(msgs[i].Content)
	}
	return json.Marshal(msgs)
}
