package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/openapi/internal/other"
)

type Item struct {
	ID       string           `json:"id"`
	Note     string           `json:"note,omitempty"`
	When     httpx.Timestamp  `json:"when"`
	Maybe    *httpx.Timestamp `json:"maybe"`
	Count    *int64           `json:"count"`
	Free     httpx.JSON       `json:"free"`
	Tags     []string         `json:"tags"`
	Costs    map[string]float64
	Child    *Item      `json:"child"`
	Other    other.Item `json:"otherItem"`
	Hidden   string     `json:"-"`
	internal string     //nolint:unused // unexported fields must stay out of the schema, which the test checks
}

type Base struct {
	Core string `json:"core"`
}

type Extra struct {
	Extra string `json:"extra"`
}

type Grouped struct {
	Base
	*Extra
}

type Body struct {
	IDs []string `json:"ids"`
}

func routes() []httpx.Route {
	noop := func(*http.Request) (any, error) { return nil, nil }
	return []httpx.Route{
		{Method: http.MethodGet, Path: "/items/{itemId}", Access: httpx.ProjectKey, Handler: noop,
			Doc: httpx.Doc{OperationID: "items_get", Tag: "Items", Response: Item{}}},
		{Method: http.MethodGet, Path: "/items", Access: httpx.ProjectKey, Handler: noop,
			Doc: httpx.Doc{OperationID: "items_list", Tag: "Items", Response: httpx.List[Item]{},
				Query: []httpx.Param{{Name: "tags", Type: httpx.TypeString, Repeated: true}, {Name: "from", Type: httpx.TypeDateTime, Required: true}}}},
		{Method: http.MethodDelete, Path: "/items", Access: httpx.ProjectKey, Handler: noop,
			Doc: httpx.Doc{OperationID: "items_delete", Tag: "Items", Body: Body{}, Response: Grouped{}, Status: http.StatusAccepted}},
		{Method: http.MethodPost, Path: "/scores", Access: httpx.ProjectOrScoresKey, Handler: noop,
			Doc: httpx.Doc{OperationID: "scores_create", Tag: "Scores", Body: Body{}, Response: Item{}}},
	}
}

// doc returns the document as generic JSON, as a client would read it.
func doc(t *testing.T) map[string]any {
	buf, err := json.Marshal(Document(routes(), "1.2.3"))
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(buf, &out))
	return out
}

func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "at %q: %v", p, v)
		v, ok = m[p]
		require.True(t, ok, "missing %q in %v", p, m)
	}
	return v
}

func TestSchemasFollowJSONTags(t *testing.T) {
	d := doc(t)
	schemas := dig(t, d, "components", "schemas").(map[string]any)
	item := schemas["Item"].(map[string]any)
	props := item["properties"].(map[string]any)

	assert.Equal(t, map[string]any{"type": "string"}, props["id"])
	assert.Equal(t, map[string]any{"type": "string", "format": "date-time"}, props["when"])
	assert.Equal(t, map[string]any{"type": "string", "format": "date-time", "nullable": true}, props["maybe"])
	assert.Equal(t, map[string]any{"type": "integer", "nullable": true}, props["count"])
	assert.Equal(t, map[string]any{}, props["free"], "free-form JSON has no type")
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, props["tags"])
	assert.Equal(t, map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "number"}}, props["Costs"])
	assert.Equal(t, map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/Item"}}, "nullable": true}, props["child"])
	assert.NotContains(t, props, "Hidden")
	assert.NotContains(t, props, "internal")
	assert.ElementsMatch(t, []any{"id", "when", "maybe", "count", "free", "tags", "Costs", "child", "otherItem"}, item["required"])

	// Same-named types of two packages both survive.
	assert.Equal(t, map[string]any{"$ref": "#/components/schemas/OtherItem"}, props["otherItem"])
	assert.Contains(t, schemas, "OtherItem")

	assert.Contains(t, schemas, "ListOfItem")
	grouped := schemas["Grouped"].(map[string]any)
	assert.Contains(t, grouped["properties"], "core")
	assert.Contains(t, grouped["properties"], "extra")
	assert.Equal(t, []any{"core"}, grouped["required"], "fields of an embedded pointer are optional")
}

func TestOperations(t *testing.T) {
	d := doc(t)
	assert.Equal(t, "1.2.3", dig(t, d, "info", "version"))

	get := dig(t, d, "paths", "/items/{itemId}", "get").(map[string]any)
	assert.Equal(t, "items_get", get["operationId"])
	params := get["parameters"].([]any)
	assert.Equal(t, map[string]any{"name": "itemId", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}, params[0])
	assert.Equal(t, []any{map[string]any{"BasicAuth": []any{}}}, get["security"])
	assert.Equal(t, []any{map[string]any{"BasicAuth": []any{}}, map[string]any{"BearerAuth": []any{}}},
		dig(t, d, "paths", "/scores", "post", "security"), "the public key alone may write scores")
	assert.Equal(t, "bearer", dig(t, d, "components", "securitySchemes", "BearerAuth", "scheme"))
	for _, code := range []string{"200", "401", "403", "404", "500", "503"} {
		assert.Contains(t, get["responses"], code)
	}

	list := dig(t, d, "paths", "/items", "get").(map[string]any)
	lp := list["parameters"].([]any)
	assert.Equal(t, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, dig(t, lp[0], "schema"))
	assert.Equal(t, true, dig(t, lp[1], "required"))
	assert.Equal(t, "date-time", dig(t, lp[1], "schema", "format"))

	del := dig(t, d, "paths", "/items", "delete").(map[string]any)
	assert.Contains(t, del["responses"], "202")
	assert.Contains(t, del["responses"], "413")
	assert.Equal(t, "#/components/schemas/Body", dig(t, del, "requestBody", "content", "application/json", "schema", "$ref"))
}

func TestRouteServesItselfToo(t *testing.T) {
	rt := Route(routes(), "1.2.3")
	assert.Equal(t, httpx.Public, rt.Access)
	h, err := httpx.NewRouter([]httpx.Route{rt}, httpx.Options{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var served map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &served))
	paths := served["paths"].(map[string]any)
	assert.Contains(t, paths, Path)
	assert.Contains(t, paths, "/items/{itemId}")
	assert.Equal(t, []any{}, dig(t, paths, Path, "get", "security"), "the document needs no key")
}
