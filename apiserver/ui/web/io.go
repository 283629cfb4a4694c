package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/glassbox-dev/glassbox/apiserver/media"
)

// The input and output of observations are rendered for people: chat
// messages as turns with their roles and tool calls, JSON as a collapsible
// tree, text as markdown. Everything here is untrusted model output, so
// nothing becomes markup except through html/template's escaping or the
// markdown renderer with raw HTML off (and the CSP forbids script anyway).

// IO is one input or output as the detail pane shows it.
type IO struct {
	// Raw is the value as stored, indented when it is JSON: the raw view
	// and the copy button use it.
	Raw string
	// Exactly one of the following is set.
	Chat  []Turn
	Tree  *JSONNode
	Text  *Prose
	Media *Part // the value is a reference to an uploaded media
	Empty bool
}

// Turn is one message of a conversation.
type Turn struct {
	Role string
	Name string // the tool's or the participant's name, when given
	// Content is the text of the message; Parts holds what is not text.
	Content   *Prose
	Parts     []Part
	ToolCalls []ToolCall
	// ToolCallID links a tool result to its call.
	ToolCallID string
}

// Part is a non-text piece of a message: an image or a file.
type Part struct {
	Kind string // "image" or "file"
	// URL is an inline data: image that may be shown, or "" when the
	// picture lives elsewhere (Link then names it; it is not loaded).
	URL  template.URL
	Link string
	// MediaID names a media the SDK uploaded (a Langfuse media reference);
	// the page loads it from this server. MediaType is its content type.
	MediaID, MediaType string
}

// mediaPart reads a media reference.
func mediaPart(s string) (Part, bool) {
	ref, ok := media.ParseReference(s)
	if !ok {
		return Part{}, false
	}
	kind := "file"
	if strings.HasPrefix(ref.ContentType, "image/") {
		kind = "image"
	}
	return Part{Kind: kind, MediaID: ref.MediaID, MediaType: ref.ContentType}, true
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID, Name  string
	Arguments string // indented JSON when it parses
}

// Prose is text with its markdown rendering, when it is short and shallow
// enough to render safely.
type Prose struct {
	Text     string
	Markdown template.HTML
}

// JSONNode is a value of a JSON tree.
type JSONNode struct {
	Key      string
	Kind     string // object, array, string, number, bool, null
	Value    string // scalars
	Children []JSONNode
	// Open nodes start expanded: the first levels of small values.
	Open bool
}

// Limits that keep hostile or huge values from stalling a page.
const (
	maxMarkdown  = 50_000 // characters rendered as markdown; longer text stays plain
	maxTreeNodes = 2_000  // JSON nodes drawn; the raw view has the rest
	maxInlineImg = 2 << 20
)

// RenderIO turns a stored value into its view.
func RenderIO(s string) IO {
	s = strings.TrimSpace(s)
	if s == "" || s == "null" {
		return IO{Empty: true}
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		if p, ok := mediaPart(s); ok {
			return IO{Raw: s, Media: &p}
		}
		return IO{Raw: s, Text: prose(s)}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") == nil {
		s = buf.String()
	}
	out := IO{Raw: s}
	switch x := v.(type) {
	case string:
		if p, ok := mediaPart(x); ok {
			out.Media = &p
		} else {
			out.Text = prose(x)
		}
		return out
	}
	if turns, ok := chat(v); ok {
		out.Chat = turns
		return out
	}
	budget := maxTreeNodes
	root := tree("", v, 0, &budget)
	out.Tree = &root
	return out
}

// chat recognises the message formats of the common SDKs: a list of
// {role, content} (OpenAI, Anthropic, LangChain dumps), an object with
// "messages", and Gemini's {contents: [{role, parts}]}.
func chat(v any) ([]Turn, bool) {
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"messages", "contents"} {
			if list, ok := m[k].([]any); ok {
				return chat(list)
			}
		}
		if _, ok := m["role"]; ok {
			return chat([]any{m})
		}
		return nil, false
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	turns := make([]Turn, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		role, _ := m["role"].(string)
		if role == "" {
			if t, _ := m["type"].(string); t == "human" || t == "ai" || t == "system" || t == "tool" {
				role = t // LangChain's message dumps
			} else {
				return nil, false
			}
		}
		t := Turn{Role: role}
		t.Name, _ = m["name"].(string)
		t.ToolCallID, _ = m["tool_call_id"].(string)
		var text strings.Builder
		addText := func(s string) {
			if text.Len() > 0 {
				text.WriteString("\n\n")
			}
			text.WriteString(s)
		}
		content := m["content"]
		if content == nil {
			content = m["parts"]
		}
		switch c := content.(type) {
		case string:
			addText(c)
		case []any:
			for _, p := range c {
				pm, ok := p.(map[string]any)
				if !ok {
					if s, ok := p.(string); ok {
						addText(s)
					}
					continue
				}
				switch typ, _ := pm["type"].(string); {
				case pm["text"] != nil:
					s, _ := pm["text"].(string)
					addText(s)
				case typ == "image_url" || typ == "image" || typ == "input_image":
					t.Parts = append(t.Parts, image(pm))
				case typ == "input_audio" || typ == "file" || typ == "input_file":
					t.Parts = append(t.Parts, file(pm))
				case typ == "tool_use": // Anthropic
					t.ToolCalls = append(t.ToolCalls, toolCall(pm["id"], pm["name"], pm["input"]))
				case typ == "tool_result":
					t.ToolCallID, _ = pm["tool_use_id"].(string)
					addText(stringify(pm["content"]))
				case pm["functionCall"] != nil: // Gemini
					fc, _ := pm["functionCall"].(map[string]any)
					t.ToolCalls = append(t.ToolCalls, toolCall(nil, fc["name"], fc["args"]))
				default:
					addText(stringify(pm))
				}
			}
		case nil:
		default:
			addText(stringify(c))
		}
		if calls, ok := m["tool_calls"].([]any); ok { // OpenAI
			for _, c := range calls {
				cm, _ := c.(map[string]any)
				fn, _ := cm["function"].(map[string]any)
				t.ToolCalls = append(t.ToolCalls, toolCall(cm["id"], fn["name"], fn["arguments"]))
			}
		}
		if text.Len() > 0 {
			t.Content = prose(text.String())
		}
		turns = append(turns, t)
	}
	return turns, true
}

func toolCall(id, name, args any) ToolCall {
	tc := ToolCall{}
	tc.ID, _ = id.(string)
	tc.Name, _ = name.(string)
	if s, ok := args.(string); ok {
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(s), "", "  ") == nil {
			tc.Arguments = buf.String()
		} else {
			tc.Arguments = s
		}
	} else if args != nil {
		b, _ := json.MarshalIndent(args, "", "  ")
		tc.Arguments = string(b)
	}
	return tc
}

var dataImage = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*$`)

// image shows inline pictures of the common types; a picture elsewhere is
// named, not fetched, so opening a trace never calls a third party.
func image(pm map[string]any) Part {
	var u string
	switch x := pm["image_url"].(type) {
	case string:
		u = x
	case map[string]any:
		u, _ = x["url"].(string)
	}
	if p, ok := mediaPart(u); ok {
		return p
	}
	if src, ok := pm["source"].(map[string]any); ok { // Anthropic base64 source
		mt, _ := src["media_type"].(string)
		data, _ := src["data"].(string)
		u = "data:" + mt + ";base64," + data
	}
	if len(u) <= maxInlineImg && dataImage.MatchString(u) {
		return Part{Kind: "image", URL: template.URL(u)} //nolint:gosec // a checked base64 data URL of an image type
	}
	if strings.HasPrefix(u, "data:") {
		return Part{Kind: "image", Link: "inline image (" + strconv.Itoa(len(u)/1024) + " KB, not shown)"}
	}
	return Part{Kind: "image", Link: u}
}

// file names an attached file or audio; an uploaded one links to it.
func file(pm map[string]any) Part {
	for _, v := range pm {
		if sub, ok := v.(map[string]any); ok {
			for _, x := range sub {
				if s, ok := x.(string); ok {
					if p, ok := mediaPart(s); ok {
						return p
					}
				}
			}
		}
	}
	return Part{Kind: "file", Link: "attachment (not shown)"}
}

func stringify(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func tree(key string, v any, depth int, budget *int) JSONNode {
	*budget--
	n := JSONNode{Key: key, Open: depth < 2}
	switch x := v.(type) {
	case map[string]any:
		n.Kind = "object"
		n.Value = strconv.Itoa(len(x)) + " keys"
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if *budget <= 0 {
				n.Children = append(n.Children, JSONNode{Key: "…", Kind: "string", Value: "more in the raw view"})
				break
			}
			n.Children = append(n.Children, tree(k, x[k], depth+1, budget))
		}
	case []any:
		n.Kind = "array"
		n.Value = strconv.Itoa(len(x)) + " items"
		for i, e := range x {
			if *budget <= 0 {
				n.Children = append(n.Children, JSONNode{Key: "…", Kind: "string", Value: "more in the raw view"})
				break
			}
			n.Children = append(n.Children, tree(strconv.Itoa(i), e, depth+1, budget))
		}
	case string:
		n.Kind, n.Value = "string", x
	case json.Number:
		n.Kind, n.Value = "number", x.String()
	case bool:
		n.Kind, n.Value = "bool", strconv.FormatBool(x)
	default:
		n.Kind, n.Value = "null", "null"
	}
	return n
}

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// prose renders text as markdown when it is small and shallow enough; raw
// HTML in it is dropped by the renderer (its default), unsafe link schemes
// are removed.
func prose(s string) *Prose {
	p := &Prose{Text: s}
	if len(s) > maxMarkdown || tooDeep(s) {
		return p
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(s), &buf); err == nil {
		p.Markdown = template.HTML(buf.String()) //nolint:gosec // goldmark without WithUnsafe escapes raw HTML
	}
	return p
}

// tooDeep catches nesting (quotes, lists) deep enough to make a renderer
// recurse far; such text is shown plain.
func tooDeep(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		depth := 0
		for _, c := range line {
			if c == '>' || c == ' ' || c == '\t' || c == '-' || c == '*' {
				if c != ' ' {
					depth++
				}
				continue
			}
			break
		}
		if depth > 32 {
			return true
		}
	}
	return false
}
