package evaljobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilterValidate(t *testing.T) {
	valid := Filter{
		{Field: FieldName, Operator: OpEquals, Value: "chat"},
		{Field: FieldTags, Operator: OpAllOf, Values: []string{"a", "b"}},
		{Field: FieldMetadata, Key: "customer", Operator: OpExists},
		{Field: FieldEnvironment, Operator: OpNoneOf, Values: []string{"dev"}},
	}
	require.NoError(t, valid.Validate(TargetTrace))
	require.NoError(t, append(valid, Condition{Field: FieldModel, Operator: OpStartsWith, Value: "gpt-"}).Validate(TargetObservation))

	tests := map[string]struct {
		c      Condition
		target string
		want   string
	}{
		"unknown field":          {Condition{Field: "cost", Operator: OpEquals, Value: "1"}, TargetTrace, `unknown field "cost"`},
		"observation-only field": {Condition{Field: FieldModel, Operator: OpEquals, Value: "x"}, TargetTrace, "observation targets only"},
		"metadata without key":   {Condition{Field: FieldMetadata, Operator: OpExists}, TargetTrace, "key is required"},
		"key on another field":   {Condition{Field: FieldName, Key: "k", Operator: OpExists}, TargetTrace, "key is required"},
		"unknown operator":       {Condition{Field: FieldName, Operator: "~", Value: "x"}, TargetTrace, `unknown operator "~"`},
		"list op without values": {Condition{Field: FieldTags, Operator: OpAnyOf}, TargetTrace, "non-empty values"},
		"single op with values":  {Condition{Field: FieldName, Operator: OpEquals, Values: []string{"x"}}, TargetTrace, "takes value"},
		"exists with a value":    {Condition{Field: FieldUserID, Operator: OpExists, Value: "x"}, TargetTrace, "takes no value"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := Filter{tt.c}.Validate(tt.target)
			require.ErrorIs(t, err, ErrInvalidFilter)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "filter[0]")
		})
	}
}

func TestFilterMatches(t *testing.T) {
	subject := func() *Subject {
		return &Subject{Name: "chat", Type: "GENERATION", Tags: []string{"prod", "beta"}, Environment: "production",
			UserID: "u1", SessionID: "s1", Model: "gpt-4o-mini", Level: "DEFAULT", Release: "1.2", Version: "v3",
			Metadata: `{"customer":"acme","tier":2,"flag":true}`}
	}
	tests := []struct {
		c    Condition
		want bool
	}{
		{Condition{Field: FieldName, Operator: OpEquals, Value: "chat"}, true},
		{Condition{Field: FieldName, Operator: OpEquals, Value: "other"}, false},
		{Condition{Field: FieldName, Operator: OpNotEquals, Value: "other"}, true},
		{Condition{Field: FieldModel, Operator: OpStartsWith, Value: "gpt-4"}, true},
		{Condition{Field: FieldModel, Operator: OpContains, Value: "mini"}, true},
		{Condition{Field: FieldModel, Operator: OpContains, Value: "claude"}, false},
		{Condition{Field: FieldTags, Operator: OpAnyOf, Values: []string{"x", "beta"}}, true},
		{Condition{Field: FieldTags, Operator: OpAllOf, Values: []string{"prod", "beta"}}, true},
		{Condition{Field: FieldTags, Operator: OpAllOf, Values: []string{"prod", "x"}}, false},
		{Condition{Field: FieldTags, Operator: OpNoneOf, Values: []string{"beta"}}, false},
		{Condition{Field: FieldTags, Operator: OpEquals, Value: "prod"}, true},
		{Condition{Field: FieldEnvironment, Operator: OpAnyOf, Values: []string{"production"}}, true},
		{Condition{Field: FieldUserID, Operator: OpEquals, Value: "u2"}, false},
		{Condition{Field: FieldSessionID, Operator: OpExists}, true},
		{Condition{Field: FieldLevel, Operator: OpNoneOf, Values: []string{"ERROR"}}, true},
		{Condition{Field: FieldRelease, Operator: OpEquals, Value: "1.2"}, true},
		{Condition{Field: FieldVersion, Operator: OpEquals, Value: "v4"}, false},
		{Condition{Field: FieldType, Operator: OpEquals, Value: "GENERATION"}, true},
		{Condition{Field: FieldTraceName, Operator: OpExists}, false},
		{Condition{Field: FieldMetadata, Key: "customer", Operator: OpEquals, Value: "acme"}, true},
		{Condition{Field: FieldMetadata, Key: "tier", Operator: OpEquals, Value: "2"}, true},
		{Condition{Field: FieldMetadata, Key: "flag", Operator: OpEquals, Value: "true"}, true},
		{Condition{Field: FieldMetadata, Key: "missing", Operator: OpExists}, false},
		{Condition{Field: FieldMetadata, Key: "missing", Operator: OpNotEquals, Value: "x"}, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Filter{tt.c}.Matches(subject()), "%+v", tt.c)
	}
	assert.True(t, Filter{}.Matches(subject()), "an empty filter matches everything")
	assert.False(t, Filter{tests[0].c, tests[1].c}.Matches(subject()), "conditions are joined by AND")

	bad := &Subject{Metadata: "not json"}
	assert.False(t, Filter{{Field: FieldMetadata, Key: "k", Operator: OpExists}}.Matches(bad))
	assert.False(t, Filter{{Field: FieldName, Operator: "bogus"}}.Matches(subject()), "an unknown operator fails")
}
