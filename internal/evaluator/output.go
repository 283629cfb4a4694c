package evaluator // import "github.com/glassbox-dev/glassbox/internal/evaluator"

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm"
)

// Result is a score value of an evaluator's output type.
type Result struct {
	// Value is the number of NUMERIC and BOOLEAN (0/1) scores.
	Value float64
	// StringValue is the label of CATEGORICAL and BOOLEAN ("True"/"False") scores.
	StringValue string
	// Comment is the judge's reasoning or the code evaluator's comment.
	Comment string
}

// ErrBadAnswer wraps every answer that does not fit the output definition.
var ErrBadAnswer = errors.New("the evaluator's answer does not fit the score")

// Coerce turns a raw value (JSON-decoded, or from CEL or a webhook) into a
// result of out's type, checking the range or categories.
func Coerce(v any, out controlplane.ScoreOutput) (Result, error) {
	switch out.DataType {
	case controlplane.ScoreNumeric:
		n, ok := number(v)
		if !ok {
			return Result{}, fmt.Errorf("%w: %v is not a number", ErrBadAnswer, Text(v))
		}
		if (out.Min != nil && n < *out.Min) || (out.Max != nil && n > *out.Max) {
			return Result{}, fmt.Errorf("%w: %g is outside %s", ErrBadAnswer, n, rangeText(out))
		}
		return Result{Value: n}, nil
	case controlplane.ScoreBoolean:
		b, ok := boolean(v)
		if !ok {
			return Result{}, fmt.Errorf("%w: %v is not true or false", ErrBadAnswer, Text(v))
		}
		if b {
			return Result{Value: 1, StringValue: "True"}, nil
		}
		return Result{Value: 0, StringValue: "False"}, nil
	case controlplane.ScoreCategorical:
		s, ok := v.(string)
		if ok {
			for _, c := range out.Categories {
				if strings.EqualFold(strings.TrimSpace(s), c) {
					return Result{StringValue: c}, nil
				}
			}
		}
		return Result{}, fmt.Errorf("%w: %v is not one of %s", ErrBadAnswer, Text(v), strings.Join(out.Categories, ", "))
	}
	return Result{}, fmt.Errorf("%w: unknown data type %q", ErrBadAnswer, out.DataType)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return n, err == nil && !math.IsNaN(n) && !math.IsInf(n, 0)
	}
	return 0, false
}

func boolean(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case float64, int64, uint64:
		n, _ := number(x)
		return n == 1, n == 0 || n == 1
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1":
			return true, true
		case "false", "no", "0":
			return false, true
		}
	}
	return false, false
}

func rangeText(out controlplane.ScoreOutput) string {
	lo, hi := "-inf", "+inf"
	if out.Min != nil {
		lo = strconv.FormatFloat(*out.Min, 'g', -1, 64)
	}
	if out.Max != nil {
		hi = strconv.FormatFloat(*out.Max, 'g', -1, 64)
	}
	return "[" + lo + ", " + hi + "]"
}

// judgeSchema is the JSON schema of a judge's answer: the reasoning first,
// so the model reasons before it scores. Range bounds are stated in the
// instructions and checked on parse, since strict structured output modes
// do not all accept minimum and maximum.
func judgeSchema(out controlplane.ScoreOutput) json.RawMessage {
	score := map[string]any{"type": "number"}
	switch out.DataType {
	case controlplane.ScoreBoolean:
		score = map[string]any{"type": "boolean"}
	case controlplane.ScoreCategorical:
		score = map[string]any{"type": "string", "enum": out.Categories}
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"reasoning": map[string]any{"type": "string", "description": "Step-by-step reasoning behind the score."},
			"score":     score,
		},
		"required":             []string{"reasoning", "score"},
		"additionalProperties": false,
	})
	return schema
}

// instructions tell the judge what to answer, for providers that ignore
// the schema as much as for those that honour it.
func instructions(out controlplane.ScoreOutput) string {
	var what string
	switch out.DataType {
	case controlplane.ScoreNumeric:
		what = "a number in the range " + rangeText(out)
	case controlplane.ScoreBoolean:
		what = "true or false"
	case controlplane.ScoreCategorical:
		what = "exactly one of: " + strings.Join(out.Categories, ", ")
	}
	s := "You are an evaluator. Answer with a JSON object and nothing else: " +
		`{"reasoning": "<your reasoning>", "score": <score>}, where score is ` + what + "."
	if out.Description != "" {
		s += " The score means: " + out.Description
	}
	return s
}

// JudgeRequest is the chat request that asks a judge model to score the
// rendered prompt.
func JudgeRequest(rendered string, out controlplane.ScoreOutput, model string, params map[string]any) llm.Request {
	return llm.Request{
		Model: model,
		Messages: []llm.Message{
			{Role: "system", Content: instructions(out)},
			{Role: "user", Content: rendered},
		},
		Params: params,
		Schema: &llm.Schema{Name: "evaluation", Schema: judgeSchema(out)},
	}
}

var (
	fencePattern = regexp.MustCompile("(?s)```(?:json)?\\s*(.*?)```")
	scorePattern = regexp.MustCompile(`(?i)\bscore\b["']?\s*[:=]\s*["']?([^"',}\n]+)`)
)

// ParseJudge reads a judge's answer: a JSON object with score and
// reasoning (also value/comment/explanation), found in a code fence or
// among other text; failing that, a "score: x" line, or for categories and
// booleans a single label the text names.
func ParseJudge(content string, out controlplane.ScoreOutput) (Result, error) {
	if obj, ok := findObject(content); ok {
		score, has := firstKey(obj, "score", "value", "result")
		if has {
			r, err := Coerce(score, out)
			if err != nil {
				return Result{}, err
			}
			comment, _ := firstKey(obj, "reasoning", "comment", "explanation", "reason")
			r.Comment = Text(comment)
			return r, nil
		}
	}
	if m := scorePattern.FindStringSubmatch(content); m != nil {
		if r, err := Coerce(strings.TrimSpace(m[1]), out); err == nil {
			r.Comment = strings.TrimSpace(content)
			return r, nil
		}
	}
	if r, ok := namedLabel(content, out); ok {
		r.Comment = strings.TrimSpace(content)
		return r, nil
	}
	return Result{}, fmt.Errorf("%w: no score found in %q", ErrBadAnswer, clip(content, 200))
}

// findObject finds the JSON object of an answer: the whole text, a fenced
// block, or the span from the first '{' to the last '}'.
func findObject(content string) (map[string]any, bool) {
	candidates := []string{content}
	if m := fencePattern.FindStringSubmatch(content); m != nil {
		candidates = append(candidates, m[1])
	}
	if i, j := strings.Index(content, "{"), strings.LastIndex(content, "}"); i >= 0 && j > i {
		candidates = append(candidates, content[i:j+1])
	}
	for _, c := range candidates {
		var obj map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(c)), &obj) == nil && obj != nil {
			return obj, true
		}
	}
	return nil, false
}

func firstKey(obj map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		for have, v := range obj {
			if strings.EqualFold(have, k) {
				return v, true
			}
		}
	}
	return nil, false
}

// namedLabel finds the one category (or true/false) a free-text answer
// names; an answer naming several is ambiguous.
func namedLabel(content string, out controlplane.ScoreOutput) (Result, bool) {
	labels := out.Categories
	if out.DataType == controlplane.ScoreBoolean {
		labels = []string{"true", "false"}
	} else if out.DataType != controlplane.ScoreCategorical {
		return Result{}, false
	}
	lower := strings.ToLower(content)
	found := ""
	for _, l := range labels {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToLower(l)) + `\b`).MatchString(lower) {
			if found != "" {
				return Result{}, false
			}
			found = l
		}
	}
	if found == "" {
		return Result{}, false
	}
	r, err := Coerce(found, out)
	return r, err == nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
