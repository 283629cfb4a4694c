package tracing

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/comments"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type traceData struct {
	Trace  chstore.Trace
	Tree   Tree
	Scores []chstore.Score
	// Detail is the selected observation, or the trace itself.
	Detail Detail
	// Self is this page's path; List the query of the list it was opened
	// from, which prev/next walk through, and ListQ the same escaped as a
	// query value.
	Self, List, ListQ string
	// Back is the list the trace was opened from.
	Back       string
	Prev, Next string
	// Shared is set on the read-only view of a public trace.
	Shared bool
	// MediaProject is the project media are loaded from; "" on shared
	// pages, whose readers may not open the project's media.
	MediaProject string
	// Score is the add-score form, nil when the role may not score.
	Score *scoreForm
	// Comments are the selected observation's, or the trace's; nil on
	// shared pages.
	Comments *comments.Thread
	// Virtual trees are drawn by tree.js from TreeJSON, only the rows in
	// view: a trace of thousands of observations opens at once.
	Virtual  bool
	TreeJSON [][]any
}

// maxInlineNodes is the size up to which the tree is plain HTML.
const maxInlineNodes = 400

// Detail is what the right-hand pane shows.
type Detail struct {
	ID                   string // the observation's id; "" for the trace
	Type, Name, Level    string
	Status               string
	Start                time.Time
	DurationMs           float64
	Model                string
	ModelParameters      web.IO
	Usage, Cost          []KV
	TotalCost            float64
	PromptName           string
	PromptVersion        int64
	Input, Output        web.IO
	Metadata             web.IO
	Environment, Release string
	Version              string
	TimeToFirstTokenMs   float64
	UsageEstimated       bool
	UserID, SessionID    string
	Tags                 []string
}

// KV is a labelled number (usage and cost details).
type KV struct {
	Key   string
	Value float64
}

func sortedKV[V int64 | float64](m map[string]V) []KV {
	out := make([]KV, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, KV{Key: k, Value: float64(m[k])})
	}
	// "total" last, as people read it.
	slices.SortStableFunc(out, func(a, b KV) int { return cmp.Compare(boolInt(a.Key == "total"), boolInt(b.Key == "total")) })
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (h *handlers) trace(r *web.Request) error {
	d, err := h.traceData(r)
	if err != nil {
		return err
	}
	if r.HTMX() {
		return r.RenderFragment(h.t, "trace", "detail", d)
	}
	return r.Render(h.t, "trace", d)
}

// sharedTrace shows a public trace to anyone with its link, read only. A
// missing trace and a private one are refused alike, so that nobody learns
// which ids exist.
func (h *handlers) sharedTrace(r *web.Request) error {
	d, err := h.traceData(r)
	if err == errNotFound || (err == nil && !d.Trace.Public) { //nolint:errorlint // getTrace's own sentinel
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	d.Shared, d.List, d.Prev, d.Next, d.MediaProject = true, "", "", "", ""
	if r.HTMX() {
		return r.RenderFragment(h.t, "trace", "detail", d)
	}
	return r.Render(h.t, "trace", d)
}

func (h *handlers) traceData(r *web.Request) (*traceData, error) {
	tr, err := h.getTrace(r, r.PathValue("traceId"))
	if err != nil {
		return nil, err
	}
	scores, err := h.store.TraceScores(r.Context(), r.Project.ID, tr.ID)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	d := &traceData{Trace: tr.Trace, Tree: BuildTree(tr.Observations), Scores: scores,
		Self: r.Path("project", r.Project.ID, "traces", tr.ID), List: q.Get("list"), ListQ: url.QueryEscape(q.Get("list")),
		MediaProject: r.Project.ID}
	d.Back = r.Path("project", r.Project.ID, "traces")
	if lq, err := url.ParseQuery(d.List); err == nil && len(lq) > 0 {
		d.Back += "?" + lq.Encode()
	}
	d.Detail = traceDetail(tr.Trace, d.Tree)
	if id := q.Get("observation"); id != "" {
		o, err := h.store.GetTraceObservation(r.Context(), r.Project.ID, tr.ID, id)
		switch {
		case err == nil:
			d.Detail = observationDetail(&o)
		case !errors.Is(err, chstore.ErrNotFound):
			return nil, err
		}
	}
	if len(d.Tree.Nodes) > maxInlineNodes && !r.HTMX() {
		d.Virtual = true
		d.TreeJSON = make([][]any, len(d.Tree.Nodes))
		for i, n := range d.Tree.Nodes {
			d.TreeJSON[i] = []any{n.ID, n.Depth + 1, n.Type, n.Name, n.Level, round(n.DurationMs), round6(n.TotalCost), n.TotalTokens, round(n.Start), round(n.Width)}
		}
	}
	if r.User != nil {
		if d.Score, err = h.scoreForm(r); err != nil {
			return nil, err
		}
		objectType, objectID, back := controlplane.ObjectTrace, tr.ID, d.Self
		if d.Detail.ID != "" {
			objectType, objectID, back = controlplane.ObjectObservation, d.Detail.ID, d.Self+"?observation="+url.QueryEscape(d.Detail.ID)
		}
		if d.Comments, err = comments.Load(r, h.cp, objectType, objectID, back); err != nil {
			return nil, err
		}
	}
	if d.List != "" && r.User != nil {
		d.Prev, d.Next, err = h.neighbours(r, d.List, tr.ID)
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

func round(f float64) float64  { return math.Round(f*100) / 100 }
func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

func traceDetail(t chstore.Trace, tree Tree) Detail {
	return Detail{Type: "TRACE", Name: t.Name, Start: time.UnixMicro(t.Timestamp).UTC(), DurationMs: t.LatencySeconds * 1000,
		TotalCost: t.TotalCost, Input: web.RenderIO(t.Input), Output: web.RenderIO(t.Output), Metadata: web.RenderIO(t.Metadata),
		Environment: t.Environment, Release: t.Release, Version: t.Version, UserID: t.UserID, SessionID: t.SessionID, Tags: t.Tags,
		Usage: tokenKV(tree.Tokens), ModelParameters: web.IO{Empty: true}, TimeToFirstTokenMs: -1}
}

func tokenKV(n int64) []KV {
	if n == 0 {
		return nil
	}
	return []KV{{Key: "total", Value: float64(n)}}
}

func observationDetail(o *chstore.Observation) Detail {
	d := Detail{ID: o.ID, Type: o.Type, Name: o.Name, Level: o.Level, Status: o.StatusMessage,
		Start: time.UnixMicro(o.StartTime).UTC(), DurationMs: -1, Model: o.Model, ModelParameters: web.RenderIO(o.ModelParameters),
		Usage: sortedKV(o.UsageDetails), Cost: sortedKV(o.CostDetails), TotalCost: cost(&o.Observation),
		PromptName: o.PromptName, PromptVersion: o.PromptVersion,
		Input: web.RenderIO(o.Input), Output: web.RenderIO(o.Output), Metadata: web.RenderIO(o.Metadata),
		Environment: o.Environment, Release: o.Release, Version: o.Version, UsageEstimated: o.UsageEstimated, TimeToFirstTokenMs: -1}
	if o.EndTime >= o.StartTime && o.EndTime > 0 {
		d.DurationMs = float64(o.EndTime-o.StartTime) / 1000
	}
	if o.CompletionStartTime > 0 && o.CompletionStartTime >= o.StartTime {
		d.TimeToFirstTokenMs = float64(o.CompletionStartTime-o.StartTime) / 1000
	}
	return d
}

// neighbours are the traces before and after this one in the list it was
// opened from, with that list's filters and order: prev/next and the
// keyboard walk the filtered list, not the whole project.
func (h *handlers) neighbours(r *web.Request, list, id string) (prev, next string, err error) {
	q, err := url.ParseQuery(list)
	if err != nil {
		return "", "", nil
	}
	ls := readListState(q, h.now())
	state := web.ReadTableState(q, traceColumns, "timestamp", true)
	page := func(n int) ([]chstore.Trace, error) {
		if n < 1 {
			return nil, nil
		}
		f, err := ls.filter(r.Project.ID)
		if err != nil {
			return nil, nil // a list that no longer filters has no neighbours
		}
		f.OrderBy = chstore.TraceOrder{Field: traceOrders[state.Sort], Desc: state.Desc}
		f.Page, f.Limit = n, state.Limit
		traces, _, err := h.store.ListTraces(r.Context(), f)
		return traces, err
	}
	cur, err := page(state.Page)
	if err != nil {
		return "", "", err
	}
	i := slices.IndexFunc(cur, func(t chstore.Trace) bool { return t.ID == id })
	if i < 0 {
		return "", "", nil
	}
	link := func(t chstore.Trace, pageNo int) string {
		lq := url.Values{}
		for k, v := range q {
			lq[k] = v
		}
		if pageNo > 1 {
			lq.Set("page", strconv.Itoa(pageNo))
		} else {
			lq.Del("page")
		}
		return r.Path("project", r.Project.ID, "traces", t.ID) + "?list=" + url.QueryEscape(lq.Encode())
	}
	switch {
	case i > 0:
		prev = link(cur[i-1], state.Page)
	case state.Page > 1:
		before, err := page(state.Page - 1)
		if err != nil {
			return "", "", err
		}
		if len(before) > 0 {
			prev = link(before[len(before)-1], state.Page-1)
		}
	}
	switch {
	case i < len(cur)-1:
		next = link(cur[i+1], state.Page)
	case len(cur) == state.Limit:
		after, err := page(state.Page + 1)
		if err != nil {
			return "", "", err
		}
		if len(after) > 0 {
			next = link(after[0], state.Page+1)
		}
	}
	return prev, next, nil
}
