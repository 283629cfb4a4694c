// Package sessions serves the session routes: a project's sessions (traces
// that carried the same session id) and one session with its traces.
package sessions // import "github.com/glassbox-dev/glassbox/apiserver/sessions"

import (
	"context"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/observations"
	"github.com/glassbox-dev/glassbox/apiserver/traces"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Store is what the routes need from the ClickHouse store.
type Store interface {
	ListSessions(ctx context.Context, f chstore.SessionFilter) ([]chstore.Session, int, error)
	GetSession(ctx context.Context, projectID, sessionID string) (chstore.Session, error)
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
}

// Session is a session in the list.
type Session struct {
	ID          string          `json:"id"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	ProjectID   string          `json:"projectId"`
	Environment string          `json:"environment"`
}

// WithTraces is one session with its traces, oldest first.
type WithTraces struct {
	Session
	Traces []traces.Trace `json:"traces"`
}

// Routes returns the session routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/sessions", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "sessions_list", Tag: "Sessions", Response: httpx.List[Session]{},
				Query: append(append([]httpx.Param{}, httpx.PageParams...),
					httpx.Param{Name: "fromTimestamp", Type: httpx.TypeDateTime, Description: "Sessions created on or after (ISO 8601)."},
					httpx.Param{Name: "toTimestamp", Type: httpx.TypeDateTime, Description: "Sessions created before (ISO 8601)."},
					httpx.Param{Name: "environment", Type: httpx.TypeString, Repeated: true, Description: "Sessions in any of these environments."},
				),
				Summary: "The key's project's sessions, newest first, page by page."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/sessions/{sessionId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "sessions_get", Tag: "Sessions", Response: WithTraces{},
				Summary: "One session with its traces."},
		},
	}
}

type handlers struct {
	store Store
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
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
	list, total, err := h.store.ListSessions(r.Context(), chstore.SessionFilter{
		ProjectID:   httpx.ProjectID(r),
		From:        from,
		To:          to,
		Environment: q.Strings("environment"),
		Page:        page.Number,
		Limit:       page.Limit,
	})
	if err != nil {
		return nil, observations.StoreError(err, "Sessions")
	}
	out := make([]Session, 0, len(list))
	for _, s := range list {
		out = append(out, toSession(s))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("sessionId")
	project := httpx.ProjectID(r)
	s, err := h.store.GetSession(r.Context(), project, id)
	if err != nil {
		return nil, observations.StoreError(err, "Session "+id)
	}
	// One page holding every trace of the session.
	list, _, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{
		ProjectID: project,
		SessionID: id,
		OrderBy:   chstore.TraceOrder{Field: chstore.TraceOrderTimestamp},
		Page:      1,
		Limit:     len(s.TraceIDs),
	})
	if err != nil {
		return nil, observations.StoreError(err, "Session "+id)
	}
	out := WithTraces{Session: toSession(s), Traces: make([]traces.Trace, 0, len(list))}
	for _, t := range list {
		out.Traces = append(out.Traces, traces.ToTrace(t))
	}
	return out, nil
}

func toSession(s chstore.Session) Session {
	return Session{ID: s.ID, CreatedAt: httpx.FromMicros(s.CreatedAt), ProjectID: s.ProjectID, Environment: s.Environment}
}
