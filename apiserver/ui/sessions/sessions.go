// Package sessions serves the sessions list and the session page, which
// replays a conversation across its traces in order.
package sessions // import "github.com/glassbox-dev/glassbox/apiserver/ui/sessions"

import (
	"context"
	"embed"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/comments"
	"github.com/glassbox-dev/glassbox/apiserver/ui/tracing"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store reads sessions and their traces; *chstore.Store implements it.
type Store interface {
	ListSessions(ctx context.Context, f chstore.SessionFilter) ([]chstore.Session, int, error)
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
}

// ControlPlane keeps the sessions' comments and the queues the table adds
// sessions to; *controlplane.Store implements it.
type ControlPlane interface {
	comments.Store
	tracing.Targets
}

type handlers struct {
	store    Store
	comments ControlPlane
	t        *web.Templates
	now      func() time.Time
}

// Routes registers the session pages and their sidebar entry.
func Routes(app *web.App, store Store, cs ControlPlane) error {
	t, err := app.Parse(pages, "sessions.html", "session.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, comments: cs, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Observability", Label: "Sessions", Path: "sessions", Action: access.ProjectRead, Order: 120})
	return app.Handle(
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/sessions", Access: web.InProject, Action: access.ProjectRead, Handler: h.list},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/sessions/{sessionId}", Access: web.InProject, Action: access.ProjectRead, Handler: h.session},
	)
}

var columns = []web.Column{
	{Key: "id", Label: "Session"},
	{Key: "created", Label: "Started"},
	{Key: "environment", Label: "Environment"},
}

type listData struct {
	Table  *web.Table
	Range  web.TimeRange
	Notice string // what the last bulk action did
}

func (h *handlers) list(r *web.Request) error {
	q := r.URL.Query()
	notice := q.Get("notice")
	q.Del("notice")
	state := web.ReadTableState(q, columns, "created", true)
	tr := web.ReadTimeRange(q, "7d", h.now())
	ss, total, err := h.store.ListSessions(r.Context(), chstore.SessionFilter{ProjectID: r.Project.ID,
		From: tr.From.UnixMicro(), To: tr.To.UnixMicro(), Environment: nonEmpty(q["env"]), Page: state.Page, Limit: state.Limit})
	if err != nil {
		return err
	}
	t := web.NewTable("sessions", r.Path("project", r.Project.ID, "sessions"), columns, state)
	t.Total = total
	t.Empty = "No sessions started in " + strings.ToLower(tr.Label()) + ". Traces join a session when they carry a session id."
	if err := tracing.BulkTargets(r, h.comments, t, "sessions"); err != nil {
		return err
	}
	for _, s := range ss {
		href := r.Path("project", r.Project.ID, "sessions", s.ID)
		row := web.Row{ID: s.ID, Href: href}
		for _, c := range t.Columns {
			switch c.Key {
			case "id":
				row.Cells = append(row.Cells, web.Cell{Text: s.ID, Href: href, Class: "mono"})
			case "created":
				row.Cells = append(row.Cells, web.Cell{Text: web.FormatTime(time.UnixMicro(s.CreatedAt))})
			case "environment":
				row.Cells = append(row.Cells, web.Cell{Text: s.Environment})
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return r.Render(h.t, "sessions", listData{Table: t, Range: tr, Notice: notice})
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

// maxReplay bounds the traces one session page replays; the rest is a
// click away.
const maxReplay = 100

// idleGap is the pause between turns worth marking.
const idleGap = 5 * time.Minute

type sessionData struct {
	ID            string
	Turns         []turn
	Users         []string
	Start, End    time.Time
	DurationMs    float64
	Cost          float64
	Traces, Shown int
	More          string // the link to the next traces, when there are more
	Comments      *comments.Thread
}

type turn struct {
	Trace  chstore.Trace
	Href   string
	At     time.Time
	Input  web.IO
	Output web.IO
	// Gap is the idle time before this turn when it is long enough to mark.
	Gap float64
}

// session replays the session's traces in time order, each as its input
// and output, with the pauses between them.
func (h *handlers) session(r *web.Request) error {
	id := r.PathValue("sessionId")
	page := 1
	if p, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && p > 1 && p < 100_000 {
		page = p
	}
	traces, total, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, SessionID: id,
		OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderTimestamp}, Page: page, Limit: maxReplay})
	if err != nil {
		return err
	}
	if total == 0 {
		return &web.Error{Status: http.StatusNotFound, Message: "No trace of this project carries this session id."}
	}
	d := sessionData{ID: id, Traces: total, Shown: len(traces)}
	users := map[string]bool{}
	var prevEnd time.Time
	for _, tr := range traces {
		at := time.UnixMicro(tr.Timestamp).UTC()
		end := at.Add(time.Duration(tr.LatencySeconds * float64(time.Second)))
		t := turn{Trace: tr, Href: r.Path("project", r.Project.ID, "traces", tr.ID), At: at,
			Input: web.RenderIO(tr.Input), Output: web.RenderIO(tr.Output)}
		if !prevEnd.IsZero() && at.Sub(prevEnd) >= idleGap {
			t.Gap = float64(at.Sub(prevEnd).Milliseconds())
		}
		if d.Start.IsZero() || at.Before(d.Start) {
			d.Start = at
		}
		if end.After(d.End) {
			d.End = end
		}
		prevEnd = end
		d.Cost += tr.TotalCost
		if tr.UserID != "" && !users[tr.UserID] {
			users[tr.UserID] = true
			d.Users = append(d.Users, tr.UserID)
		}
		d.Turns = append(d.Turns, t)
	}
	d.DurationMs = float64(d.End.Sub(d.Start).Milliseconds())
	if d.Comments, err = comments.Load(r, h.comments, controlplane.ObjectSession, id, r.Path("project", r.Project.ID, "sessions", id)); err != nil {
		return err
	}
	if page*maxReplay < total {
		d.More = web.WithQuery(r.Path("project", r.Project.ID, "sessions", id), r.URL.Query(), "page", strconv.Itoa(page+1))
	}
	return r.Render(h.t, "session", d)
}
