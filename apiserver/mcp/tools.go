package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

// The routes the tools call. A tool answers exactly what its route
// answers to the same key: the same parameters, checks, filter grammar and
// project scoping, with no second implementation to drift.
const (
	routePrompts      = "GET /api/public/v2/prompts"
	routePrompt       = "GET /api/public/v2/prompts/{promptName}"
	routeTraces       = "GET /api/public/traces"
	routeTrace        = "GET /api/public/traces/{traceId}"
	routeObservations = "GET /api/public/v2/observations"
	routeMetrics      = "GET /api/public/v2/metrics"
)

// tool is one MCP tool: its definition as tools/list sends it, and how a
// call runs.
type tool struct {
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description"`
	InputSchema *schema      `json:"inputSchema"`
	Annotations *annotations `json:"annotations,omitempty"`
	// run answers a call whose arguments passed InputSchema.
	run func(r *http.Request, args map[string]any) (map[string]any, error)
}

// annotations tell clients that every tool only reads.
type annotations struct {
	ReadOnlyHint  bool `json:"readOnlyHint"`
	OpenWorldHint bool `json:"openWorldHint"`
}

var readOnly = &annotations{ReadOnlyHint: true}

// route is a route of the API that a tool calls.
type route struct {
	path    string
	params  []httpx.Param
	handler httpx.Handler
}

// buildTools makes the tools over the API's route table.
func buildTools(api []httpx.Route) []tool {
	byName := map[string]httpx.Route{}
	for _, rt := range api {
		byName[rt.Method+" "+rt.Path] = rt
	}
	find := func(name string) route {
		rt, ok := byName[name]
		if !ok {
			// Only a broken build gets here; the tool then fails every call
			// and the package's tests fail.
			return route{handler: func(*http.Request) (any, error) {
				return nil, fmt.Errorf("route %s is not served", name)
			}}
		}
		return route{path: rt.Path, params: rt.Doc.Query, handler: rt.Handler}
	}
	prompts, prompt := find(routePrompts), find(routePrompt)
	traces, trace := find(routeTraces), find(routeTrace)
	observations, metrics := find(routeObservations), find(routeMetrics)

	promptSchema := fromParams(prompt.params, nil)
	promptSchema.Properties["name"] = str("The prompt's name (folders separated by /).")
	promptSchema.Required = []string{"name"}

	tracesSchema := fromParams(traces.params, nil)
	tracesSchema.Properties["filter"] = arrayOf("Filters over the traces view, all of which must match (docs/metrics.md).", filterSchema)
	observationsSchema := fromParams(observations.params, []string{"expandMetadata", "parseIoAsJson"})
	observationsSchema.Properties["filter"] = arrayOf("Filters over the observations view, all of which must match (docs/metrics.md).", filterSchema)

	return []tool{
		{
			Name: "list_prompts", Title: "List prompts", Annotations: readOnly,
			Description: "Lists the project's prompts by name, with their versions, labels and tags, page by page (meta.totalPages).",
			InputSchema: fromParams(prompts.params, nil),
			run:         prompts.list,
		},
		{
			Name: "get_prompt", Title: "Get a prompt", Annotations: readOnly,
			Description: "Fetches one version of a prompt: by label (default production) or by version number, with references to other prompts resolved unless resolve is false.",
			InputSchema: promptSchema,
			run: func(r *http.Request, args map[string]any) (map[string]any, error) {
				return prompt.get(r, "promptName", args["name"].(string), without(args, "name"))
			},
		},
		{
			Name: "list_traces", Title: "Query traces", Annotations: readOnly,
			Description: "Lists the project's traces, newest first unless orderBy says otherwise, with the parameters of GET /api/public/traces " +
				"and structured filters. Use fields (e.g. core,metrics) to leave out inputs and outputs when they are not needed.",
			InputSchema: tracesSchema,
			run:         traces.list,
		},
		{
			Name: "list_observations", Title: "Query observations", Annotations: readOnly,
			Description: "Lists the project's observations (spans, generations, events, ...), newest start first, with the parameters of " +
				"GET /api/public/v2/observations and structured filters; meta.cursor fetches the next page. fields picks field groups " +
				"(default core,basic; add io, usage, model, metrics ... as needed).",
			InputSchema: observationsSchema,
			run:         observations.list,
		},
		{
			Name: "get_trace", Title: "Get a trace", Annotations: readOnly,
			Description: "Fetches one trace with its observations and scores. Long strings are cut short and, for very large traces, " +
				"the last observations left out (observationsOmitted says how many); list_observations with traceId pages through them all.",
			InputSchema: object([]string{"traceId"}, map[string]*schema{"traceId": str("The trace id.")}),
			run: func(r *http.Request, args map[string]any) (map[string]any, error) {
				return trace.getTrace(r, args["traceId"].(string))
			},
		},
		{
			Name: "query_metrics", Title: "Run a metrics query", Annotations: readOnly,
			Description: "Aggregates the project's observations or scores over a time window: the JSON of GET /api/public/v2/metrics's query " +
				"(views observations, scores-numeric, scores-categorical; dimensions, metrics, filters, timeDimension, orderBy, config). " +
				"Example: {\"view\":\"observations\",\"metrics\":[{\"measure\":\"totalCost\",\"aggregation\":\"sum\"}]," +
				"\"dimensions\":[{\"field\":\"providedModelName\"}],\"fromTimestamp\":\"2026-01-01T00:00:00Z\",\"toTimestamp\":\"2026-02-01T00:00:00Z\"}.",
			InputSchema: metricsSchema,
			run:         metrics.metrics,
		},
	}
}

// metricsSchema is the v2 metrics query (apiserver/metrics.Query).
var metricsSchema = object([]string{"view", "metrics", "fromTimestamp", "toTimestamp"}, map[string]*schema{
	"view": enum("What to aggregate.", "observations", "scores-numeric", "scores-categorical"),
	"dimensions": arrayOf("Fields to group by, e.g. name, type, providedModelName, traceName, userId, environment.",
		object([]string{"field"}, map[string]*schema{"field": str("A dimension of the view.")})),
	"metrics": arrayOf("Measures to aggregate, e.g. count/count, latency/p95, totalCost/sum, totalTokens/sum, value/avg.",
		object([]string{"measure", "aggregation"}, map[string]*schema{
			"measure": str("A measure of the view."),
			"aggregation": enum("", "sum", "avg", "count", "uniq", "min", "max", "p50", "p75", "p90", "p95", "p99",
				"histogram"),
		})),
	"filters": arrayOf("Filters, all of which must match.", filterSchema),
	"timeDimension": object([]string{"granularity"}, map[string]*schema{
		"granularity": enum("Bucket size; auto picks one from the window.", "auto", "minute", "hour", "day", "week", "month"),
	}),
	"fromTimestamp": {Type: "string", Format: "date-time", Description: "Window start (ISO 8601, inclusive)."},
	"toTimestamp":   {Type: "string", Format: "date-time", Description: "Window end (ISO 8601, exclusive)."},
	"orderBy": arrayOf("Sort keys: a dimension, time_dimension or <aggregation>_<measure>.",
		object([]string{"field", "direction"}, map[string]*schema{
			"field":     str(""),
			"direction": enum("", "asc", "desc"),
		})),
	"config": object(nil, map[string]*schema{
		"bins":      {Type: "integer", Description: "Histogram bins (1 to 100)."},
		"row_limit": {Type: "integer", Description: "Rows of the answer (1 to 1000, default 100)."},
	}),
})

// fromParams is the closed object schema of a route's query parameters,
// less those named in skip.
func fromParams(params []httpx.Param, skip []string) *schema {
	props := map[string]*schema{}
	var required []string
	for _, p := range params {
		if slices.Contains(skip, p.Name) {
			continue
		}
		props[p.Name] = paramSchema(p)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return object(required, props)
}

func without(args map[string]any, name string) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// list calls a list route with the arguments as its query parameters.
func (rt route) list(r *http.Request, args map[string]any) (map[string]any, error) {
	return rt.get(r, "", "", args)
}

// metrics calls the metrics route with the arguments as its query JSON.
func (rt route) metrics(r *http.Request, args map[string]any) (map[string]any, error) {
	query, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return rt.get(r, "", "", map[string]any{"query": string(query)})
}

// getTrace calls the trace route and fits its answer into the result bound,
// leaving out the last observations when cutting strings is not enough.
func (rt route) getTrace(r *http.Request, traceID string) (map[string]any, error) {
	body, err := rt.call(r, "traceId", traceID, nil)
	if err != nil {
		return nil, err
	}
	result, err := bound(body)
	if !errors.As(err, new(errTooLarge)) {
		return result, err
	}
	tree, _, err := decodeTree(body)
	if err != nil {
		return nil, err
	}
	tree = cutStrings(tree, cutLengths[len(cutLengths)-1]).(map[string]any)
	all, _ := tree["observations"].([]any)
	fits := func(n int) bool {
		tree["observations"], tree["observationsOmitted"] = all[:n], len(all)-n
		buf, err := json.Marshal(tree)
		return err == nil && len(buf) <= maxResultBytes
	}
	// The largest prefix of the observations that fits.
	n := sort.Search(len(all)+1, func(n int) bool { return !fits(n) }) - 1
	if n < 0 {
		tree["observations"], tree["observationsOmitted"] = []any{}, len(all)
		buf, _ := json.Marshal(tree)
		return nil, errTooLarge{size: len(buf)}
	}
	fits(n)
	return tree, nil
}

// get calls the route with the arguments as query parameters and, when
// pathName is set, pathValue as its path wildcard.
func (rt route) get(r *http.Request, pathName, pathValue string, args map[string]any) (map[string]any, error) {
	body, err := rt.call(r, pathName, pathValue, args)
	if err != nil {
		return nil, err
	}
	return bound(body)
}

func (rt route) call(r *http.Request, pathName, pathValue string, args map[string]any) (any, error) {
	q, err := queryOf(args)
	if err != nil {
		return nil, err
	}
	req := r.Clone(r.Context())
	req.Method = http.MethodGet
	req.URL = &url.URL{Path: rt.path, RawQuery: q.Encode()}
	req.RequestURI = req.URL.RequestURI()
	req.Body, req.ContentLength = http.NoBody, 0
	req.Header.Del("Content-Type")
	if pathName != "" {
		req.SetPathValue(pathName, pathValue)
	}
	return rt.handler(req)
}

// queryOf writes checked arguments as query parameters: scalars as text,
// arrays of scalars as repeated parameters, anything else (filters) as JSON.
func queryOf(args map[string]any) (url.Values, error) {
	q := url.Values{}
	for name, v := range args {
		if items, ok := v.([]any); ok && allScalars(items) {
			for _, item := range items {
				q.Add(name, scalar(item))
			}
			continue
		}
		if isScalar(v) {
			q.Set(name, scalar(v))
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		q.Set(name, string(bytes.TrimSpace(buf.Bytes())))
	}
	return q, nil
}

func allScalars(items []any) bool {
	for _, item := range items {
		if !isScalar(item) {
			return false
		}
	}
	return true
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, json.Number:
		return true
	}
	return false
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
