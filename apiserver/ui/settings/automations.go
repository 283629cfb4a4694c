package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Automations is what the automations tab needs beyond the store: the box
// that seals headers and signing secrets (nil when GLASSBOX_ENCRYPTION_KEY
// is unset) and the webhook egress policy their URLs are held to.
type Automations struct {
	Box   *secretbox.Box
	Hosts interface{ CheckURL(raw string) error }
}

// deliveriesPerPage is the length of a page of the delivery log.
const deliveriesPerPage = 50

type automationsData struct {
	formState
	Tabs        []web.Tab
	Automations []controlplane.Automation
	Events      []string
	Form        automationForm
	// Sealed is false when the server has no encryption key to store secrets.
	Sealed bool
	// New is the automation just created: its signing secret is shown this once.
	New       *controlplane.Automation
	NewSecret string
}

// deliveryRow is a delivery with the prompt version its event is about.
type deliveryRow struct {
	controlplane.AutomationDelivery
	Prompt string
}

func newDeliveryRow(d controlplane.AutomationDelivery) deliveryRow {
	var ev struct {
		Prompt struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
		} `json:"prompt"`
	}
	row := deliveryRow{AutomationDelivery: d}
	if json.Unmarshal(d.Payload, &ev) == nil && ev.Prompt.Name != "" {
		row.Prompt = fmt.Sprintf("%s v%d", ev.Prompt.Name, ev.Prompt.Version)
	}
	return row
}

type automationForm struct {
	Name, URL, Headers string
	Events             []string
}

type deliveriesData struct {
	Tabs       []web.Tab
	Automation controlplane.Automation
	Deliveries []deliveryRow
	Total      int
	Page       int
	Prev, Next string // page numbers of the neighbouring pages, empty at the ends
}

func (h *handlers) automationsData(r *web.Request) (*automationsData, error) {
	as, _, err := h.store.ListAutomations(r.Context(), r.Project.ID, 0, maxScoreConfigs)
	if err != nil {
		return nil, err
	}
	return &automationsData{Tabs: tabs(r, "automations"), Automations: as, Events: controlplane.AutomationEvents,
		Sealed: h.automations.Box != nil, Form: automationForm{Events: controlplane.AutomationEvents}}, nil
}

func (h *handlers) listAutomations(r *web.Request) error {
	d, err := h.automationsData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "automations", d)
}

// parseHeaders reads "Name: value" lines.
func parseHeaders(text string) (map[string]string, error) {
	out := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: headers: %q is not a \"Name: value\" line", controlplane.ErrInvalid, line)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// createAutomation shows the new signing secret once, in the page that
// answers the post; afterwards only its display form is.
func (h *handlers) createAutomation(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("Malformed form.")
	}
	f := automationForm{Name: strings.TrimSpace(r.PostFormValue("name")), URL: strings.TrimSpace(r.PostFormValue("url")),
		Headers: r.PostFormValue("headers"), Events: r.PostForm["events"]}
	var (
		a      controlplane.Automation
		secret string
	)
	headers, err := parseHeaders(f.Headers)
	switch {
	case err != nil:
	case h.automations.Box == nil:
		err = errors.Join(controlplane.ErrInvalid, errors.New("this server has no GLASSBOX_ENCRYPTION_KEY, so it cannot store signing secrets"))
	default:
		a, secret, err = h.store.CreateAutomation(r.Context(), h.automations.Box, r.Project.ID, controlplane.NewAutomation{
			Name: f.Name, Events: f.Events, URL: f.URL, Headers: headers, CheckURL: h.automations.Hosts.CheckURL})
	}
	if err != nil {
		return failed(h, r, err, "automations", func(r *web.Request) (*automationsData, error) {
			d, err := h.automationsData(r)
			if d != nil {
				d.Form = f
			}
			return d, err
		})
	}
	d, err := h.automationsData(r)
	if err != nil {
		return err
	}
	d.New, d.NewSecret = &a, secret
	r.Writer().Header().Set("Cache-Control", "no-store")
	return r.Render(h.t, "automations", d)
}

func (h *handlers) automationsPath(r *web.Request, more ...string) string {
	return r.Path(append([]string{"project", r.Project.ID, "settings", "automations"}, more...)...)
}

func notFoundOr(err error) error {
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	return err
}

// toggleAutomation switches an automation on or off.
func (h *handlers) toggleAutomation(r *web.Request) error {
	a, err := h.store.GetAutomation(r.Context(), r.Project.ID, r.PathValue("automationId"))
	if err != nil {
		return notFoundOr(err)
	}
	active := !a.Active
	if _, err := h.store.UpdateAutomation(r.Context(), h.automations.Box, r.Project.ID, a.ID,
		controlplane.AutomationUpdate{Active: &active}); err != nil {
		return notFoundOr(err)
	}
	return r.Redirect(h.automationsPath(r))
}

func (h *handlers) deleteAutomation(r *web.Request) error {
	if err := h.store.DeleteAutomation(r.Context(), r.Project.ID, r.PathValue("automationId")); err != nil {
		return notFoundOr(err)
	}
	return r.Redirect(h.automationsPath(r))
}

// testAutomation queues a test event and shows the log it will appear in.
func (h *handlers) testAutomation(r *web.Request) error {
	d, err := h.store.EnqueueTestDelivery(r.Context(), r.Project.ID, r.PathValue("automationId"))
	if err != nil {
		return notFoundOr(err)
	}
	return r.Redirect(h.automationsPath(r, d.AutomationID))
}

// automationDeliveries is an automation's delivery log, newest first.
func (h *handlers) automationDeliveries(r *web.Request) error {
	a, err := h.store.GetAutomation(r.Context(), r.Project.ID, r.PathValue("automationId"))
	if err != nil {
		return notFoundOr(err)
	}
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 || page > 1_000_000 {
		page = 1
	}
	ds, total, err := h.store.ListAutomationDeliveries(r.Context(), r.Project.ID, a.ID, "", (page-1)*deliveriesPerPage, deliveriesPerPage)
	if err != nil {
		return notFoundOr(err)
	}
	d := &deliveriesData{Tabs: tabs(r, "automations"), Automation: a, Total: total, Page: page}
	for _, dl := range ds {
		d.Deliveries = append(d.Deliveries, newDeliveryRow(dl))
	}
	if page > 1 {
		d.Prev = strconv.Itoa(page - 1)
	}
	if page*deliveriesPerPage < total {
		d.Next = strconv.Itoa(page + 1)
	}
	return r.Render(h.t, "automation_deliveries", d)
}
