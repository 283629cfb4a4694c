package evaljobs // import "github.com/glassbox-dev/glassbox/internal/evaljobs"

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// Filter fields, in the Langfuse API's spelling.
const (
	FieldName        = "name"
	FieldTraceName   = "traceName"
	FieldType        = "type"
	FieldTags        = "tags"
	FieldEnvironment = "environment"
	FieldUserID      = "userId"
	FieldSessionID   = "sessionId"
	FieldMetadata    = "metadata"
	FieldModel       = "model"
	FieldLevel       = "level"
	FieldRelease     = "release"
	FieldVersion     = "version"
)

// Filter operators. A field has one value (tags any number, metadata one
// per key or none); each operator says what must hold of them.
const (
	OpEquals     = "="
	OpNotEquals  = "!="
	OpContains   = "contains"
	OpStartsWith = "starts with"
	OpAnyOf      = "any of"
	OpNoneOf     = "none of"
	OpAllOf      = "all of"
	OpExists     = "exists"
)

// observationFields apply to observation targets only: a trace has no type,
// model or level of its own.
var observationFields = []string{FieldType, FieldModel, FieldLevel, FieldTraceName}

var traceFields = []string{FieldName, FieldTags, FieldEnvironment, FieldUserID, FieldSessionID, FieldMetadata, FieldRelease, FieldVersion}

var singleValueOps = []string{OpEquals, OpNotEquals, OpContains, OpStartsWith}

var listOps = []string{OpAnyOf, OpNoneOf, OpAllOf}

// ErrInvalidFilter wraps every filter validation error.
var ErrInvalidFilter = errors.New("invalid filter")

// Condition is one test; a filter holds when all its conditions hold.
type Condition struct {
	Field string `json:"field"`
	// Key names the metadata key for FieldMetadata.
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator"`
	// Value is the operand of =, !=, contains and starts with.
	Value string `json:"value,omitempty"`
	// Values are the operands of any of, none of and all of.
	Values []string `json:"values,omitempty"`
}

// Filter selects the traces or observations a rule evaluates; empty
// matches everything.
type Filter []Condition

// Validate reports every malformed condition for a rule of target.
func (f Filter) Validate(target string) error {
	var errs []error
	for i, c := range f {
		if err := c.validate(target); err != nil {
			errs = append(errs, fmt.Errorf("filter[%d]: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidFilter, errors.Join(errs...))
	}
	return nil
}

func (c Condition) validate(target string) error {
	switch {
	case slices.Contains(traceFields, c.Field):
	case slices.Contains(observationFields, c.Field):
		if target != TargetObservation {
			return fmt.Errorf("field %q applies to observation targets only", c.Field)
		}
	default:
		return fmt.Errorf("unknown field %q; expected one of %s", c.Field,
			strings.Join(append(slices.Clone(traceFields), observationFields...), ", "))
	}
	if (c.Field == FieldMetadata) != (c.Key != "") {
		return errors.New("key is required for metadata and allowed for metadata only")
	}
	switch {
	case slices.Contains(singleValueOps, c.Operator):
		if len(c.Values) > 0 {
			return fmt.Errorf("operator %q takes value, not values", c.Operator)
		}
	case slices.Contains(listOps, c.Operator):
		if len(c.Values) == 0 || c.Value != "" {
			return fmt.Errorf("operator %q takes a non-empty values list, not value", c.Operator)
		}
	case c.Operator == OpExists:
		if c.Value != "" || len(c.Values) > 0 {
			return errors.New(`operator "exists" takes no value`)
		}
	default:
		return fmt.Errorf("unknown operator %q; expected one of %s", c.Operator,
			strings.Join(append(append(slices.Clone(singleValueOps), listOps...), OpExists), ", "))
	}
	return nil
}

// Subject is what a filter reads of a trace or an observation.
type Subject struct {
	Name        string
	TraceName   string
	Type        string
	Tags        []string
	Environment string
	UserID      string
	SessionID   string
	Model       string
	Level       string
	Release     string
	Version     string
	// Metadata is a JSON object text; it is parsed on first use.
	Metadata string

	parsed   map[string]json.RawMessage
	parseErr bool
}

// TraceSubject is the trace as one of its spans carries it: trace-level
// fields only. A span that sets no trace name names the trace when it is
// the root.
func TraceSubject(o *model.Observation) Subject {
	name := o.TraceName
	if name == "" && o.IsRoot {
		name = o.Name
	}
	return Subject{
		Name: name, Tags: o.Tags, Environment: o.Environment, UserID: o.UserID, SessionID: o.SessionID,
		Release: o.Release, Version: o.Version, Metadata: o.TraceMetadata,
	}
}

// ObservationSubject is an observation with the trace-level fields it carried.
func ObservationSubject(o *model.Observation) Subject {
	return Subject{
		Name: o.Name, TraceName: o.TraceName, Type: o.Type, Tags: o.Tags, Environment: o.Environment,
		UserID: o.UserID, SessionID: o.SessionID, Model: o.Model, Level: o.Level,
		Release: o.Release, Version: o.Version, Metadata: o.Metadata,
	}
}

// values returns the field's values: none for an empty string or a missing
// metadata key. Metadata values that are not strings compare as JSON text.
func (s *Subject) values(field, key string, buf *[1]string) []string {
	var v string
	switch field {
	case FieldTags:
		return s.Tags
	case FieldMetadata:
		raw, ok := s.metadataValue(key)
		if !ok {
			return nil
		}
		v = string(raw)
		var str string
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
			v = str
		}
		buf[0] = v
		return buf[:]
	case FieldName:
		v = s.Name
	case FieldTraceName:
		v = s.TraceName
	case FieldType:
		v = s.Type
	case FieldEnvironment:
		v = s.Environment
	case FieldUserID:
		v = s.UserID
	case FieldSessionID:
		v = s.SessionID
	case FieldModel:
		v = s.Model
	case FieldLevel:
		v = s.Level
	case FieldRelease:
		v = s.Release
	case FieldVersion:
		v = s.Version
	}
	if v == "" {
		return nil
	}
	buf[0] = v
	return buf[:]
}

func (s *Subject) metadataValue(key string) (json.RawMessage, bool) {
	if s.parsed == nil && !s.parseErr {
		if s.Metadata == "" || s.Metadata == "{}" || json.Unmarshal([]byte(s.Metadata), &s.parsed) != nil {
			s.parseErr = true
		}
	}
	raw, ok := s.parsed[key]
	return raw, ok
}

// Matches reports whether every condition holds for s. It assumes a
// validated filter; a condition it does not know fails.
func (f Filter) Matches(s *Subject) bool {
	var buf [1]string
	for i := range f {
		if !f[i].holds(s.values(f[i].Field, f[i].Key, &buf)) {
			return false
		}
	}
	return true
}

func (c *Condition) holds(values []string) bool {
	switch c.Operator {
	case OpEquals:
		return slices.Contains(values, c.Value)
	case OpNotEquals:
		return !slices.Contains(values, c.Value)
	case OpContains:
		return slices.ContainsFunc(values, func(v string) bool { return strings.Contains(v, c.Value) })
	case OpStartsWith:
		return slices.ContainsFunc(values, func(v string) bool { return strings.HasPrefix(v, c.Value) })
	case OpAnyOf:
		return slices.ContainsFunc(values, func(v string) bool { return slices.Contains(c.Values, v) })
	case OpNoneOf:
		return !slices.ContainsFunc(values, func(v string) bool { return slices.Contains(c.Values, v) })
	case OpAllOf:
		for _, want := range c.Values {
			if !slices.Contains(values, want) {
				return false
			}
		}
		return true
	case OpExists:
		return len(values) > 0
	}
	return false
}
