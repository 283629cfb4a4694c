package itemschema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileAndValidate(t *testing.T) {
	sch, err := Compile("inputSchema", json.RawMessage(`{"type":"object","properties":{"messages":{"type":"array","items":{"properties":{"role":{"enum":["user","system"]}}}}}}`))
	require.NoError(t, err)
	require.NoError(t, Validate(sch, "input", json.RawMessage(`{"messages":[{"role":"user"}]}`)))
	err = Validate(sch, "input", json.RawMessage(`{"messages":[{"role":"user"},{"role":"tool"}]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "input/messages/1/role", "the failing location")

	_, err = Compile("inputSchema", json.RawMessage(`{"$ref":"file:///etc/passwd"}`))
	assert.Error(t, err, "references outside the schema are refused")
	_, err = Compile("inputSchema", json.RawMessage(`{"type":12}`))
	assert.ErrorContains(t, err, "inputSchema is not a valid JSON Schema")
}
