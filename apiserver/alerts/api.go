package alerts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes read and write.
type Store interface {
	CreateAlert(ctx context.Context, projectID string, r controlplane.AlertRule) (controlplane.Alert, error)
	GetAlert(ctx context.Context, projectID, id string) (controlplane.Alert, error)
	ListAlerts(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Alert, int, error)
	UpdateAlert(ctx context.Context, projectID, id string, edit func(*controlplane.AlertRule) error) (controlplane.Alert, error)
	DeleteAlert(ctx context.Context, projectID, id string) error
	ListAlertHistory(ctx context.Context, projectID, alertID string, offset, limit int) ([]controlplane.AlertTransition, int, error)
}

// EgressPolicy decides which webhook URLs an alert may notify.
type EgressPolicy interface {
	CheckURL(raw string) error
}

// Alert is an alert as the API answers it.
type Alert struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Query       Query   `json:"query"`
	Denominator *Query  `json:"denominator"`
	Operator    string  `json:"operator"`
	Threshold   float64 `json:"threshold"`
	Window      string  `json:"window"`
	Interval    string  `json:"interval"`
	For         int     `json:"for"`
	Target      Target  `json:"target"`
	Paused      bool    `json:"paused"`

	State            string           `json:"state"`
	StateSince       httpx.Timestamp  `json:"stateSince"`
	Breaches         int              `json:"breaches"`
	LastValue        *float64         `json:"lastValue"`
	LastEvaluatedAt  *httpx.Timestamp `json:"lastEvaluatedAt"`
	LastError        string           `json:"lastError"`
	NextEvaluationAt *httpx.Timestamp `json:"nextEvaluationAt"`
	CreatedAt        httpx.Timestamp  `json:"createdAt"`
	UpdatedAt        httpx.Timestamp  `json:"updatedAt"`
}

// Target is where notifications go: a webhook URL and the body's format
// (json, or slack for Slack's incoming webhooks).
type Target struct {
	URL    string `json:"url"`
	Format string `json:"format"`
}

// AlertRequest creates an alert, or (PATCH) changes the fields it has.
// Window and interval are durations ("5m", "1h") or seconds;
// "denominator": null removes a ratio.
type AlertRequest struct {
	Name        *string         `json:"name,omitempty"`
	Query       *Query          `json:"query,omitempty"`
	Denominator json.RawMessage `json:"denominator,omitempty"`
	Operator    *string         `json:"operator,omitempty"`
	Threshold   *float64        `json:"threshold,omitempty"`
	Window      json.RawMessage `json:"window,omitempty"`
	Interval    json.RawMessage `json:"interval,omitempty"`
	For         *int            `json:"for,omitempty"`
	Target      *TargetRequest  `json:"target,omitempty"`
	Paused      *bool           `json:"paused,omitempty"`
}

// TargetRequest sets the target; format defaults to json.
type TargetRequest struct {
	URL    string `json:"url"`
	Format string `json:"format,omitempty"`
}

// Transition is one entry of an alert's history.
type Transition struct {
	ID    string          `json:"id"`
	Time  httpx.Timestamp `json:"time"`
	From  string          `json:"from"`
	To    string          `json:"to"`
	Value *float64        `json:"value"`
	// Notification is "" when none was due, "sent", or "failed: <why>".
	Notification string `json:"notification"`
}

// DeletionResponse confirms a deletion.
type DeletionResponse struct {
	Message string `json:"message"`
}

// Defaults of a new alert.
const (
	DefaultInterval = time.Minute
	DefaultFor      = 1
	DefaultFormat   = "json"
)

// Service is the alerts' rules shared by the API and the UI: it checks
// queries with the metrics engine and URLs with the egress policy before
// the store saves them.
type Service struct {
	Store    Store
	Metrics  Metrics
	Webhooks EgressPolicy
	// Now is the clock the queries are checked at.
	Now func() time.Time
}

// Routes returns the alert routes (project keys).
func Routes(svc Service) []httpx.Route {
	h := handlers{svc: svc}
	const (
		key  = httpx.ProjectKey
		tag  = "Alerts"
		base = "/api/public/alerts"
	)
	doc := func(id, summary string, body, response any) httpx.Doc {
		return httpx.Doc{OperationID: id, Tag: tag, Summary: summary, Body: body, Response: response}
	}
	return []httpx.Route{
		{Method: http.MethodGet, Path: base, Access: key, Handler: h.list,
			Doc: httpx.Doc{OperationID: "alerts_list", Tag: tag, Summary: "The project's alerts with their state, oldest first.",
				Query: httpx.PageParams, Response: httpx.List[Alert]{}}},
		{Method: http.MethodPost, Path: base, Access: key, Handler: h.create,
			Doc: doc("alerts_create", "Create an alert: a metrics query (or a ratio of two), a threshold, a window and a webhook (docs/alerts.md).",
				AlertRequest{}, Alert{})},
		{Method: http.MethodGet, Path: base + "/{alertId}", Access: key, Handler: h.get,
			Doc: doc("alerts_get", "An alert with its state.", nil, Alert{})},
		{Method: http.MethodPatch, Path: base + "/{alertId}", Access: key, Handler: h.update,
			Doc: doc("alerts_update", "Change an alert's rule, target or pause; a changed alert is evaluated at once.", AlertRequest{}, Alert{})},
		{Method: http.MethodDelete, Path: base + "/{alertId}", Access: key, Handler: h.delete,
			Doc: doc("alerts_delete", "Delete an alert and its history.", nil, DeletionResponse{})},
		{Method: http.MethodGet, Path: base + "/{alertId}/history", Access: key, Handler: h.history,
			Doc: httpx.Doc{OperationID: "alerts_history", Tag: tag, Summary: "An alert's state changes, newest first, with the notification sent.",
				Query: httpx.PageParams, Response: httpx.List[Transition]{}}},
	}
}

// ToAlert is the API's view of a stored alert.
func ToAlert(a controlplane.Alert) Alert {
	out := Alert{ID: a.ID, Name: a.Name, Operator: a.Operator, Threshold: a.Threshold, Window: formatDuration(a.Window),
		Interval: formatDuration(a.Interval), For: a.For, Target: Target{URL: a.TargetURL, Format: a.TargetFormat}, Paused: a.Paused,
		State: a.State, StateSince: httpx.FromTime(a.StateSince), Breaches: a.Breaches, LastValue: a.LastValue,
		LastEvaluatedAt: httpx.OptionalTime(a.LastEvaluatedAt), LastError: a.LastError, CreatedAt: httpx.FromTime(a.CreatedAt),
		UpdatedAt: httpx.FromTime(a.UpdatedAt)}
	out.Query, _ = decodeQuery(a.Query) // stored after the same decoding
	if a.Denominator != nil {
		d, _ := decodeQuery(a.Denominator)
		out.Denominator = &d
	}
	if !a.Paused {
		out.NextEvaluationAt = httpx.OptionalTime(a.NextEvalAt)
		if a.NextEvalAt.Unix() <= 0 {
			now := httpx.FromTime(a.UpdatedAt)
			out.NextEvaluationAt = &now // due at once
		}
	}
	return out
}

// ToTransition is the API's view of a history entry.
func ToTransition(t controlplane.AlertTransition) Transition {
	return Transition{ID: t.ID, Time: httpx.FromTime(t.At), From: t.From, To: t.To, Value: t.Value, Notification: t.Notification}
}

// apply sets the request's fields on the rule and checks the result: the
// queries with the metrics engine, the URL with the egress policy.
func (s Service) apply(projectID string, r *controlplane.AlertRule, req AlertRequest, creating bool) error {
	if creating {
		var missing []string
		for name, absent := range map[string]bool{"name": req.Name == nil, "query": req.Query == nil, "operator": req.Operator == nil,
			"threshold": req.Threshold == nil, "window": req.Window == nil, "target": req.Target == nil} {
			if absent {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return httpx.BadRequest("Missing required fields: %s", strings.Join(missing, ", "))
		}
		r.Interval, r.For, r.TargetFormat = DefaultInterval, DefaultFor, DefaultFormat
	}
	if req.Name != nil {
		r.Name = *req.Name
	}
	if req.Query != nil {
		r.Query = encodeQuery(*req.Query)
	}
	if req.Denominator != nil {
		if string(req.Denominator) == "null" {
			r.Denominator = nil
		} else {
			d, err := decodeQuery(req.Denominator)
			if err != nil {
				return httpx.BadRequest("denominator: %v", err)
			}
			r.Denominator = encodeQuery(d)
		}
	}
	if req.Operator != nil {
		r.Operator = *req.Operator
	}
	if req.Threshold != nil {
		r.Threshold = *req.Threshold
	}
	var err error
	if req.Window != nil {
		if r.Window, err = parseDuration("window", req.Window); err != nil {
			return httpx.BadRequest("%v", err)
		}
	}
	if req.Interval != nil {
		if r.Interval, err = parseDuration("interval", req.Interval); err != nil {
			return httpx.BadRequest("%v", err)
		}
	}
	if req.For != nil {
		r.For = *req.For
	}
	if req.Target != nil {
		r.TargetURL, r.TargetFormat = strings.TrimSpace(req.Target.URL), cmp.Or(req.Target.Format, DefaultFormat)
		if err := s.Webhooks.CheckURL(r.TargetURL); err != nil {
			return httpx.BadRequest("Invalid target url: %v", err)
		}
	}
	if req.Paused != nil {
		r.Paused = *req.Paused
	}
	return s.checkQueries(projectID, *r)
}

// checkQueries runs the rule's queries through the metrics engine's checks.
func (s Service) checkQueries(projectID string, r controlplane.AlertRule) error {
	if r.Window < controlplane.MinAlertWindow || r.Window > controlplane.MaxAlertWindow {
		return nil // the store names the bounds
	}
	now := s.Now()
	q, err := decodeQuery(r.Query)
	if err == nil {
		err = check(s.Metrics, projectID, "query", q, r.Window, now)
	}
	if err == nil && r.Denominator != nil {
		var d Query
		if d, err = decodeQuery(r.Denominator); err == nil {
			err = check(s.Metrics, projectID, "denominator", d, r.Window, now)
		}
	}
	if err != nil {
		return httpx.BadRequest("%v", err)
	}
	return nil
}

// Create checks and saves a new alert.
func (s Service) Create(ctx context.Context, projectID string, req AlertRequest) (controlplane.Alert, error) {
	var r controlplane.AlertRule
	if err := s.apply(projectID, &r, req, true); err != nil {
		return controlplane.Alert{}, err
	}
	a, err := s.Store.CreateAlert(ctx, projectID, r)
	return a, storeError(err)
}

// Update checks and saves the request's changes to an alert.
func (s Service) Update(ctx context.Context, projectID, id string, req AlertRequest) (controlplane.Alert, error) {
	a, err := s.Store.UpdateAlert(ctx, projectID, id, func(r *controlplane.AlertRule) error {
		return s.apply(projectID, r, req, false)
	})
	return a, storeError(err)
}

// storeError maps the store's refusals to answers.
func storeError(err error) error {
	var he *httpx.Error
	switch {
	case err == nil || errors.As(err, &he):
		return err
	case errors.Is(err, controlplane.ErrNotFound):
		return httpx.NotFound("Alert not found within authorized project")
	case errors.Is(err, controlplane.ErrInvalid):
		return httpx.BadRequest("%s", strings.TrimPrefix(err.Error(), controlplane.ErrInvalid.Error()+": "))
	}
	return err
}

type handlers struct{ svc Service }

func (h handlers) list(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.svc.Store.ListAlerts, ToAlert)
}

func (h handlers) create(r *http.Request) (any, error) {
	var req AlertRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	a, err := h.svc.Create(r.Context(), httpx.ProjectID(r), req)
	if err != nil {
		return nil, err
	}
	return ToAlert(a), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	a, err := h.svc.Store.GetAlert(r.Context(), httpx.ProjectID(r), r.PathValue("alertId"))
	if err != nil {
		return nil, storeError(err)
	}
	return ToAlert(a), nil
}

func (h handlers) update(r *http.Request) (any, error) {
	var req AlertRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	a, err := h.svc.Update(r.Context(), httpx.ProjectID(r), r.PathValue("alertId"), req)
	if err != nil {
		return nil, err
	}
	return ToAlert(a), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	if err := h.svc.Store.DeleteAlert(r.Context(), httpx.ProjectID(r), r.PathValue("alertId")); err != nil {
		return nil, storeError(err)
	}
	return DeletionResponse{Message: "Alert successfully deleted"}, nil
}

func (h handlers) history(r *http.Request) (any, error) {
	id := r.PathValue("alertId")
	list, err := httpx.ProjectList(r, func(ctx context.Context, projectID string, offset, limit int) ([]controlplane.AlertTransition, int, error) {
		return h.svc.Store.ListAlertHistory(ctx, projectID, id, offset, limit)
	}, ToTransition)
	return list, storeError(err)
}
