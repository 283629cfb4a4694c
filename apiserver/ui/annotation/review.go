package annotation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// maxPending bounds the pending items read to find the next one.
const maxPending = 5000

// nextPending is the pending item after `after` in queue order, wrapping
// around to the first; ok is false when nothing is pending.
func (h *handlers) nextPending(r *web.Request, queueID, after string) (controlplane.AnnotationQueueItem, bool, error) {
	items, _, err := h.store.ListAnnotationQueueItems(r.Context(), r.Project.ID, queueID, controlplane.ItemPending, 0, maxPending)
	if err != nil {
		return controlplane.AnnotationQueueItem{}, false, err
	}
	start := 0
	for i, it := range items {
		if it.ID == after {
			start = i + 1
		}
	}
	// The item skipped comes last: when it is the only one pending, it is
	// the next one.
	for k := range items {
		i := (start + k) % len(items)
		if items[i].ID != after || k == len(items)-1 {
			return items[i], true, nil
		}
	}
	return controlplane.AnnotationQueueItem{}, false, nil
}

// next opens the next pending item (after `after=`, the item skipped or
// just completed), or the queue when none is left.
func (h *handlers) next(r *web.Request) error {
	q, err := h.getQueue(r)
	if err != nil {
		return err
	}
	it, ok, err := h.nextPending(r, q.ID, r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	if !ok {
		return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID) + "?done=1")
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID, "items", it.ID))
}

// field is one score config of the review form with what this reviewer
// gave before, if anything.
type field struct {
	Config controlplane.ScoreConfig
	// Value is the reviewer's earlier (or just typed) value: a number for
	// NUMERIC, a category label otherwise.
	Value   string
	Comment string
	// Key is the number key that picks this field's first category.
	Key int
}

type reviewData struct {
	Queue    controlplane.AnnotationQueue
	Item     controlplane.AnnotationQueueItem
	Fields   []field
	Position int // 1-based among the pending items; 0 when this one is done
	Pending  int
	Progress controlplane.QueueProgress
	Error    string
	CanScore bool

	// What the item is: a trace (with its observations), an observation,
	// or a session's traces.
	Trace        *chstore.Trace
	Input        web.IO
	Output       web.IO
	Metadata     web.IO
	Observations []chstore.Observation
	Observation  *chstore.Observation
	Sessions     []sessionTrace
	TraceHref    string
	// Scores are the item's annotation scores from everyone.
	Scores []chstore.Score
}

type sessionTrace struct {
	Trace         chstore.Trace
	Input, Output web.IO
	Href          string
}

// maxSessionTraces bounds the traces of a session shown for review.
const maxSessionTraces = 20

// review shows one item with the score form of the queue's configs.
func (h *handlers) review(r *web.Request) error {
	d, err := h.reviewData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "review", d)
}

func (h *handlers) reviewData(r *web.Request) (*reviewData, error) {
	q, err := h.getQueue(r)
	if err != nil {
		return nil, err
	}
	it, err := h.store.GetAnnotationQueueItem(r.Context(), r.Project.ID, q.ID, r.PathValue("itemId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return nil, web.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	d := &reviewData{Queue: q, Item: it, CanScore: r.Can(access.AnnotationQueuesWrite) && r.Can(access.ScoresWrite)}
	configs, err := h.queueConfigs(r, q)
	if err != nil {
		return nil, err
	}
	if d.Progress, err = h.store.AnnotationQueueProgress(r.Context(), r.Project.ID, q.ID); err != nil {
		return nil, err
	}
	d.Pending = d.Progress.Pending
	if it.Status == controlplane.ItemPending {
		items, _, err := h.store.ListAnnotationQueueItems(r.Context(), r.Project.ID, q.ID, controlplane.ItemPending, 0, maxPending)
		if err != nil {
			return nil, err
		}
		for i, p := range items {
			if p.ID == it.ID {
				d.Position = i + 1
			}
		}
	}
	filter := chstore.ScoreFilter{ProjectID: r.Project.ID, Source: chstore.SourceAnnotation, Limit: 200}
	switch it.ObjectType {
	case controlplane.ObjectTrace:
		tr, err := h.traces.GetTraceOutline(r.Context(), r.Project.ID, it.ObjectID)
		if err := missing(err, "trace"); err != nil {
			return nil, err
		}
		d.Trace, d.Observations = &tr.Trace, tr.Observations
		d.Input, d.Output, d.Metadata = web.RenderIO(tr.Input), web.RenderIO(tr.Output), web.RenderIO(tr.Metadata)
		d.TraceHref = r.Path("project", r.Project.ID, "traces", tr.ID)
		filter.TraceID = tr.ID
	case controlplane.ObjectObservation:
		o, err := h.traces.GetObservation(r.Context(), r.Project.ID, it.ObjectID)
		if err := missing(err, "observation"); err != nil {
			return nil, err
		}
		d.Observation = &o
		d.Input, d.Output, d.Metadata = web.RenderIO(o.Input), web.RenderIO(o.Output), web.RenderIO(o.Metadata)
		d.TraceHref = r.Path("project", r.Project.ID, "traces", o.TraceID) + "?observation=" + url.QueryEscape(o.ID)
		filter.TraceID, filter.ObservationID = o.TraceID, o.ID
	case controlplane.ObjectSession:
		trs, _, err := h.traces.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, SessionID: it.ObjectID, Limit: maxSessionTraces})
		if err != nil {
			return nil, err
		}
		for _, tr := range trs {
			d.Sessions = append(d.Sessions, sessionTrace{Trace: tr, Input: web.RenderIO(tr.Input), Output: web.RenderIO(tr.Output),
				Href: r.Path("project", r.Project.ID, "traces", tr.ID)})
		}
		d.TraceHref = r.Path("project", r.Project.ID, "sessions", it.ObjectID)
		filter.SessionID = it.ObjectID
	}
	if d.Scores, _, err = h.traces.ListScores(r.Context(), filter); err != nil {
		return nil, err
	}
	key := 1
	for _, c := range configs {
		f := field{Config: c}
		// The form starts from what this reviewer gave this item before.
		for _, s := range d.Scores {
			if s.ConfigID == c.ID && s.AuthorUserID == r.User.ID && s.QueueID == q.ID && f.Value == "" {
				f.Value, f.Comment = scoreText(s), s.Comment
			}
		}
		if c.DataType != controlplane.ScoreNumeric {
			f.Key = key
			key += len(c.Categories)
		}
		d.Fields = append(d.Fields, f)
	}
	return d, nil
}

// missing turns an object that is gone (deleted, or past retention) into a
// page that says so.
func missing(err error, what string) error {
	if errors.Is(err, chstore.ErrNotFound) {
		return &web.Error{Status: http.StatusNotFound, Message: "This " + what + " no longer exists; remove the item from the queue."}
	}
	return err
}

func scoreText(s chstore.Score) string {
	if s.StringValue != "" {
		return s.StringValue
	}
	return strconv.FormatFloat(s.Value, 'f', -1, 64)
}

// complete stores the reviewer's scores of the item, one per filled field,
// marks the item completed and opens the next pending one. A score's id is
// derived from the item, the config and the reviewer, so a second
// submission replaces the first instead of counting twice.
func (h *handlers) complete(r *web.Request) error {
	d, err := h.reviewData(r)
	if err != nil {
		return err
	}
	if !r.Can(access.ScoresWrite) {
		return web.ErrForbidden
	}
	body := scores.Body{}
	switch d.Item.ObjectType {
	case controlplane.ObjectTrace:
		body.TraceID, body.Environment = d.Trace.ID, d.Trace.Environment
	case controlplane.ObjectObservation:
		body.TraceID, body.ObservationID, body.Environment = d.Observation.TraceID, d.Observation.ID, d.Observation.Environment
	case controlplane.ObjectSession:
		body.SessionID = d.Item.ObjectID
	}
	var batch []chstore.Score
	now := time.Now()
	for i := range d.Fields {
		f := &d.Fields[i]
		f.Value = strings.TrimSpace(r.PostFormValue("score-" + f.Config.ID))
		f.Comment = strings.TrimSpace(r.PostFormValue("comment-" + f.Config.ID))
		if f.Value == "" {
			continue
		}
		b := body
		b.ID, b.ConfigID, b.QueueID, b.Comment, b.Value = reviewScoreID(d.Item.ID, f.Config.ID, r.User.ID), f.Config.ID, d.Queue.ID, f.Comment, scores.FormValue(f.Value)
		sc, err := scores.Builder{Configs: h.store}.Annotation(r.Context(), r.Project.ID, r.User.ID, b, now)
		var apiErr *httpx.Error
		if errors.As(err, &apiErr) {
			d.Error = f.Config.Name + ": " + apiErr.Message
			return r.RenderStatus(http.StatusBadRequest, h.t, "review", d)
		}
		if err != nil {
			return err
		}
		batch = append(batch, sc)
	}
	if len(batch) > 0 {
		if err := h.traces.InsertScores(r.Context(), batch); err != nil {
			return err
		}
	}
	if _, err := h.store.SetAnnotationQueueItemStatus(r.Context(), r.Project.ID, d.Queue.ID, d.Item.ID, controlplane.ItemCompleted, r.User.ID); err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", d.Queue.ID, "next") + "?after=" + url.QueryEscape(d.Item.ID))
}

// reviewScoreID is the id of one reviewer's score of one item by one config.
func reviewScoreID(itemID, configID, userID string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s", itemID, configID, userID))
	return hex.EncodeToString(sum[:16])
}

// remove takes an item out of the queue (its scores stay).
func (h *handlers) remove(r *web.Request) error {
	q, err := h.getQueue(r)
	if err != nil {
		return err
	}
	err = h.store.DeleteAnnotationQueueItem(r.Context(), r.Project.ID, q.ID, r.PathValue("itemId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "annotation-queues", q.ID))
}
