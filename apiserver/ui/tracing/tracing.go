// Package tracing serves the observability pages: the traces table, a
// trace with its observation tree and timeline, the observations table,
// and the read-only page of a trace shared publicly.
package tracing // import "github.com/glassbox-dev/glassbox/apiserver/ui/tracing"

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

//go:embed *.html
var pages embed.FS

// Store reads trace data; *chstore.Store implements it.
type Store interface {
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
	GetTraceOutline(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
	GetTraceObservation(ctx context.Context, projectID, traceID, observationID string) (chstore.Observation, error)
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	GetSession(ctx context.Context, projectID, sessionID string) (chstore.Session, error)
	TraceScores(ctx context.Context, projectID, traceID string) ([]chstore.Score, error)
	DeleteTraces(ctx context.Context, projectID string, traceIDs []string) error
	ListObservations(ctx context.Context, f chstore.ObservationFilter) (chstore.ObservationPage, error)
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

type handlers struct {
	store      Store
	scores     Scores
	cp         ControlPlane
	mediaFiles Media
	t          *web.Templates
	now        func() time.Time
}

// Routes registers the tracing pages and their sidebar entries.
func Routes(app *web.App, store interface {
	Store
	Scores
}, cp ControlPlane, media Media) error {
	t, err := app.Parse(pages, "traces.html", "trace.html", "observations.html", "user.html", "users.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, scores: store, cp: cp, mediaFiles: media, t: t, now: time.Now}
	app.AddNav(
		web.NavItem{Section: "Observability", Label: "Traces", Path: "traces", Action: access.ProjectRead, Order: 100},
		web.NavItem{Section: "Observability", Label: "Observations", Path: "observations", Action: access.ProjectRead, Order: 110},
		web.NavItem{Section: "Observability", Label: "Users", Path: "users", Action: access.ProjectRead, Order: 130},
	)
	const proj = web.InProject
	return app.Handle(
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/traces", Access: proj, Action: access.ProjectRead, Handler: h.traces},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/traces/delete", Access: proj, Action: access.TracesDelete, Handler: h.deleteTraces},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/traces/filter-options", Access: proj, Action: access.ProjectRead, Handler: h.filterOptions},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/traces/add-to-dataset", Access: proj, Action: access.DatasetsWrite, Handler: h.addToDataset("traces")},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/traces/add-to-queue", Access: proj, Action: access.AnnotationQueuesWrite, Handler: h.addToQueue("traces")},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/observations/add-to-dataset", Access: proj, Action: access.DatasetsWrite, Handler: h.addToDataset("observations")},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/observations/add-to-queue", Access: proj, Action: access.AnnotationQueuesWrite, Handler: h.addToQueue("observations")},
		// The sessions table's bulk action; the sessions pages are their own package.
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/sessions/add-to-queue", Access: proj, Action: access.AnnotationQueuesWrite, Handler: h.addToQueue("sessions")},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/traces/{traceId}", Access: proj, Action: access.ProjectRead,
			Handler: h.trace, Shared: h.sharedTrace},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/traces/{traceId}/scores", Access: proj, Action: access.ScoresWrite, Handler: h.addScore},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/observations", Access: proj, Action: access.ProjectRead, Handler: h.observations},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/users", Access: proj, Action: access.ProjectRead, Handler: h.users},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/users/{userId}", Access: proj, Action: access.ProjectRead, Handler: h.user},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/media/{mediaId}", Access: proj, Action: access.ProjectRead, Handler: h.media},
	)
}

var traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// listState is a traces list's filters as the URL carries them.
type listState struct {
	Range                                 web.TimeRange
	Query                                 url.Values
	Search                                string
	Name, User, Session, Release, Version string
	Tags, Envs                            []string
	// More filters, compiled by the metrics engine's filter grammar:
	// a metadata key's value, a score's average, cost and latency ranges,
	// and raw grammar (`filter`, a JSON array) for everything else.
	MetaKey, MetaValue     string
	ScoreName, ScoreMin    string
	CostMin, CostMax       string
	LatencyMin, LatencyMax string // seconds
	Text                   string // in the input or output: reads every trace's text
	Advanced               string
}

func readListState(q url.Values, now time.Time) listState {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return listState{
		Range: web.ReadTimeRange(q, "7d", now), Query: q, Search: get("q"),
		Name: get("name"), User: get("user"), Session: get("session"), Release: get("release"), Version: get("version"),
		Tags: nonEmpty(q["tag"]), Envs: nonEmpty(q["env"]),
		MetaKey: get("meta_key"), MetaValue: get("meta_value"), ScoreName: get("score_name"), ScoreMin: get("score_min"),
		CostMin: get("cost_min"), CostMax: get("cost_max"), LatencyMin: get("latency_min"), LatencyMax: get("latency_max"),
		Text: get("text"), Advanced: get("filter"),
	}
}

// grammar turns the extra filters into the metrics engine's filters; a
// value that is not a number, or a `filter` that is not the grammar's JSON,
// is the person's to fix (400 with the reason).
func (s listState) grammar() ([]chstore.Filter, error) {
	var out []chstore.Filter
	if s.MetaKey != "" {
		out = append(out, chstore.Filter{Column: "metadata", Type: "stringObject", Key: s.MetaKey, Operator: "=", Value: s.MetaValue})
	}
	if s.Text != "" {
		out = append(out, chstore.Filter{Column: "inputOutput", Type: "string", Operator: "contains", Value: s.Text})
	}
	num := func(what, text string, scale float64) (float64, error) {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return 0, web.BadRequest("%s must be a number, not %q", what, text)
		}
		return f * scale, nil
	}
	ranges := []struct {
		what, text, column, op string
		scale                  float64
	}{
		{"The minimum cost", s.CostMin, "totalCost", ">=", 1}, {"The maximum cost", s.CostMax, "totalCost", "<=", 1},
		{"The minimum latency", s.LatencyMin, "latency", ">=", 1000}, {"The maximum latency", s.LatencyMax, "latency", "<=", 1000},
	}
	for _, rg := range ranges {
		if rg.text == "" {
			continue
		}
		f, err := num(rg.what, rg.text, rg.scale)
		if err != nil {
			return nil, err
		}
		out = append(out, chstore.Filter{Column: rg.column, Type: "number", Operator: rg.op, Value: f})
	}
	if s.ScoreName != "" {
		least := "0"
		if s.ScoreMin != "" {
			least = s.ScoreMin
		}
		f, err := num("The score's minimum", least, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, chstore.Filter{Column: "scores_avg", Type: "numberObject", Key: s.ScoreName, Operator: ">=", Value: f})
	}
	if s.Advanced != "" {
		extra, err := chstore.ParseFilters(s.Advanced)
		if err != nil {
			return nil, web.BadRequest("The filter is not valid: %v", err)
		}
		out = append(out, extra...)
	}
	return out, nil
}

func nonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (s listState) filter(projectID string) (chstore.TraceFilter, error) {
	filters, err := s.grammar()
	if err != nil {
		return chstore.TraceFilter{}, err
	}
	f := chstore.TraceFilter{Filters: filters,
		ProjectID: projectID, From: s.Range.From.UnixMicro(), To: s.Range.To.UnixMicro(),
		Name: s.Name, UserID: s.User, SessionID: s.Session, Release: s.Release, Version: s.Version,
		Tags: s.Tags, Environment: s.Envs,
	}
	if s.Search != "" && f.Name == "" {
		f.Name = s.Search
	}
	return f, nil
}

// errNotFound answers for traces that do not exist, or not in this project.
var errNotFound = &web.Error{Status: http.StatusNotFound, Message: "This trace does not exist in this project, or it was deleted."}

// getTrace reads a trace with the outline of its observations (no
// inputs and outputs), mapping a missing one to 404.
func (h *handlers) getTrace(r *web.Request, id string) (chstore.TraceWithObservations, error) {
	tr, err := h.store.GetTraceOutline(r.Context(), r.Project.ID, id)
	if errors.Is(err, chstore.ErrNotFound) {
		return tr, errNotFound
	}
	return tr, err
}
