// Package tokenize estimates the usage of a generation that reported none by
// counting the tokens of its input and output offline, with the BPE
// encodings of OpenAI's tokenizers compiled into the binary: nothing is
// downloaded at run time.
package tokenize // import "github.com/glassbox-dev/glassbox/internal/pricing/tokenize"

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// Chat-format overheads when the definition gives none: what OpenAI's
// models since gpt-3.5-turbo-0613 add per message and per name, and the
// tokens that prime the reply.
const (
	defaultTokensPerMessage = 3
	defaultTokensPerName    = 1
	replyPrimingTokens      = 3
)

// ErrUnknownTokenizer means the tokenizer model has no known encoding.
var ErrUnknownTokenizer = errors.New("unknown tokenizer model")

// codecs caches one codec per tokenizer model: building one compiles its
// split expression, and the encodings' tables load on first use.
var codecs sync.Map // string -> tokenizer.Codec

func codecFor(model string) (tokenizer.Codec, error) {
	if c, ok := codecs.Load(model); ok {
		return c.(tokenizer.Codec), nil
	}
	c, err := tokenizer.ForModel(tokenizer.Model(model))
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTokenizer, model)
	}
	actual, _ := codecs.LoadOrStore(model, c)
	return actual.(tokenizer.Codec), nil
}

// Estimate counts the tokens of a generation's input and output (JSON text
// or plain text, as stored) with the OpenAI tokenizer the configuration
// names, and returns them as usage: input, output and total. A chat message
// list as input is counted the way OpenAI bills it: per message its content,
// role and name plus the per-message overheads, plus the reply priming.
func Estimate(cfg *pricing.TokenizerConfig, input, output string) (map[string]int64, error) {
	if cfg == nil || cfg.TokenizerModel == "" {
		return nil, fmt.Errorf("%w: no tokenizer model configured", ErrUnknownTokenizer)
	}
	c, err := codecFor(cfg.TokenizerModel)
	if err != nil {
		return nil, err
	}
	in, err := countInput(c, cfg, input)
	if err != nil {
		return nil, err
	}
	out, err := countText(c, textOf(output))
	if err != nil {
		return nil, err
	}
	return map[string]int64{pricing.KeyInput: in, pricing.KeyOutput: out, pricing.KeyTotal: in + out}, nil
}

// message is one chat message; other fields are ignored.
type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         string          `json:"name"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

func countInput(c tokenizer.Codec, cfg *pricing.TokenizerConfig, input string) (int64, error) {
	var msgs []message
	if len(input) == 0 || input[0] != '[' || json.Unmarshal([]byte(input), &msgs) != nil || !chat(msgs) {
		return countText(c, textOf(input))
	}
	perMessage, perName := int64(cfg.TokensPerMessage), int64(cfg.TokensPerName)
	if perMessage == 0 {
		perMessage = defaultTokensPerMessage
	}
	if perName == 0 {
		perName = defaultTokensPerName
	}
	n := int64(replyPrimingTokens)
	for _, m := range msgs {
		n += perMessage
		parts := []string{m.Role, rawText(m.Content), rawText(m.ToolCalls), rawText(m.FunctionCall)}
		if m.Name != "" {
			n += perName
			parts = append(parts, m.Name)
		}
		for _, p := range parts {
			k, err := countText(c, p)
			if err != nil {
				return 0, err
			}
			n += k
		}
	}
	return n, nil
}

// chat reports whether every element is a message with a role.
func chat(msgs []message) bool {
	if len(msgs) == 0 {
		return false
	}
	for _, m := range msgs {
		if m.Role == "" {
			return false
		}
	}
	return true
}

// textOf is the text a stored value stands for: a JSON string's contents,
// a message object's string content, else the text itself.
func textOf(s string) string {
	if len(s) == 0 {
		return s
	}
	switch s[0] {
	case '"':
		var v string
		if json.Unmarshal([]byte(s), &v) == nil {
			return v
		}
	case '{':
		var m message
		if json.Unmarshal([]byte(s), &m) == nil && m.Role != "" {
			if t := rawText(m.Content); t != "" {
				return t
			}
		}
	}
	return s
}

// rawText is a JSON value as text: a string's contents, anything else (a
// list of content parts, tool calls) as its JSON, absent or null as "".
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func countText(c tokenizer.Codec, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := c.Count(s)
	if err != nil {
		return 0, fmt.Errorf("count tokens: %w", err)
	}
	return int64(n), nil
}
