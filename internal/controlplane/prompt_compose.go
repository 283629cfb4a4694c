package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// SetPromptLimits changes the bounds of prompt composition; call it before
// the store serves requests.
func (s *Store) SetPromptLimits(l promptcompose.Limits) {
	s.promptLimits = l
}

// ResolvePrompt returns one version of a prompt with every composition tag
// replaced by the text of the prompt it names, recursively. It fails with
// promptcompose.ErrComposition rather than return a tag unresolved.
func (s *Store) ResolvePrompt(ctx context.Context, projectID, name string, sel PromptSelector) (Prompt, error) {
	c := s.conn()
	p, err := getPrompt(ctx, c, projectID, name, sel)
	if err != nil {
		return Prompt{}, err
	}
	if p.Graph, err = s.resolveContent(ctx, c, projectID, &p); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// PreviewPrompt checks np as CreatePrompt would and returns it resolved
// against the prompts stored now, without storing it: what an editor shows
// before the version is saved.
func (s *Store) PreviewPrompt(ctx context.Context, projectID string, np NewPrompt) (Prompt, error) {
	p, _, err := s.checkNewPrompt(projectID, np)
	if err != nil {
		return Prompt{}, err
	}
	if p.Graph, err = s.resolveContent(ctx, s.conn(), projectID, &p); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// parsePromptRefs returns the references in texts; a malformed one is
// invalid input.
func parsePromptRefs(texts []string) ([]promptcompose.Ref, error) {
	refs, err := promptcompose.ParseRefs(texts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return refs, nil
}

// promptTexts returns what composition reads of p: its text, or its
// messages' contents.
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

func composable(p Prompt) (promptcompose.Prompt, error) {
	texts, err := promptTexts(p)
	return promptcompose.Prompt{Node: promptcompose.Node{ID: p.ID, Name: p.Name, Version: p.Version}, Type: p.Type, Texts: texts}, err
}

// resolveContent replaces p's tags in place, looking referenced prompts up
// in the project through c, and returns the graph, nil when p has no
// references.
func (s *Store) resolveContent(ctx context.Context, c conn, projectID string, p *Prompt) (*promptcompose.Graph, error) {
	root, err := composable(*p)
	if err != nil {
		return nil, err
	}
	lookup := func(ctx context.Context, ref promptcompose.Ref) (promptcompose.Prompt, bool, error) {
		child, err := getPrompt(ctx, c, projectID, ref.Name, PromptSelector{Label: ref.Label, Version: ref.Version})
		if errors.Is(err, ErrNotFound) {
			return promptcompose.Prompt{}, false, nil
		}
		if err != nil {
			return promptcompose.Prompt{}, false, err
		}
		cp, err := composable(child)
		return cp, err == nil, err
	}
	texts, graph, err := promptcompose.Resolve(ctx, root, lookup, s.promptLimits)
	if err != nil || graph == nil {
		return nil, err
	}
	if p.Prompt, err = withTexts(*p, texts); err != nil {
		return nil, err
	}
	return graph, nil
}

// withTexts returns p's prompt with its text, or its messages' contents,
// replaced by texts (in promptTexts' order).
func withTexts(p Prompt, texts []string) (json.RawMessage, error) {
	if p.Type == PromptText {
		return json.Marshal(texts[0])
	}
	var msgs []ChatMessage
	if err := json.Unmarshal(p.Prompt, &msgs); err != nil {
		return nil, fmt.Errorf("chat prompt %q: %w", p.Name, err)
	}
	for i := range msgs {
		msgs[i].Content = texts[i]
	}
	return json.Marshal(msgs)
}
