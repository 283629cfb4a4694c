// Package openapi generates the OpenAPI 3 document of the API server from the
// same route table the router serves, so the two cannot drift apart. Schemas
// come from the Go types of request and response bodies (their json tags).
package openapi // import "github.com/glassbox-dev/glassbox/apiserver/openapi"

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

// Path is where the document is served.
const Path = "/api/public/openapi.json"

// Schemer is implemented by types whose JSON form is not their Go structure
// (timestamps, free-form JSON).
type Schemer interface {
	OpenAPISchema() map[string]any
}

// Document is the OpenAPI document of routes.
func Document(routes []httpx.Route, version string) map[string]any {
	g := &generator{schemas: map[string]any{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
	paths := map[string]any{}
	for _, rt := range routes {
		item, ok := paths[rt.Path].(map[string]any)
		if !ok {
			item = map[string]any{}
			paths[rt.Path] = item
		}
		item[strings.ToLower(rt.Method)] = g.operation(rt)
	}
	g.schemas["Error"] = g.schemaOf(reflect.TypeFor[errorBody]())
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":   "Glassbox API",
			"version": version,
			"description": "Langfuse-compatible public API. Authenticate with HTTP Basic auth: public key as user name, secret key as password. " +
				"Operations that list BearerAuth also take the public key alone as a bearer token, which may only write scores.",
		},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"BasicAuth": map[string]any{"type": "http", "scheme": "basic"},
				"BearerAuth": map[string]any{"type": "http", "scheme": "bearer",
					"description": "A project's public key alone; grants only the scores scope."},
				"AdminBearerAuth": map[string]any{"type": "http", "scheme": "bearer",
					"description": "The instance's admin API key (admin_api_key); the admin routes answer 404 without one configured."},
			},
			"schemas": g.schemas,
		},
	}
}

// Route serves the document of routes (plus its own route) without
// authentication: it describes the API and holds no data.
func Route(routes []httpx.Route, version string) httpx.Route {
	self := httpx.Route{
		Method: http.MethodGet,
		Path:   Path,
		Access: httpx.Public,
		Doc: httpx.Doc{
			OperationID: "openapi_get",
			Summary:     "The OpenAPI document of this API.",
			Tag:         "Meta",
			Response:    map[string]any{},
		},
	}
	all := append(append([]httpx.Route{}, routes...), self)
	doc, err := json.Marshal(Document(all, version))
	self.Handler = func(*http.Request) (any, error) {
		if err != nil {
			return nil, fmt.Errorf("encode OpenAPI document: %w", err)
		}
		return json.RawMessage(doc), nil
	}
	return self
}

// errorBody is the shape of every error response.
type errorBody struct {
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

var wildcard = regexp.MustCompile(`\{([^}]+)\}`)

func (g *generator) operation(rt httpx.Route) map[string]any {
	var params []any
	for _, m := range wildcard.FindAllStringSubmatch(rt.Path, -1) {
		params = append(params, map[string]any{
			"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"},
		})
	}
	for _, p := range rt.Doc.Query {
		params = append(params, queryParam(p))
	}
	status := rt.Doc.Status
	if status == 0 {
		status = http.StatusOK
	}
	responses := map[string]any{
		fmt.Sprint(status): map[string]any{
			"description": http.StatusText(status),
			"content":     jsonContent(g.schemaOf(reflect.TypeOf(rt.Doc.Response))),
		},
	}
	errorCodes := []int{http.StatusInternalServerError}
	if len(params) > 0 || rt.Doc.Body != nil {
		errorCodes = append(errorCodes, http.StatusBadRequest)
	}
	if strings.Contains(rt.Path, "{") {
		errorCodes = append(errorCodes, http.StatusNotFound)
	}
	if rt.Doc.Body != nil {
		errorCodes = append(errorCodes, http.StatusRequestEntityTooLarge)
	}
	op := map[string]any{
		"operationId": rt.Doc.OperationID,
		"summary":     rt.Doc.Summary,
		"tags":        []string{rt.Doc.Tag},
	}
	switch rt.Access {
	case httpx.Public:
		op["security"] = []any{}
	case httpx.ProjectOrScoresKey:
		op["security"] = []any{map[string]any{"BasicAuth": []string{}}, map[string]any{"BearerAuth": []string{}}}
	case httpx.AdminKey:
		op["security"] = []any{map[string]any{"AdminBearerAuth": []string{}}}
	default:
		op["security"] = []any{map[string]any{"BasicAuth": []string{}}}
	}
	switch rt.Access {
	case httpx.Public:
	case httpx.AdminKey:
		errorCodes = append(errorCodes, http.StatusUnauthorized)
	default:
		errorCodes = append(errorCodes, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	}
	for _, code := range errorCodes {
		responses[fmt.Sprint(code)] = map[string]any{
			"description": http.StatusText(code),
			"content":     jsonContent(map[string]any{"$ref": "#/components/schemas/Error"}),
		}
	}
	op["responses"] = responses
	if len(params) > 0 {
		op["parameters"] = params
	}
	if rt.Doc.Body != nil {
		op["requestBody"] = map[string]any{
			"required": true,
			"content":  jsonContent(g.schemaOf(reflect.TypeOf(rt.Doc.Body))),
		}
	}
	return op
}

func queryParam(p httpx.Param) map[string]any {
	schema := map[string]any{"type": string(p.Type)}
	if p.Type == httpx.TypeDateTime {
		schema = map[string]any{"type": "string", "format": "date-time"}
	}
	if p.Repeated {
		schema = map[string]any{"type": "array", "items": schema}
	}
	out := map[string]any{"name": p.Name, "in": "query", "schema": schema}
	if p.Required {
		out["required"] = true
	}
	if p.Description != "" {
		out["description"] = p.Description
	}
	if p.Repeated {
		out["style"], out["explode"] = "form", true
	}
	return out
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// generator turns Go types into schemas; named struct types become
// components referenced by $ref.
type generator struct {
	schemas map[string]any
	names   map[reflect.Type]string
	taken   map[string]reflect.Type
}

var (
	schemerType = reflect.TypeFor[Schemer]()
	rawType     = reflect.TypeFor[json.RawMessage]()
)

func (g *generator) schemaOf(t reflect.Type) map[string]any {
	if t == nil || t == rawType || t.Kind() == reflect.Interface {
		return map[string]any{}
	}
	// Pointers first: *T has T's methods, and calling them on a nil *T panics.
	if t.Kind() != reflect.Pointer && t.Implements(schemerType) {
		return reflect.Zero(t).Interface().(Schemer).OpenAPISchema()
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.schemaOf(t.Elem())
		if _, isRef := inner["$ref"]; isRef {
			return map[string]any{"allOf": []any{inner}, "nullable": true}
		}
		out := map[string]any{"nullable": true}
		for k, v := range inner {
			out[k] = v
		}
		return out
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schemaOf(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + g.component(t)}
	}
	return map[string]any{}
}

// component registers a named struct type and returns its schema name.
func (g *generator) component(t reflect.Type) string {
	if name, ok := g.names[t]; ok {
		return name
	}
	name := schemaName(t)
	if other, ok := g.taken[name]; ok && other != t {
		// Two packages use the same type name: qualify with the package.
		pkg := t.PkgPath()
		name = exportName(pkg[strings.LastIndex(pkg, "/")+1:]) + name
	}
	g.names[t], g.taken[name] = name, t
	g.schemas[name] = map[string]any{} // placeholder for recursive types
	g.schemas[name] = g.object(t)
	return name
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// schemaName names generic instances after their arguments: List[...traces.Trace] is ListOfTrace.
func schemaName(t reflect.Type) string {
	base, args, generic := strings.Cut(t.Name(), "[")
	if !generic {
		return base
	}
	var parts []string
	for arg := range strings.SplitSeq(strings.TrimSuffix(args, "]"), ",") {
		arg = arg[strings.LastIndex(arg, ".")+1:]
		parts = append(parts, nonWord.ReplaceAllString(arg, ""))
	}
	return base + "Of" + strings.Join(parts, "And")
}

func exportName(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (g *generator) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// fields collects the JSON properties of struct t, flattening embedded
// structs as encoding/json does. The fields of an embedded pointer are
// optional: encoding/json omits them all when the pointer is nil.
func (g *generator) fields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			switch {
			case f.Type.Kind() == reflect.Struct:
				g.fields(f.Type, props, required)
				continue
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				var optional []string
				g.fields(f.Type.Elem(), props, &optional)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schemaOf(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}
