// Package ingestion serves POST /api/public/ingestion, the batch API of the
// Langfuse SDKs before OpenTelemetry: score-create events (which current
// SDKs still send) and the trace and observation events of older SDKs. Every
// event gets its own status in a 207 answer.
//
// Observations are stored as the OTLP path stores them: one immutable row
// per version, newest version read back. A legacy trace (trace-create) has
// no span of its own, so it becomes the trace's root observation (a SPAN
// whose id is the trace id) carrying the trace-level fields, just as an OTel
// root span carries them. Update events are merged onto the stored row.
// Generations without a cost are priced by the same rule as OTLP spans in
// the glassbox_cost processor (package costing), with the project's own
// model definitions from the control plane.
package ingestion // import "github.com/glassbox-dev/glassbox/apiserver/ingestion"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// Store is what ingestion needs from ClickHouse.
type Store interface {
	InsertObservations(ctx context.Context, obs []model.Observation) error
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	InsertScores(ctx context.Context, scores []chstore.Score) error
	GetScore(ctx context.Context, projectID, id string) (chstore.Score, error)
}

// ControlPlane is what ingestion needs from the control plane store: score
// configs and the project's model definitions.
type ControlPlane interface {
	scores.Configs
	ListModels(ctx context.Context, projectID string) ([]pricing.Model, error)
}

// Request is the body of POST /api/public/ingestion.
type Request struct {
	Batch    []json.RawMessage `json:"batch"`
	Metadata httpx.JSON        `json:"metadata,omitempty"`
}

// Response is the 207 answer: one entry per event, in successes or errors.
type Response struct {
	Successes []Success `json:"successes"`
	Errors    []Failure `json:"errors"`
}

// Success reports a stored event.
type Success struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
}

// Failure reports an event that was not stored.
type Failure struct {
	ID      string `json:"id"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

// maxEventID bounds envelope ids, as Langfuse does.
const maxEventID = 800

type handler struct {
	store   Store
	builder scores.Builder
	models  ControlPlane
	// pricer holds the built-in definitions and, per project, the ones last
	// loaded from the control plane.
	pricer *pricing.Pricer
	logger *zap.Logger
}

// Routes returns the ingestion route.
func Routes(store Store, cp ControlPlane, logger *zap.Logger) []httpx.Route {
	builtin, err := pricing.Builtin()
	if err != nil {
		logger.Error("The built-in model prices did not load; only project definitions price generations", zap.Error(err))
	}
	h := handler{
		store: store, builder: scores.Builder{Configs: cp}, models: cp,
		pricer: pricing.NewPricer(builtin, pricing.DefaultCacheSize), logger: logger,
	}
	return []httpx.Route{{
		Method: http.MethodPost, Path: "/api/public/ingestion", Access: httpx.ProjectOrScoresKey, Handler: h.ingest, LargeBody: true,
		Doc: httpx.Doc{OperationID: "ingestion_batch", Tag: "Ingestion", Body: Request{}, Response: Response{},
			Status: http.StatusMultiStatus,
			Summary: "Store a batch of events (score-create; trace-, span-, generation- and event- events of older SDKs); " +
				"each event gets its own status."},
	}}
}

// envelope is one event as sent; its parts are checked one by one so that
// a bad event fails alone.
type envelope struct {
	ID        json.RawMessage `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Body      json.RawMessage `json:"body"`
}

// event is an envelope that passed the checks.
type event struct {
	id        string
	timestamp time.Time
	typ       string
	body      json.RawMessage
	order     int // position in the batch
}

// results collects per-event outcomes.
type results struct {
	resp Response
}

func (r *results) ok(id string) {
	r.resp.Successes = append(r.resp.Successes, Success{ID: id, Status: http.StatusCreated})
}

func (r *results) fail(id string, status int, message, detail string) {
	r.resp.Errors = append(r.resp.Errors, Failure{ID: id, Status: status, Message: message, Error: detail})
}

// storeFailed reports an event that was not taken with the status the API
// answers its error with (httpx.ClientError): 400 for input a store calls
// invalid, 503 while ClickHouse is unavailable (the client should send it
// again), 404 and the others as named; anything unexpected is a 500 whose
// detail says what failed.
func (r *results) storeFailed(id string, err error, detail string) {
	apiErr, ok := httpx.ClientError(err)
	switch {
	case !ok:
		r.fail(id, http.StatusInternalServerError, "Internal Server Error", detail)
	case errors.Is(err, chstore.ErrUnavailable):
		r.fail(id, http.StatusServiceUnavailable, "Service Unavailable", "ClickHouse is unavailable; send the event again")
	case apiErr.Status == http.StatusBadRequest:
		r.invalid(id, apiErr.Message)
	default:
		r.fail(id, apiErr.Status, apiErr.Message, apiErr.Name)
	}
}

func (r *results) invalid(id, detail string) {
	r.fail(id, http.StatusBadRequest, "Invalid request data", detail)
}

func (h handler) ingest(r *http.Request) (any, error) {
	var req Request
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Batch == nil {
		return nil, httpx.BadRequest("Invalid request data: batch is required, an array of events")
	}
	res := &results{resp: Response{Successes: []Success{}, Errors: []Failure{}}}
	scoresOnly := httpx.ScoresOnly(r)
	var scoreEvents, observationEvents []event
	for i, raw := range req.Batch {
		ev, ok := parseEnvelope(raw, i, res)
		if !ok {
			continue
		}
		switch {
		case ev.typ == "score-create":
			scoreEvents = append(scoreEvents, ev)
		case scoresOnly:
			// A public key alone may write scores and nothing else.
			res.fail(ev.id, http.StatusUnauthorized, "Authentication error", "Access Scope Denied")
		case ev.typ == "sdk-log":
			h.logger.Debug("SDK log event", zap.String("project", httpx.ProjectID(r)), zap.ByteString("body", ev.body))
			res.ok(ev.id)
		case ev.typ == "dataset-run-item-create":
			res.invalid(ev.id, "dataset-run-item-create events are not accepted here; use POST /api/public/dataset-run-items")
		case isObservationType(ev.typ):
			observationEvents = append(observationEvents, ev)
		default:
			res.invalid(ev.id, "unknown event type "+quote(ev.typ))
		}
	}
	project := httpx.ProjectID(r)
	h.ingestScores(r.Context(), project, scoresOnly, scoreEvents, res)
	h.ingestObservations(r.Context(), project, observationEvents, res)
	return httpx.WithStatus(http.StatusMultiStatus, res.resp), nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// parseEnvelope checks the envelope of one event.
func parseEnvelope(raw json.RawMessage, order int, res *results) (event, bool) {
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		res.invalid("unknown", "event must be an object with id, timestamp, type and body")
		return event{}, false
	}
	var id string
	if err := json.Unmarshal(env.ID, &id); err != nil {
		res.invalid("unknown", "id must be a string")
		return event{}, false
	}
	switch {
	case id == "" || len(id) > maxEventID || strings.Contains(id, "\r"):
		res.invalid(id, "id must be 1 to 800 characters without carriage returns")
		return event{}, false
	case env.Type == "":
		res.invalid(id, "type is required")
		return event{}, false
	case len(env.Body) == 0 || env.Body[0] != '{':
		res.invalid(id, "body must be an object")
		return event{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, env.Timestamp)
	if err != nil {
		res.invalid(id, "timestamp must be an ISO 8601 date-time with a zone, such as 2024-05-01T12:00:00.000Z")
		return event{}, false
	}
	return event{id: id, timestamp: ts, typ: env.Type, body: env.Body, order: order}, true
}

// ingestScores builds every score-create event and stores the valid ones in
// one insert.
func (h handler) ingestScores(ctx context.Context, project string, publicKeyOnly bool, events []event, res *results) {
	var (
		batch []chstore.Score
		ids   []string
	)
	for _, ev := range events {
		var body scores.Body
		if err := json.Unmarshal(ev.body, &body); err != nil {
			res.invalid(ev.id, "score body: "+err.Error())
			continue
		}
		if body.ID == "" {
			// A retried event then rewrites the same score.
			body.ID = ev.id
		}
		if publicKeyOnly {
			if err := scores.CheckPublicKeyScore(ctx, h.store, project, &body); err != nil {
				h.failBuild(ev.id, err, res)
				continue
			}
		}
		sc, err := h.builder.Build(ctx, project, body, ev.timestamp, scores.IngestionSources)
		if err != nil {
			h.failBuild(ev.id, err, res)
			continue
		}
		batch, ids = append(batch, sc), append(ids, ev.id)
	}
	if len(batch) == 0 {
		return
	}
	if err := h.store.InsertScores(ctx, batch); err != nil {
		h.logger.Error("store ingested scores", zap.String("project", project), zap.Error(err))
		for _, id := range ids {
			res.storeFailed(id, err, "scores could not be stored")
		}
		return
	}
	for _, id := range ids {
		res.ok(id)
	}
}

// failBuild reports an event that could not be built with its status (400,
// 404), anything unexpected, logged, as a 500.
func (h handler) failBuild(id string, err error, res *results) {
	if _, ok := httpx.ClientError(err); !ok {
		h.logger.Error("ingest event", zap.String("event", id), zap.Error(err))
	}
	res.storeFailed(id, err, "")
}
