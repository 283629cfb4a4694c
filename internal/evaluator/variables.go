// Package evaluator runs what an evaluator defines on the data of one trace
// or observation: it reads the mapped variables, renders a judge prompt,
// parses the judge's answer, evaluates CEL expressions and calls webhooks,
// and turns every result into a score value of the evaluator's output type.
// It does no I/O of its own beyond the webhook call; the workers load the
// data and write the scores.
package evaluator // import "github.com/glassbox-dev/glassbox/internal/evaluator"

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Object is a trace or an observation as variables read it. Input and
// Output are stored text (JSON when the source sent JSON); Metadata is a
// JSON object text.
type Object struct {
	Name     string
	Input    string
	Output   string
	Metadata string
}

// Item is a dataset item as variables read it; its fields are JSON text,
// empty when absent.
type Item struct {
	Input          string
	ExpectedOutput string
	Metadata       string
}

// Data is everything a job's variables may read.
type Data struct {
	// Trace is the evaluated trace, or the trace of the evaluated observation.
	Trace *Object
	// Observation is the evaluated observation; nil for trace targets.
	Observation *Object
	// Observations are the trace's observations in start order, for
	// mappings that name one.
	Observations []Object
	// DatasetItem is the item the trace was run for, when there is one.
	DatasetItem *Item
}

// Values reads every mapping from d. A variable whose source is absent
// (no dataset item, no observation of that name, a missing key) is nil.
func Values(vars []controlplane.VariableMapping, d Data) (map[string]any, error) {
	out := make(map[string]any, len(vars))
	for _, v := range vars {
		text, ok := d.text(v)
		if !ok {
			out[v.Name] = nil
			continue
		}
		value := decode(text)
		if v.Key != "" {
			var err error
			if value, err = lookup(value, v.Key); err != nil {
				return nil, fmt.Errorf("variable %q: %w", v.Name, err)
			}
		}
		out[v.Name] = value
	}
	return out, nil
}

// text returns the raw text a mapping reads.
func (d Data) text(v controlplane.VariableMapping) (string, bool) {
	if v.Source == controlplane.SourceDatasetItem {
		if d.DatasetItem == nil {
			return "", false
		}
		switch v.Field {
		case controlplane.FieldInput:
			return d.DatasetItem.Input, d.DatasetItem.Input != ""
		case controlplane.FieldExpectedOutput:
			return d.DatasetItem.ExpectedOutput, d.DatasetItem.ExpectedOutput != ""
		case controlplane.FieldMetadata:
			return d.DatasetItem.Metadata, d.DatasetItem.Metadata != ""
		}
		return "", false
	}
	obj := d.object(v)
	if obj == nil {
		return "", false
	}
	switch v.Field {
	case controlplane.FieldInput:
		return obj.Input, obj.Input != ""
	case controlplane.FieldOutput:
		return obj.Output, obj.Output != ""
	case controlplane.FieldMetadata:
		return obj.Metadata, obj.Metadata != ""
	case controlplane.FieldName:
		quoted, _ := json.Marshal(obj.Name)
		return string(quoted), true
	}
	return "", false
}

// object picks the trace or observation a mapping reads: the named one,
// the trace, or the target itself.
func (d Data) object(v controlplane.VariableMapping) *Object {
	switch {
	case v.ObservationName != "":
		for i := len(d.Observations) - 1; i >= 0; i-- {
			if d.Observations[i].Name == v.ObservationName {
				return &d.Observations[i]
			}
		}
		return nil
	case v.Source == controlplane.SourceTrace:
		return d.Trace
	case v.Source == controlplane.SourceObservation:
		return d.Observation
	case d.Observation != nil:
		return d.Observation
	}
	return d.Trace
}

// decode parses JSON text; text that is not JSON is the string itself.
func decode(text string) any {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	return v
}

// lookup follows a dot-separated path of object keys and array indexes. A
// path that runs out of data yields nil; one that indexes a scalar is an error.
func lookup(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case map[string]any:
			v = x[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil {
				return nil, fmt.Errorf("key %q: %q indexes a list and must be a number", path, part)
			}
			if i < 0 || i >= len(x) {
				return nil, nil
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("key %q: %q reaches into a %T", path, part, v)
		}
	}
	return v, nil
}

// Text renders a variable value into prompt text: strings as they are,
// nil as nothing, anything else as compact JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Render replaces each {{name}} of prompt with its value's text.
func Render(prompt string, values map[string]any) string {
	var b strings.Builder
	rest := prompt
	for {
		start := strings.Index(rest, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(rest[start:], "}}")
		if end < 0 {
			break
		}
		name := strings.TrimSpace(rest[start+2 : start+end])
		b.WriteString(rest[:start])
		if v, ok := values[name]; ok {
			b.WriteString(Text(v))
		} else {
			b.WriteString(rest[start : start+end+2])
		}
		rest = rest[start+end+2:]
	}
	b.WriteString(rest)
	return b.String()
}
