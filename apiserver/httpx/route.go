package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"context"
	"net/http"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// Access says which key a route requires.
type Access int

const (
	// Public routes need no key (health, the OpenAPI document).
	Public Access = iota
	// ProjectKey routes read or change one project's data; organization keys
	// are refused with 403.
	ProjectKey
	// OrganizationKey routes manage an organization's projects and keys;
	// project keys are refused with 403.
	OrganizationKey
	// ProjectOrScoresKey routes take a project key, or a project's public
	// key alone (Bearer), which grants only the scores scope: the handler
	// must refuse anything but writing scores when ScoresOnly says so. Every
	// other route answers a public key alone with 403.
	ProjectOrScoresKey
	// AdminKey routes manage the instance's organizations. They take the
	// operator's admin API key (Options.AdminKey) as a bearer token and no
	// API key; without an admin key configured they are not served (404).
	AdminKey
)

// ScopeScores is the scope of a request authenticated by a public key
// alone: it may write scores to the key's project and nothing else.
const ScopeScores apikey.Scope = "scores"

// Handler answers one route. It returns the response body, written as JSON
// with status 200 (or the status given by WithStatus), or an error: an *Error
// is written as is, anything else is logged and answered 500.
type Handler func(r *http.Request) (any, error)

// Route is one method on one path. The server keeps a single table of them:
// the router serves it and the OpenAPI document is generated from it.
type Route struct {
	Method string
	// Path is an http.ServeMux path pattern such as /api/public/traces/{traceId};
	// its wildcards are the OpenAPI path parameters.
	Path    string
	Access  Access
	Handler Handler
	// LargeBody raises the body limit from Options.MaxBodyBytes to
	// Options.MaxLargeBodyBytes, for routes whose payloads carry whole
	// model inputs and outputs (ingestion batches, dataset items).
	LargeBody bool
	Doc       Doc
}

// Doc describes a route for the OpenAPI document.
type Doc struct {
	OperationID string
	Summary     string
	Tag         string
	Query       []Param
	// Body is a value of the request body type; nil when the route takes none.
	Body any
	// Response is a value of the success response type.
	Response any
	// Status is the success status; 200 when zero.
	Status int
}

// Param is one query parameter.
type Param struct {
	Name        string
	Type        ParamType
	Repeated    bool
	Required    bool
	Description string
}

// ParamType is the OpenAPI type of a query parameter.
type ParamType string

// Query parameter types.
const (
	TypeString   ParamType = "string"
	TypeInteger  ParamType = "integer"
	TypeNumber   ParamType = "number"
	TypeBoolean  ParamType = "boolean"
	TypeDateTime ParamType = "date-time"
)

// PageParams are the query parameters of a page-based list.
var PageParams = []Param{
	{Name: "page", Type: TypeInteger, Description: "Page number, from 1 (default 1)."},
	{Name: "limit", Type: TypeInteger, Description: "Items per page, 1 to 100 (default 50)."},
}

type statusBody struct {
	status int
	body   any
}

// WithStatus makes a handler answer with a status other than 200.
func WithStatus(status int, body any) any {
	return statusBody{status: status, body: body}
}

type rawBody func(w http.ResponseWriter)

// Respond makes a handler write its own answer (headers, status and body),
// for protocols whose answers are not one JSON value with a fixed status,
// such as MCP's empty 202 and its session header. The router has
// authenticated the request and bounded its body as for any route.
func Respond(write func(w http.ResponseWriter)) any {
	return rawBody(write)
}

type principalKey struct{}

// Principal returns the verified key of the request; the zero Principal on
// public routes.
func Principal(ctx context.Context) apikey.Principal {
	p, _ := ctx.Value(principalKey{}).(apikey.Principal)
	return p
}

// ProjectID returns the project of the request's key. On ProjectKey and
// ProjectOrScoresKey routes the router guarantees it is not empty.
func ProjectID(r *http.Request) string {
	return Principal(r.Context()).ProjectID
}

// ScoresOnly reports whether the request holds only the scores scope.
func ScoresOnly(r *http.Request) bool {
	return Principal(r.Context()).Scope == ScopeScores
}

func withPrincipal(ctx context.Context, p apikey.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FilterParam documents the structured `filter` parameter of a list whose
// columns are the fields of a metrics view.
func FilterParam(view string) Param {
	return Param{Name: "filter", Type: TypeString, Description: "JSON array of filters {type, column, operator, value, key?}, " +
		"all of which must match; the columns are the fields of the " + view + " metrics view (docs/metrics.md)."}
}
