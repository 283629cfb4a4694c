// Package automations serves a project's automations, webhooks on
// prompt-version events, and runs the worker that delivers them. A prompt
// change writes its events to the control plane's outbox in its own
// transaction; the worker leases due deliveries, POSTs them signed to the
// automation's URL under the webhook egress policy, and retries with backoff.
package automations // import "github.com/glassbox-dev/glassbox/apiserver/automations"

import (
	"context"
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Store is what the routes need from the control plane store.
type Store interface {
	CreateAutomation(ctx context.Context, box *secretbox.Box, projectID string, n controlplane.NewAutomation) (controlplane.Automation, string, error)
	ListAutomations(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Automation, int, error)
	GetAutomation(ctx context.Context, projectID, id string) (controlplane.Automation, error)
	UpdateAutomation(ctx context.Context, box *secretbox.Box, projectID, id string, u controlplane.AutomationUpdate) (controlplane.Automation, error)
	DeleteAutomation(ctx context.Context, projectID, id string) error
	ListAutomationDeliveries(ctx context.Context, projectID, automationID, status string, offset, limit int) ([]controlplane.AutomationDelivery, int, error)
	EnqueueTestDelivery(ctx context.Context, projectID, id string) (controlplane.AutomationDelivery, error)
}

// EgressPolicy decides which URLs the server may call.
type EgressPolicy interface {
	CheckURL(raw string) error
}

// Automation is an automation as the API shows it: custom headers by name,
// the signing secret in its display form.
type Automation struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// EventTypes are the prompt-version events delivered: created, updated
	// (labels or tags changed) and deleted.
	EventTypes    []string        `json:"eventTypes"`
	URL           string          `json:"url"`
	HeaderKeys    []string        `json:"headerKeys"`
	DisplaySecret string          `json:"displaySecret"`
	Active        bool            `json:"active"`
	CreatedAt     httpx.Timestamp `json:"createdAt"`
	UpdatedAt     httpx.Timestamp `json:"updatedAt"`
}

// CreatedAutomation answers the creation: the only time the signing secret
// is shown.
type CreatedAutomation struct {
	Automation
	// SigningSecret signs every delivery (X-Glassbox-Signature); store it now.
	SigningSecret string `json:"signingSecret"`
}

// AutomationRequest is the body of POST /api/public/automations.
type AutomationRequest struct {
	Name       string   `json:"name"`
	EventTypes []string `json:"eventTypes"`
	// URL receives the deliveries; the webhook egress policy
	// (evaluation.webhook_allowed_hosts) must allow its host.
	URL string `json:"url"`
	// Headers are sent with every delivery; their values are stored sealed.
	Headers map[string]string `json:"headers,omitempty"`
	// Active defaults to true.
	Active *bool `json:"active,omitempty"`
}

// AutomationUpdate is the body of PATCH /api/public/automations/{automationId};
// omitted fields keep their values, headers replace all custom headers.
type AutomationUpdate struct {
	Name       *string           `json:"name,omitempty"`
	EventTypes []string          `json:"eventTypes,omitempty"`
	URL        *string           `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Active     *bool             `json:"active,omitempty"`
}

// Delivery is one event sent, or to be sent, to an automation.
type Delivery struct {
	ID           string `json:"id"`
	AutomationID string `json:"automationId"`
	EventID      string `json:"eventId"`
	// EventType is created, updated, deleted or test.
	EventType string `json:"eventType"`
	// Status is PENDING (due at nextAttemptAt), DELIVERED or FAILED.
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// StatusCode is the last answer's HTTP status; null when none came.
	StatusCode    *int             `json:"statusCode"`
	Error         string           `json:"error"`
	NextAttemptAt *httpx.Timestamp `json:"nextAttemptAt"`
	DeliveredAt   *httpx.Timestamp `json:"deliveredAt"`
	CreatedAt     httpx.Timestamp  `json:"createdAt"`
	UpdatedAt     httpx.Timestamp  `json:"updatedAt"`
	// Payload is the JSON body sent.
	Payload httpx.JSON `json:"payload"`
}

// Deletion answers a deletion.
type Deletion struct {
	Message string `json:"message"`
}

type handlers struct {
	store    Store
	box      *secretbox.Box
	webhooks EgressPolicy
}

// Routes returns the automation routes; box seals the headers and signing
// secrets (nil when GLASSBOX_ENCRYPTION_KEY is unset: automations cannot
// be created), webhooks refuses URLs the webhook egress policy does not allow.
func Routes(store Store, box *secretbox.Box, webhooks EgressPolicy) []httpx.Route {
	h := handlers{store: store, box: box, webhooks: webhooks}
	const base = "/api/public/automations"
	const tag = "Automations"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: base, Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "automations_list", Tag: tag, Query: httpx.PageParams, Response: httpx.List[Automation]{},
				Summary: "The project's automations (webhooks on prompt-version events), by name."},
		},
		{
			Method: http.MethodPost, Path: base, Access: httpx.ProjectKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "automations_create", Tag: tag, Body: AutomationRequest{}, Response: CreatedAutomation{},
				Status: http.StatusCreated, Summary: "Create an automation; the answer holds its signing secret, shown this once."},
		},
		{
			Method: http.MethodGet, Path: base + "/{automationId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "automations_get", Tag: tag, Response: Automation{}, Summary: "One automation."},
		},
		{
			Method: http.MethodPatch, Path: base + "/{automationId}", Access: httpx.ProjectKey, Handler: h.update,
			Doc: httpx.Doc{OperationID: "automations_update", Tag: tag, Body: AutomationUpdate{}, Response: Automation{},
				Summary: "Change an automation: name, events, URL, headers, or switch it on or off."},
		},
		{
			Method: http.MethodDelete, Path: base + "/{automationId}", Access: httpx.ProjectKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "automations_delete", Tag: tag, Response: Deletion{},
				Summary: "Delete an automation and its delivery log."},
		},
		{
			Method: http.MethodGet, Path: base + "/{automationId}/deliveries", Access: httpx.ProjectKey, Handler: h.deliveries,
			Doc: httpx.Doc{OperationID: "automations_deliveries", Tag: tag, Response: httpx.List[Delivery]{},
				Query: append([]httpx.Param{{Name: "status", Type: httpx.TypeString,
					Description: "PENDING, DELIVERED or FAILED."}}, httpx.PageParams...),
				Summary: "An automation's delivery log, newest first."},
		},
		{
			Method: http.MethodPost, Path: base + "/{automationId}/test", Access: httpx.ProjectKey, Handler: h.test,
			Doc: httpx.Doc{OperationID: "automations_test", Tag: tag, Response: Delivery{}, Status: http.StatusAccepted,
				Summary: "Queue a test event for the automation, active or not; its delivery shows in the log."},
		},
	}
}

// ToAutomation shapes a stored automation for the API.
func ToAutomation(a controlplane.Automation) Automation {
	return Automation{ID: a.ID, Name: a.Name, EventTypes: httpx.NonNil(a.Events), URL: a.URL, HeaderKeys: httpx.NonNil(a.HeaderKeys),
		DisplaySecret: a.DisplaySecret, Active: a.Active, CreatedAt: httpx.FromTime(a.CreatedAt), UpdatedAt: httpx.FromTime(a.UpdatedAt)}
}

// ToDelivery shapes a stored delivery for the API.
func ToDelivery(d controlplane.AutomationDelivery) Delivery {
	out := Delivery{ID: d.ID, AutomationID: d.AutomationID, EventID: d.EventID, EventType: d.EventType, Status: d.Status,
		Attempts: d.Attempts, Error: d.Error, DeliveredAt: httpx.OptionalTime(d.DeliveredAt),
		CreatedAt: httpx.FromTime(d.CreatedAt), UpdatedAt: httpx.FromTime(d.UpdatedAt), Payload: httpx.JSON(d.Payload)}
	if d.StatusCode > 0 {
		code := d.StatusCode
		out.StatusCode = &code
	}
	if d.Status == controlplane.DeliveryPending {
		out.NextAttemptAt = httpx.OptionalTime(d.NextAttempt)
	}
	return out
}

// storeError maps the errors only this API has; the router maps the
// stores' own.
func storeError(err error) error {
	if errors.Is(err, secretbox.ErrNoEncryptionKey) {
		return &httpx.Error{Status: http.StatusServiceUnavailable, Name: "EncryptionKeyMissingError", Message: err.Error()}
	}
	return err
}

func (h handlers) list(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListAutomations, ToAutomation)
}

func (h handlers) create(r *http.Request) (any, error) {
	var req AutomationRequest
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	a, secret, err := h.store.CreateAutomation(r.Context(), h.box, httpx.ProjectID(r), controlplane.NewAutomation{
		Name: req.Name, Events: req.EventTypes, URL: req.URL, Headers: req.Headers,
		Inactive: req.Active != nil && !*req.Active, CheckURL: h.webhooks.CheckURL,
	})
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusCreated, CreatedAutomation{Automation: ToAutomation(a), SigningSecret: secret}), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	a, err := h.store.GetAutomation(r.Context(), httpx.ProjectID(r), r.PathValue("automationId"))
	if err != nil {
		return nil, err
	}
	return ToAutomation(a), nil
}

func (h handlers) update(r *http.Request) (any, error) {
	var req AutomationUpdate
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	a, err := h.store.UpdateAutomation(r.Context(), h.box, httpx.ProjectID(r), r.PathValue("automationId"), controlplane.AutomationUpdate{
		Name: req.Name, Events: req.EventTypes, URL: req.URL, Headers: req.Headers, Active: req.Active, CheckURL: h.webhooks.CheckURL,
	})
	if err != nil {
		return nil, storeError(err)
	}
	return ToAutomation(a), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	if err := h.store.DeleteAutomation(r.Context(), httpx.ProjectID(r), r.PathValue("automationId")); err != nil {
		return nil, err
	}
	return Deletion{Message: "Automation deleted"}, nil
}

func (h handlers) deliveries(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	page, err := q.Page()
	if err != nil {
		return nil, err
	}
	status, err := q.OneOf("status", controlplane.DeliveryStatuses)
	if err != nil {
		return nil, err
	}
	ds, total, err := h.store.ListAutomationDeliveries(r.Context(), httpx.ProjectID(r), r.PathValue("automationId"), status,
		page.Offset(), page.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, 0, len(ds))
	for _, d := range ds {
		out = append(out, ToDelivery(d))
	}
	return httpx.NewList(out, page, int64(total)), nil
}

func (h handlers) test(r *http.Request) (any, error) {
	d, err := h.store.EnqueueTestDelivery(r.Context(), httpx.ProjectID(r), r.PathValue("automationId"))
	if err != nil {
		return nil, err
	}
	return httpx.WithStatus(http.StatusAccepted, ToDelivery(d)), nil
}
