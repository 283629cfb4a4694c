package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

// schema is the subset of JSON Schema the tools' inputs use; tools/list
// sends it as the inputSchema, and check validates arguments against it.
type schema struct {
	Type                 string             `json:"type,omitempty"`
	Description          string             `json:"description,omitempty"`
	Format               string             `json:"format,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
}

var no = false

// object is a closed object schema: unknown properties are refused, so a
// misspelt argument is an error rather than a silently dropped filter.
func object(required []string, props map[string]*schema) *schema {
	return &schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

func str(description string) *schema { return &schema{Type: "string", Description: description} }

func enum(description string, values ...string) *schema {
	return &schema{Type: "string", Description: description, Enum: values}
}

func arrayOf(description string, items *schema) *schema {
	return &schema{Type: "array", Description: description, Items: items}
}

// paramSchema turns a route's documented query parameter into the schema of
// the argument that fills it.
func paramSchema(p httpx.Param) *schema {
	s := &schema{Description: p.Description}
	switch p.Type {
	case httpx.TypeInteger:
		s.Type = "integer"
	case httpx.TypeNumber:
		s.Type = "number"
	case httpx.TypeBoolean:
		s.Type = "boolean"
	case httpx.TypeDateTime:
		s.Type, s.Format = "string", "date-time"
		if s.Description == "" {
			s.Description = "ISO 8601 timestamp."
		}
	default:
		s.Type = "string"
	}
	if p.Repeated {
		return &schema{Type: "array", Description: s.Description, Items: &schema{Type: s.Type, Format: s.Format}}
	}
	return s
}

// filterSchema is one filter of the structured filter grammar (docs/metrics.md).
var filterSchema = object([]string{"type", "column", "operator"}, map[string]*schema{
	"type": enum("Filter type.", "datetime", "string", "stringOptions", "categoryOptions", "arrayOptions", "number",
		"stringObject", "numberObject", "booleanObject", "boolean", "null"),
	"column":   str("A field of the view, e.g. name, type, level, userId, metadata, scores_avg."),
	"operator": str("=, >, <, >=, <=, <>, contains, does not contain, starts with, ends with, matches, any of, none of, all of, is null, is not null (as the type allows)."),
	"value":    {Description: "A string, number, boolean, ISO 8601 timestamp or array of strings, as the type needs."},
	"key":      str("The metadata key (dots for nesting) or score name, for object types."),
})

// check validates a decoded value (numbers as json.Number) against s; the
// error names the argument at fault by its path.
func (s *schema) check(path string, v any) error {
	if len(s.Enum) > 0 {
		if str, ok := v.(string); !ok || !slices.Contains(s.Enum, str) {
			return fmt.Errorf("%s must be one of %s", path, strings.Join(s.Enum, ", "))
		}
	}
	switch s.Type {
	case "":
		return nil
	case "string":
		text, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s must be a string", path)
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, text); err != nil {
				return fmt.Errorf("%s must be an ISO 8601 timestamp with a zone, such as 2026-01-31T00:00:00Z", path)
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s must be true or false", path)
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return fmt.Errorf("%s must be a number", path)
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s must be an integer", path)
		}
		if _, err := n.Int64(); err != nil {
			return fmt.Errorf("%s must be an integer", path)
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s must be an array", path)
		}
		for i, item := range items {
			if err := s.Items.check(fmt.Sprintf("%s[%d]", path, i), item); err != nil {
				return err
			}
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", path)
		}
		return s.checkObject(path, obj)
	}
	return nil
}

func (s *schema) checkObject(path string, obj map[string]any) error {
	prefix := path + "."
	if path == "" {
		prefix = ""
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return fmt.Errorf("%s%s is required", prefix, name)
		}
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names) // the first error is the same on every call
	for _, name := range names {
		prop, ok := s.Properties[name]
		if !ok {
			if s.AdditionalProperties != nil && !*s.AdditionalProperties {
				return fmt.Errorf("unknown argument %s%s; the arguments are %s", prefix, name, strings.Join(s.propertyNames(), ", "))
			}
			continue
		}
		if err := prop.check(prefix+name, obj[name]); err != nil {
			return err
		}
	}
	return nil
}

func (s *schema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
