package tracing

import (
	"net/http"
	"net/url"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

type userData struct {
	UserID              string
	Traces              int
	FirstSeen, LastSeen time.Time
	Table               *web.Table
}

// user is one user's page: when they were first and last seen, how many
// traces they have, and the traces themselves, newest first, with the
// table's columns, sorting and pages.
func (h *handlers) user(r *web.Request) error {
	id := r.PathValue("userId")
	q := r.URL.Query()
	state := web.ReadTableState(q, traceColumns, "timestamp", true)
	f := chstore.TraceFilter{ProjectID: r.Project.ID, UserID: id, OrderBy: chstore.TraceOrder{Field: traceOrders[state.Sort], Desc: state.Desc},
		Page: state.Page, Limit: state.Limit}
	traces, total, err := h.store.ListTraces(r.Context(), f)
	if err != nil {
		return err
	}
	if total == 0 {
		return &web.Error{Status: http.StatusNotFound, Message: "No trace of this project carries this user id."}
	}
	d := userData{UserID: id, Traces: total}
	for _, desc := range []bool{false, true} {
		edge, _, err := h.store.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, UserID: id,
			OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderTimestamp, Desc: desc}, Limit: 1})
		if err != nil {
			return err
		}
		if len(edge) > 0 {
			at := time.UnixMicro(edge[0].Timestamp).UTC()
			if desc {
				d.LastSeen = at
			} else {
				d.FirstSeen = at
			}
		}
	}
	d.Table = web.NewTable("traces", r.Path("project", r.Project.ID, "users", id), traceColumns, state)
	d.Table.Total = total
	list := url.Values{"user": {id}, "range": {"1y"}}.Encode()
	for _, tr := range traces {
		d.Table.Rows = append(d.Table.Rows, traceRow(r, d.Table, tr, r.Path("project", r.Project.ID, "traces", tr.ID)+"?list="+url.QueryEscape(list)))
	}
	return r.Render(h.t, "user", d)
}
