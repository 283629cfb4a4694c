package observations // import "github.com/glassbox-dev/glassbox/apiserver/observations"

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// Store is what the routes need from the ClickHouse store.
type Store interface {
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	ListObservations(ctx context.Context, f chstore.ObservationFilter) (chstore.ObservationPage, error)
}

// types and levels are the values the type and level filters accept.
var (
	types = []string{
		model.TypeSpan, model.TypeGeneration, model.TypeEvent, model.TypeAgent, model.TypeTool,
		model.TypeChain, model.TypeRetriever, model.TypeEvaluator, model.TypeEmbedding, model.TypeGuardrail,
	}
	levels = []string{model.LevelDebug, model.LevelDefault, model.LevelWarning, model.LevelError}
)

// v2 list limits.
const (
	defaultV2Limit = 50
	maxV2Limit     = 1000
)

var filterParams = []httpx.Param{
	{Name: "name", Type: httpx.TypeString},
	{Name: "userId", Type: httpx.TypeString, Description: "Observations of traces that carried this user id."},
	{Name: "type", Type: httpx.TypeString, Description: "SPAN, GENERATION, EVENT, AGENT, TOOL, CHAIN, RETRIEVER, EVALUATOR, EMBEDDING or GUARDRAIL."},
	{Name: "traceId", Type: httpx.TypeString},
	{Name: "level", Type: httpx.TypeString, Description: "DEBUG, DEFAULT, WARNING or ERROR."},
	{Name: "parentObservationId", Type: httpx.TypeString},
	{Name: "environment", Type: httpx.TypeString, Repeated: true, Description: "Any of these environments."},
	{Name: "fromStartTime", Type: httpx.TypeDateTime, Description: "Start time on or after (ISO 8601)."},
	{Name: "toStartTime", Type: httpx.TypeDateTime, Description: "Start time before (ISO 8601)."},
	{Name: "version", Type: httpx.TypeString},
	httpx.FilterParam("observations"),
}

// Routes returns the observation routes.
func Routes(store Store, prompts PromptLookup) []httpx.Route {
	h := handlers{store: store, prompts: prompts}
	v2Params := append([]httpx.Param{
		{Name: "fields", Type: httpx.TypeString, Description: "Comma-separated field groups: core, basic, time, io, metadata, model, usage, prompt, metrics, trace_context (default core,basic)."},
		{Name: "limit", Type: httpx.TypeInteger, Description: "Items per page, 1 to 1000 (default 50)."},
		{Name: "cursor", Type: httpx.TypeString, Description: "meta.cursor of the previous page."},
		{Name: "expandMetadata", Type: httpx.TypeString, Description: "Accepted for compatibility; metadata values are never truncated."},
		{Name: "parseIoAsJson", Type: httpx.TypeBoolean, Description: "Deprecated; true is refused, input and output are raw strings."},
		{Name: "sessionId", Type: httpx.TypeString, Description: "Observations of traces that carried this session id."},
		{Name: "isRootObservation", Type: httpx.TypeBoolean, Description: "true: trace roots only (no parent, or marked the trace root); false: all others."},
	}, filterParams...)
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/observations/{observationId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "observations_get", Tag: "Observations", Response: View{},
				Summary: "One observation of the key's project."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/observations", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "observations_getMany", Tag: "Observations", Response: httpx.List[View]{},
				Query:   append(append([]httpx.Param{}, httpx.PageParams...), filterParams...),
				Summary: "The key's project's observations, newest start first, page by page."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/observations", Access: httpx.ProjectKey, Handler: h.listV2,
			Doc: httpx.Doc{OperationID: "observations_getManyV2", Tag: "Observations", Response: V2List{}, Query: v2Params,
				Summary: "The key's project's observations, newest start first, with field groups and a cursor."},
		},
	}
}

type handlers struct {
	store   Store
	prompts PromptLookup
}

func (h handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("observationId")
	o, err := h.store.GetObservation(r.Context(), httpx.ProjectID(r), id)
	if err != nil {
		return nil, StoreError(err, "Observation "+id)
	}
	prompts, err := LookupPromptIDs(r.Context(), h.prompts, o.ProjectID, []chstore.Observation{o})
	if err != nil {
		return nil, err
	}
	return ToView(o, prompts), nil
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	f, err := filter(r, q)
	if err != nil {
		return nil, err
	}
	f.Page, f.Limit = page.Number, page.Limit
	res, err := h.store.ListObservations(r.Context(), f)
	if err != nil {
		return nil, StoreError(err, "Observations")
	}
	prompts, err := LookupPromptIDs(r.Context(), h.prompts, f.ProjectID, res.Observations)
	if err != nil {
		return nil, err
	}
	views := make([]View, 0, len(res.Observations))
	for _, o := range res.Observations {
		views = append(views, ToView(o, prompts))
	}
	return httpx.NewList(views, page, int64(res.Total)), nil
}

func (h handlers) listV2(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	limit, err := q.Int("limit", defaultV2Limit, 1, maxV2Limit)
	if err != nil {
		return nil, err
	}
	groups, err := parseGroups(q.List("fields"))
	if err != nil {
		return nil, err
	}
	if parse, err := q.Bool("parseIoAsJson"); err != nil {
		return nil, err
	} else if parse != nil && *parse {
		return nil, httpx.BadRequest("Invalid query parameter parseIoAsJson=true: input and output are returned as raw strings; remove the parameter")
	}
	cursor, err := decodeCursor(q.String("cursor"))
	if err != nil {
		return nil, err
	}
	f, err := filter(r, q)
	if err != nil {
		return nil, err
	}
	if f.Root, err = q.Bool("isRootObservation"); err != nil {
		return nil, err
	}
	f.SessionID, f.Limit, f.Cursor = q.String("sessionId"), limit, cursor
	res, err := h.store.ListObservations(r.Context(), f)
	if err != nil {
		return nil, StoreError(err, "Observations")
	}
	var prompts PromptIDs
	if groups[groupPrompt] {
		if prompts, err = LookupPromptIDs(r.Context(), h.prompts, f.ProjectID, res.Observations); err != nil {
			return nil, err
		}
	}
	out := V2List{Data: make([]V2, 0, len(res.Observations))}
	for _, o := range res.Observations {
		out.Data = append(out.Data, toV2(o, groups, prompts))
	}
	if res.Next != nil {
		out.Meta.Cursor = encodeCursor(*res.Next)
	}
	return out, nil
}

// filter reads the filters both lists share.
func filter(r *http.Request, q httpx.Query) (chstore.ObservationFilter, error) {
	filters, err := chstore.ParseFilters(q.String("filter"))
	if err != nil {
		return chstore.ObservationFilter{}, StoreError(err, "Observations")
	}
	f := chstore.ObservationFilter{
		ProjectID:   httpx.ProjectID(r),
		TraceID:     q.String("traceId"),
		Name:        q.String("name"),
		UserID:      q.String("userId"),
		ParentID:    q.String("parentObservationId"),
		Environment: q.Strings("environment"),
		Version:     q.String("version"),
		Filters:     filters,
	}
	if f.Type, err = q.OneOf("type", types); err != nil {
		return f, err
	}
	if f.Level, err = q.OneOf("level", levels); err != nil {
		return f, err
	}
	if f.From, err = q.Micros("fromStartTime"); err != nil {
		return f, err
	}
	f.To, err = q.Micros("toStartTime")
	return f, err
}

// cursor is the v2 cursor, base64 of this JSON as in Langfuse; the time
// carries microseconds so that no observation is skipped or repeated.
type cursor struct {
	LastStartTimeTo string `json:"lastStartTimeTo"`
	LastTraceID     string `json:"lastTraceId"`
	LastID          string `json:"lastId"`
}

const cursorTimeLayout = "2006-01-02T15:04:05.000000Z"

func encodeCursor(c chstore.ObservationCursor) string {
	buf, _ := json.Marshal(cursor{
		LastStartTimeTo: time.UnixMicro(c.StartTime).UTC().Format(cursorTimeLayout),
		LastTraceID:     c.TraceID,
		LastID:          c.ID,
	})
	return base64.StdEncoding.EncodeToString(buf)
}

func decodeCursor(raw string) (*chstore.ObservationCursor, error) {
	if raw == "" {
		return nil, nil
	}
	bad := httpx.BadRequest("Invalid query parameter cursor: pass meta.cursor of the previous page unchanged")
	buf, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, bad
	}
	var c cursor
	if err := json.Unmarshal(buf, &c); err != nil || c.LastID == "" {
		return nil, bad
	}
	t, err := time.Parse(time.RFC3339Nano, c.LastStartTimeTo)
	if err != nil {
		return nil, bad
	}
	return &chstore.ObservationCursor{StartTime: t.UnixMicro(), TraceID: c.LastTraceID, ID: c.LastID}, nil
}

// StoreError names the addressed object in a 404, as Langfuse words it;
// httpx maps the stores' verdicts, this one included.
func StoreError(err error, what string) error {
	return httpx.NotFoundAs(err, "%s not found within authorized project", what)
}
