// Package scores serves scores (evaluations of traces, observations,
// sessions and dataset runs, stored in ClickHouse) and score configs (the
// control plane's descriptions of what a score's values may be).
package scores // import "github.com/glassbox-dev/glassbox/apiserver/scores"

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/observations"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the score routes need from ClickHouse.
type Store interface {
	InsertScores(ctx context.Context, scores []chstore.Score) error
	SearchScores(ctx context.Context, q chstore.ScoreSearch) ([]chstore.Score, int, error)
	GetScore(ctx context.Context, projectID, id string) (chstore.Score, error)
	DeleteScore(ctx context.Context, projectID, id string) error
}

// ConfigStore is what the score config routes need from the control plane.
type ConfigStore interface {
	Configs
	CreateScoreConfig(ctx context.Context, projectID string, n controlplane.NewScoreConfig) (controlplane.ScoreConfig, error)
	ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]controlplane.ScoreConfig, int, error)
	UpdateScoreConfig(ctx context.Context, projectID, id string, u controlplane.ScoreConfigUpdate) (controlplane.ScoreConfig, error)
}

// Score is a score as the v2 API returns it.
type Score struct {
	ID            string          `json:"id"`
	TraceID       *string         `json:"traceId"`
	ObservationID *string         `json:"observationId"`
	SessionID     *string         `json:"sessionId"`
	DatasetRunID  *string         `json:"datasetRunId"`
	Name          string          `json:"name"`
	Source        string          `json:"source"`
	Timestamp     httpx.Timestamp `json:"timestamp"`
	CreatedAt     httpx.Timestamp `json:"createdAt"`
	UpdatedAt     httpx.Timestamp `json:"updatedAt"`
	AuthorUserID  *string         `json:"authorUserId"`
	Comment       *string         `json:"comment"`
	Metadata      httpx.JSON      `json:"metadata"`
	ConfigID      *string         `json:"configId"`
	QueueID       *string         `json:"queueId"`
	Environment   string          `json:"environment"`
	DataType      string          `json:"dataType"`
	// Value is the number (NUMERIC), 0/1 (BOOLEAN) or the category's
	// mapped value (CATEGORICAL).
	Value float64 `json:"value"`
	// StringValue is the category label, or "True"/"False" for BOOLEAN.
	StringValue *string `json:"stringValue,omitempty"`
}

// Created answers POST /api/public/scores.
type Created struct {
	ID string `json:"id"`
}

// Message answers a deletion.
type Message struct {
	Message string `json:"message"`
}

type handlers struct {
	store   Store
	configs ConfigStore
	builder Builder
	now     func() time.Time
}

// Routes returns the score and score config routes.
func Routes(store Store, configs ConfigStore) []httpx.Route {
	h := handlers{store: store, configs: configs, builder: Builder{Configs: configs}, now: time.Now}
	return append([]httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/scores", Access: httpx.ProjectOrScoresKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "scores_create", Tag: "Scores", Body: Body{}, Response: Created{},
				Summary: "Create (or, with the same id, replace) a score of a trace, observation, session or dataset run."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/scores", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "scores_getMany", Tag: "Scores", Response: httpx.List[Score]{}, Query: listParams,
				Summary: "The project's scores, newest first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/scores/{scoreId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "scores_getById", Tag: "Scores", Response: Score{}, Summary: "One score."},
		},
		// The v1 reads answer as the v2 ones do.
		{
			Method: http.MethodGet, Path: "/api/public/scores", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "scores_getManyV1", Tag: "Scores", Response: httpx.List[Score]{}, Query: listParams,
				Summary: "The project's scores, newest first (v1 path of GET /api/public/v2/scores)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/scores/{scoreId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "scores_getByIdV1", Tag: "Scores", Response: Score{},
				Summary: "One score (v1 path of GET /api/public/v2/scores/{scoreId})."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/scores/{scoreId}", Access: httpx.ProjectKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "scores_delete", Tag: "Scores", Response: Message{}, Status: http.StatusAccepted,
				Summary: "Delete a score; reads stop returning it once storage has applied the deletion."},
		},
		v3Route(h),
	}, configRoutes(configs)...)
}

var listParams = append([]httpx.Param{
	httpx.FilterParam("scores"),
	{Name: "name", Type: httpx.TypeString},
	{Name: "userId", Type: httpx.TypeString, Description: "Scores of traces that carried this user id."},
	{Name: "fromTimestamp", Type: httpx.TypeDateTime},
	{Name: "toTimestamp", Type: httpx.TypeDateTime},
	{Name: "environment", Type: httpx.TypeString, Repeated: true},
	{Name: "source", Type: httpx.TypeString},
	{Name: "operator", Type: httpx.TypeString, Description: "Compares the value with `value`: <, >, <=, >=, = or !=."},
	{Name: "value", Type: httpx.TypeNumber},
	{Name: "scoreIds", Type: httpx.TypeString, Description: "Comma-separated score ids."},
	{Name: "configId", Type: httpx.TypeString},
	{Name: "sessionId", Type: httpx.TypeString},
	{Name: "datasetRunId", Type: httpx.TypeString},
	{Name: "traceId", Type: httpx.TypeString},
	{Name: "observationId", Type: httpx.TypeString},
	{Name: "queueId", Type: httpx.TypeString},
	{Name: "dataType", Type: httpx.TypeString},
	{Name: "traceTags", Type: httpx.TypeString, Repeated: true, Description: "Scores of traces that carry all these tags."},
}, httpx.PageParams...)

var (
	dataTypes = []string{chstore.ScoreNumeric, chstore.ScoreCategorical, chstore.ScoreBoolean, chstore.ScoreText, chstore.ScoreCorrection}
	sources   = []string{chstore.SourceAPI, chstore.SourceEval, chstore.SourceAnnotation}
	operators = []string{"<", ">", "<=", ">=", "=", "!="}
)

func (h handlers) create(r *http.Request) (any, error) {
	var body Body
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return nil, err
	}
	if httpx.ScoresOnly(r) {
		if err := CheckPublicKeyScore(r.Context(), h.store, httpx.ProjectID(r), &body); err != nil {
			return nil, err
		}
	}
	sc, err := h.builder.Build(r.Context(), httpx.ProjectID(r), body, h.now(), RESTSources)
	if err != nil {
		return nil, err
	}
	if err := h.store.InsertScores(r.Context(), []chstore.Score{sc}); err != nil {
		return nil, err
	}
	return Created{ID: sc.ID}, nil
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	if err := q.Unsupported("fields"); err != nil {
		return nil, err
	}
	filters, err := chstore.ParseFilters(q.String("filter"))
	if err != nil {
		return nil, observations.StoreError(err, "Scores")
	}
	p, err := q.Page()
	if err != nil {
		return nil, err
	}
	search := chstore.ScoreSearch{
		ScoreFilter: chstore.ScoreFilter{
			ProjectID: httpx.ProjectID(r), TraceID: q.String("traceId"), ObservationID: q.String("observationId"),
			SessionID: q.String("sessionId"), DatasetRunID: q.String("datasetRunId"), Name: q.String("name"),
			ConfigID: q.String("configId"), Environment: q.Strings("environment"), Page: p.Number, Limit: p.Limit,
		},
		IDs: q.List("scoreIds"), QueueID: q.String("queueId"), UserID: q.String("userId"), TraceTags: q.Strings("traceTags"),
		Filters: filters,
	}
	f := &search.ScoreFilter
	if f.DataType, err = q.OneOf("dataType", dataTypes); err != nil {
		return nil, err
	}
	if f.Source, err = q.OneOf("source", sources); err != nil {
		return nil, err
	}
	if f.From, err = q.Micros("fromTimestamp"); err != nil {
		return nil, err
	}
	if f.To, err = q.Micros("toTimestamp"); err != nil {
		return nil, err
	}
	if search.Operator, err = q.OneOf("operator", operators); err != nil {
		return nil, err
	}
	if search.Operator != "" || q.Has("value") {
		if search.Operator == "" || !q.Has("value") {
			return nil, httpx.BadRequest("Query parameters operator and value go together")
		}
		raw := q.String("value")
		if search.Value, err = strconv.ParseFloat(raw, 64); err != nil {
			return nil, httpx.BadRequest("Invalid query parameter value=%q: expected a number", raw)
		}
	}
	list, total, err := h.store.SearchScores(r.Context(), search)
	if err != nil {
		return nil, observations.StoreError(err, "Scores")
	}
	data := make([]Score, 0, len(list))
	for _, sc := range list {
		data = append(data, ToScore(sc))
	}
	return httpx.NewList(data, p, int64(total)), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("scoreId")
	sc, err := h.store.GetScore(r.Context(), httpx.ProjectID(r), id)
	if errors.Is(err, chstore.ErrNotFound) {
		return nil, httpx.NotFound("Score %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	return ToScore(sc), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	id := r.PathValue("scoreId")
	err := h.store.DeleteScore(r.Context(), httpx.ProjectID(r), id)
	if errors.Is(err, chstore.ErrNotFound) {
		return nil, httpx.NotFound("Score %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	return httpx.WithStatus(http.StatusAccepted, Message{Message: "Score deletion queued successfully"}), nil
}

// ToScore converts a stored score to its API form: the one wire type of a
// score, in the scores routes and inside a trace.
func ToScore(sc chstore.Score) Score {
	out := Score{
		ID:            sc.ID,
		TraceID:       httpx.OptionalString(sc.TraceID),
		ObservationID: httpx.OptionalString(sc.ObservationID),
		SessionID:     httpx.OptionalString(sc.SessionID),
		DatasetRunID:  httpx.OptionalString(sc.DatasetRunID),
		Name:          sc.Name,
		Source:        sc.Source,
		Timestamp:     httpx.FromMicros(sc.Timestamp),
		CreatedAt:     httpx.FromMicros(sc.StoredAt),
		UpdatedAt:     httpx.FromMicros(sc.StoredAt),
		AuthorUserID:  httpx.OptionalString(sc.AuthorUserID),
		Comment:       httpx.OptionalString(sc.Comment),
		Metadata:      httpx.JSONValue(sc.Metadata),
		ConfigID:      httpx.OptionalString(sc.ConfigID),
		QueueID:       httpx.OptionalString(sc.QueueID),
		Environment:   sc.Environment,
		DataType:      sc.DataType,
		Value:         sc.Value,
	}
	if sc.DataType != chstore.ScoreNumeric {
		out.StringValue = &sc.StringValue
	}
	if strings.TrimSpace(sc.Metadata) == "" {
		out.Metadata = httpx.JSON("{}")
	}
	return out
}
