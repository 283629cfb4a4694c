// Package traces serves the trace routes: the filtered, paginated list, one
// trace with its observations and scores, and deletion.
package traces // import "github.com/glassbox-dev/glassbox/apiserver/traces"

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/observations"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Store is what the routes need from the ClickHouse store.
type Store interface {
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
	GetTrace(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
	DeleteTraces(ctx context.Context, projectID string, traceIDs []string) error
	TraceScores(ctx context.Context, projectID, traceID string) ([]chstore.Score, error)
	TraceScoreIDs(ctx context.Context, projectID string, traceIDs []string) (map[string][]string, error)
}

// Trace is the trace object every trace response shares. Glassbox has no
// external ids or bookmarks: externalId is null and bookmarked false.
type Trace struct {
	ID          string          `json:"id"`
	Timestamp   httpx.Timestamp `json:"timestamp"`
	Name        *string         `json:"name"`
	Input       httpx.JSON      `json:"input,omitempty"`
	Output      httpx.JSON      `json:"output,omitempty"`
	SessionID   *string         `json:"sessionId"`
	Release     *string         `json:"release"`
	Version     *string         `json:"version"`
	UserID      *string         `json:"userId"`
	Metadata    httpx.JSON      `json:"metadata,omitempty"`
	Tags        []string        `json:"tags"`
	Public      bool            `json:"public"`
	Environment string          `json:"environment"`
	ExternalID  *string         `json:"externalId"`
	ProjectID   string          `json:"projectId"`
	Bookmarked  bool            `json:"bookmarked"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	UpdatedAt   httpx.Timestamp `json:"updatedAt"`
}

// ListItem is a trace in the list: observation and score ids (scores of
// its observations included) and the derived metrics. Groups excluded by
// `fields` give [] and -1, as in Langfuse.
type ListItem struct {
	Trace
	HTMLPath     string   `json:"htmlPath"`
	Latency      float64  `json:"latency"`
	TotalCost    float64  `json:"totalCost"`
	Observations []string `json:"observations"`
	Scores       []string `json:"scores"`
}

// Detail is one trace with its observations and scores.
type Detail struct {
	Trace
	HTMLPath     string              `json:"htmlPath"`
	Latency      float64             `json:"latency"`
	TotalCost    float64             `json:"totalCost"`
	Observations []observations.View `json:"observations"`
	Scores       []scores.Score      `json:"scores"`
}

// DeleteRequest is the body of DELETE /api/public/traces.
type DeleteRequest struct {
	TraceIDs []string `json:"traceIds"`
}

// Message is the body of a deletion answer.
type Message struct {
	Message string `json:"message"`
}

// Field groups of the list, as Langfuse names them.
const (
	groupCore         = "core"
	groupIO           = "io"
	groupScores       = "scores"
	groupObservations = "observations"
	groupMetrics      = "metrics"
)

var allGroups = []string{groupCore, groupIO, groupScores, groupObservations, groupMetrics}

// orderFields are the orderBy fields; bookmarks do not exist in Glassbox.
var orderFields = []string{
	chstore.TraceOrderID, chstore.TraceOrderTimestamp, chstore.TraceOrderName, chstore.TraceOrderUserID,
	chstore.TraceOrderRelease, chstore.TraceOrderVersion, chstore.TraceOrderPublic, chstore.TraceOrderSessionID,
}

// maxDeleteBatch is Langfuse's limit on one batch deletion.
const maxDeleteBatch = 1000

// Routes returns the trace routes. htmlPrefix starts every htmlPath (the
// path of the public URL, usually empty).
func Routes(store Store, prompts observations.PromptLookup, htmlPrefix string) []httpx.Route {
	h := handlers{store: store, prompts: prompts, htmlPrefix: htmlPrefix}
	listParams := append(append([]httpx.Param{}, httpx.PageParams...), httpx.FilterParam("traces"),
		httpx.Param{Name: "userId", Type: httpx.TypeString},
		httpx.Param{Name: "name", Type: httpx.TypeString},
		httpx.Param{Name: "sessionId", Type: httpx.TypeString},
		httpx.Param{Name: "fromTimestamp", Type: httpx.TypeDateTime, Description: "Traces on or after (ISO 8601)."},
		httpx.Param{Name: "toTimestamp", Type: httpx.TypeDateTime, Description: "Traces before (ISO 8601)."},
		httpx.Param{Name: "orderBy", Type: httpx.TypeString, Description: "<field>.<asc|desc>, field one of " +
			strings.Join(orderFields, ", ") + " (default timestamp.desc)."},
		httpx.Param{Name: "tags", Type: httpx.TypeString, Repeated: true, Description: "Traces with all of these tags."},
		httpx.Param{Name: "version", Type: httpx.TypeString},
		httpx.Param{Name: "release", Type: httpx.TypeString},
		httpx.Param{Name: "environment", Type: httpx.TypeString, Repeated: true, Description: "Traces in any of these environments."},
		httpx.Param{Name: "fields", Type: httpx.TypeString, Description: "Comma-separated groups: core, io, scores, observations, metrics (default all)."},
	)
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/traces", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "trace_list", Tag: "Traces", Query: listParams, Response: httpx.List[ListItem]{},
				Summary: "The key's project's traces, filtered and ordered, page by page."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/traces/{traceId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "trace_get", Tag: "Traces", Response: Detail{},
				Summary: "One trace with its observations and scores."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/traces/{traceId}", Access: httpx.ProjectKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "trace_delete", Tag: "Traces", Response: Message{},
				Summary: "Delete a trace: it disappears from every read at once."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/traces", Access: httpx.ProjectKey, Handler: h.deleteMany,
			Doc: httpx.Doc{OperationID: "trace_deleteMultiple", Tag: "Traces", Body: DeleteRequest{}, Response: Message{},
				Summary: "Delete up to 1000 traces of the key's project."},
		},
	}
}

type handlers struct {
	store      Store
	prompts    observations.PromptLookup
	htmlPrefix string
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	filters, err := chstore.ParseFilters(q.String("filter"))
	if err != nil {
		return nil, observations.StoreError(err, "Traces")
	}
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	order, err := q.OrderBy("orderBy", orderFields, httpx.Order{Field: chstore.TraceOrderTimestamp, Desc: true})
	if err != nil {
		return nil, err
	}
	groups, err := parseGroups(q.List("fields"))
	if err != nil {
		return nil, err
	}
	from, err := q.Micros("fromTimestamp")
	if err != nil {
		return nil, err
	}
	to, err := q.Micros("toTimestamp")
	if err != nil {
		return nil, err
	}
	list, total, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{
		ProjectID:   httpx.ProjectID(r),
		UserID:      q.String("userId"),
		Name:        q.String("name"),
		SessionID:   q.String("sessionId"),
		Tags:        q.Strings("tags"),
		From:        from,
		To:          to,
		Environment: q.Strings("environment"),
		Release:     q.String("release"),
		Version:     q.String("version"),
		Filters:     filters,
		OrderBy:     chstore.TraceOrder{Field: order.Field, Desc: order.Desc},
		Page:        page.Number,
		Limit:       page.Limit,
	})
	if err != nil {
		return nil, observations.StoreError(err, "Traces")
	}
	var scores map[string][]string
	if groups[groupScores] {
		ids := make([]string, len(list))
		for i, t := range list {
			ids[i] = t.ID
		}
		if scores, err = h.store.TraceScoreIDs(r.Context(), httpx.ProjectID(r), ids); err != nil {
			return nil, observations.StoreError(err, "Traces")
		}
	}
	items := make([]ListItem, 0, len(list))
	for _, t := range list {
		items = append(items, h.listItem(t, groups, scores[t.ID]))
	}
	return httpx.NewList(items, page, int64(total)), nil
}

func (h handlers) listItem(t chstore.Trace, groups map[string]bool, scoreIDs []string) ListItem {
	item := ListItem{
		Trace:        ToTrace(t),
		HTMLPath:     h.htmlPath(t),
		Latency:      -1,
		TotalCost:    -1,
		Observations: []string{},
		Scores:       []string{},
	}
	if !groups[groupIO] {
		item.Input, item.Output, item.Metadata = nil, nil, nil
	}
	if groups[groupObservations] {
		item.Observations = httpx.NonNil(t.ObservationIDs)
	}
	if groups[groupScores] {
		item.Scores = httpx.NonNil(scoreIDs)
	}
	if groups[groupMetrics] {
		item.Latency, item.TotalCost = t.LatencySeconds, t.TotalCost
	}
	return item
}

func (h handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("traceId")
	project := httpx.ProjectID(r)
	t, err := h.store.GetTrace(r.Context(), project, id)
	if err != nil {
		return nil, observations.StoreError(err, "Trace "+id)
	}
	traceScores, err := h.store.TraceScores(r.Context(), project, id)
	if err != nil {
		return nil, observations.StoreError(err, "Trace "+id)
	}
	d := Detail{
		Trace:        ToTrace(t.Trace),
		HTMLPath:     h.htmlPath(t.Trace),
		Latency:      t.LatencySeconds,
		TotalCost:    t.TotalCost,
		Observations: make([]observations.View, 0, len(t.Observations)),
		Scores:       make([]scores.Score, 0, len(traceScores)),
	}
	prompts, err := observations.LookupPromptIDs(r.Context(), h.prompts, project, t.Observations)
	if err != nil {
		return nil, err
	}
	for _, o := range t.Observations {
		d.Observations = append(d.Observations, observations.ToView(o, prompts))
	}
	for _, s := range traceScores {
		d.Scores = append(d.Scores, scores.ToScore(s))
	}
	return d, nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	id := r.PathValue("traceId")
	project := httpx.ProjectID(r)
	// Deleting is idempotent in the store; the lookup makes an unknown id,
	// or another project's, a 404 as for every other trace route.
	if _, err := h.store.GetTrace(r.Context(), project, id); err != nil {
		return nil, observations.StoreError(err, "Trace "+id)
	}
	if err := h.store.DeleteTraces(r.Context(), project, []string{id}); err != nil {
		return nil, observations.StoreError(err, "Trace "+id)
	}
	return Message{Message: "Trace deleted successfully"}, nil
}

func (h handlers) deleteMany(r *http.Request) (any, error) {
	var req DeleteRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if len(req.TraceIDs) == 0 || len(req.TraceIDs) > maxDeleteBatch {
		return nil, httpx.BadRequest("Invalid request body: traceIds must hold 1 to %d trace ids", maxDeleteBatch)
	}
	if slices.Contains(req.TraceIDs, "") {
		return nil, httpx.BadRequest("Invalid request body: traceIds must not contain empty ids")
	}
	if err := h.store.DeleteTraces(r.Context(), httpx.ProjectID(r), req.TraceIDs); err != nil {
		return nil, observations.StoreError(err, "Traces")
	}
	return Message{Message: "Traces deleted successfully"}, nil
}

func (h handlers) htmlPath(t chstore.Trace) string {
	return h.htmlPrefix + "/project/" + t.ProjectID + "/traces/" + t.ID
}

// ToTrace converts a stored trace to the shared trace object.
func ToTrace(t chstore.Trace) Trace {
	metadata := httpx.JSON("{}")
	if t.Metadata != "" {
		metadata = httpx.JSONValue(t.Metadata)
	}
	return Trace{
		ID:          t.ID,
		Timestamp:   httpx.FromMicros(t.Timestamp),
		Name:        httpx.OptionalString(t.Name),
		Input:       httpx.JSONValue(t.Input),
		Output:      httpx.JSONValue(t.Output),
		SessionID:   httpx.OptionalString(t.SessionID),
		Release:     httpx.OptionalString(t.Release),
		Version:     httpx.OptionalString(t.Version),
		UserID:      httpx.OptionalString(t.UserID),
		Metadata:    metadata,
		Tags:        httpx.NonNil(t.Tags),
		Public:      t.Public,
		Environment: t.Environment,
		ProjectID:   t.ProjectID,
		CreatedAt:   httpx.FromMicros(t.CreatedAt),
		UpdatedAt:   httpx.FromMicros(t.UpdatedAt),
	}
}

// parseGroups checks the requested field groups; none means all.
func parseGroups(requested []string) (map[string]bool, error) {
	if len(requested) == 0 {
		requested = allGroups
	}
	groups := map[string]bool{}
	for _, g := range requested {
		if !slices.Contains(allGroups, g) {
			return nil, httpx.BadRequest("Invalid query parameter fields: unknown field group %q, expected any of %s",
				g, strings.Join(allGroups, ", "))
		}
		groups[g] = true
	}
	return groups, nil
}
