package controlplane

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/google/uuid"
)

// Automation events: what happened to a prompt version. Updated means its
// labels or tags changed.
const (
	EventPromptCreated = "created"
	EventPromptUpdated = "updated"
	EventPromptDeleted = "deleted"
	// EventTest is a sample delivery asked for by a user; no automation
	// subscribes to it.
	EventTest = "test"
)

// AutomationEvents lists the events an automation may subscribe to.
var AutomationEvents = []string{EventPromptCreated, EventPromptUpdated, EventPromptDeleted}

// Delivery statuses. A pending delivery is sent once due, by the worker
// holding its lease; the others are final.
const (
	DeliveryPending   = "PENDING"
	DeliveryDelivered = "DELIVERED"
	DeliveryFailed    = "FAILED"
)

// DeliveryStatuses lists every status, for validating filters.
var DeliveryStatuses = []string{DeliveryPending, DeliveryDelivered, DeliveryFailed}

const (
	maxAutomationName    = 100
	maxAutomationURL     = 2000
	maxAutomationHeaders = 20
	maxDeliveryError     = 2000
	// signingSecretPrefix marks the secret, so that one found in a log or
	// a repository can be recognised.
	signingSecretPrefix = "gb-whsec_"
)

// Automation is a project's webhook on prompt-version events, as it may be
// shown: the custom headers by name only, the signing secret in its display
// form.
type Automation struct {
	ID        string
	ProjectID string
	Name      string
	Events    []string // sorted
	URL       string
	// HeaderKeys are the names of the custom headers; their values are sealed.
	HeaderKeys    []string
	DisplaySecret string
	Active        bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// NewAutomation is the input of CreateAutomation.
type NewAutomation struct {
	Name    string
	Events  []string
	URL     string
	Headers map[string]string
	// Inactive creates the automation switched off.
	Inactive bool
	// CheckURL, when set, must allow URL (the egress policy).
	CheckURL func(rawURL string) error
}

// AutomationUpdate changes an automation; nil fields keep what is stored.
type AutomationUpdate struct {
	Name    *string
	Events  []string
	URL     *string
	Headers map[string]string // replaces every custom header when not nil
	Active  *bool
	// CheckURL, when set, must allow the automation's URL.
	CheckURL func(rawURL string) error
}

// AutomationTarget is where and how a delivery is sent: the secrets opened.
type AutomationTarget struct {
	Automation
	Headers       map[string]string
	SigningSecret string
}

// AutomationDelivery is one event sent, or to be sent, to one automation.
type AutomationDelivery struct {
	ID           string
	ProjectID    string
	AutomationID string
	EventID      string
	EventType    string
	Payload      json.RawMessage
	Status       string
	Attempts     int
	StatusCode   int // of the last attempt; 0 when none answered
	Error        string
	NextAttempt  time.Time
	LeaseOwner   string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	DeliveredAt  time.Time // zero unless delivered
}

// DeliveryOutcome is how one attempt ended.
type DeliveryOutcome struct {
	// Status is DeliveryDelivered, DeliveryFailed, or DeliveryPending to try
	// again at Next.
	Status     string
	StatusCode int
	Error      string
	Next       time.Time
}

// ErrDeliveryLeaseLost means the delivery is no longer leased to the caller.
var ErrDeliveryLeaseLost = errors.New("automation delivery lease lost")

// automationAAD binds an automation's sealed secrets to its id and URL: a
// sealed value copied to another row, or a URL changed in the database,
// does not open, so the headers are never sent where they were not meant to go.
func automationAAD(id, url string) string {
	return "automation\n" + id + "\n" + url
}

func checkAutomationName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > maxAutomationName {
		return "", fmt.Errorf("%w: name: must be 1 to %d characters", ErrInvalid, maxAutomationName)
	}
	return name, nil
}

func checkAutomationEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: eventTypes: name at least one of %s", ErrInvalid, strings.Join(AutomationEvents, ", "))
	}
	out := make([]string, 0, len(events))
	for _, e := range events {
		if !slices.Contains(AutomationEvents, e) {
			return nil, fmt.Errorf("%w: eventTypes: %q is not one of %s", ErrInvalid, e, strings.Join(AutomationEvents, ", "))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out, nil
}

func checkAutomationURL(raw string, check func(string) error) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxAutomationURL {
		return "", fmt.Errorf("%w: url: must be 1 to %d characters", ErrInvalid, maxAutomationURL)
	}
	if check != nil {
		if err := check(raw); err != nil {
			return "", fmt.Errorf("%w: url: %w", ErrInvalid, err)
		}
	}
	return raw, nil
}

// reservedAutomationHeaders are set by the sender; a custom header may not
// replace them.
var reservedAutomationHeaders = []string{"Content-Type", "Content-Length", "Host", "User-Agent",
	"X-Glassbox-Signature", "X-Langfuse-Signature", "X-Glassbox-Event-Id", "X-Glassbox-Delivery-Id"}

func checkAutomationHeaders(headers map[string]string) (map[string]string, []string, error) {
	if len(headers) > maxAutomationHeaders {
		return nil, nil, fmt.Errorf("%w: headers: at most %d", ErrInvalid, maxAutomationHeaders)
	}
	out := make(map[string]string, len(headers))
	keys := make([]string, 0, len(headers))
	for k, v := range headers {
		name := http.CanonicalHeaderKey(strings.TrimSpace(k))
		if name == "" || strings.ContainsAny(name, " \t\r\n:") || len(name) > 100 {
			return nil, nil, fmt.Errorf("%w: headers: %q is not a header name", ErrInvalid, k)
		}
		if slices.Contains(reservedAutomationHeaders, name) {
			return nil, nil, fmt.Errorf("%w: headers: %s is set by Glassbox", ErrInvalid, name)
		}
		if strings.ContainsAny(v, "\r\n") || len(v) > 4000 {
			return nil, nil, fmt.Errorf("%w: headers: the value of %s must be one line of at most 4000 characters", ErrInvalid, name)
		}
		if _, dup := out[name]; dup {
			return nil, nil, fmt.Errorf("%w: headers: %s is given twice", ErrInvalid, name)
		}
		out[name] = v
		keys = append(keys, name)
	}
	slices.Sort(keys)
	return out, keys, nil
}

// newSigningSecret returns a random secret and its display form.
func newSigningSecret() (secret, display string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	secret = signingSecretPrefix + hex.EncodeToString(b)
	return secret, signingSecretPrefix + "..." + secret[len(secret)-4:], nil
}

const automationColumns = `id, project_id, name, events, url, header_keys, display_secret, active, created_at, updated_at`

// CreateAutomation stores an automation with a new signing secret, which
// is returned here only: afterwards it signs deliveries and is never shown.
// box seals the secret and the custom headers.
func (s *Store) CreateAutomation(ctx context.Context, box *secretbox.Box, projectID string, n NewAutomation) (Automation, string, error) {
	if box == nil {
		return Automation{}, "", secretbox.ErrNoEncryptionKey
	}
	name, err := checkAutomationName(n.Name)
	if err != nil {
		return Automation{}, "", err
	}
	events, err := checkAutomationEvents(n.Events)
	if err != nil {
		return Automation{}, "", err
	}
	url, err := checkAutomationURL(n.URL, n.CheckURL)
	if err != nil {
		return Automation{}, "", err
	}
	headers, keys, err := checkAutomationHeaders(n.Headers)
	if err != nil {
		return Automation{}, "", err
	}
	secret, display, err := newSigningSecret()
	if err != nil {
		return Automation{}, "", err
	}
	a := Automation{ID: uuid.NewString(), ProjectID: projectID, Name: name, Events: events, URL: url, HeaderKeys: keys,
		DisplaySecret: display, Active: !n.Inactive}
	sealedHeaders, sealedSecret, err := sealAutomation(box, a, headers, secret)
	if err != nil {
		return Automation{}, "", err
	}
	now := s.micros()
	a.CreatedAt, a.UpdatedAt = fromMicros(now), fromMicros(now)
	eventsJSON, _ := json.Marshal(events)
	keysJSON, _ := json.Marshal(keys)
	if _, err := s.conn().exec(ctx, `INSERT INTO automations (id, project_id, name, events, url, header_keys, sealed_headers,
		sealed_secret, display_secret, active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, projectID, name, string(eventsJSON), url, string(keysJSON), sealedHeaders, sealedSecret, display,
		boolInt(a.Active), now, now); err != nil {
		err = classify(err)
		if errors.Is(err, ErrConflict) {
			return Automation{}, "", fmt.Errorf("%w: an automation named %q exists", ErrConflict, name)
		}
		if errors.Is(err, ErrNotFound) {
			return Automation{}, "", fmt.Errorf("project %s: %w", projectID, ErrNotFound)
		}
		return Automation{}, "", fmt.Errorf("create automation: %w", err)
	}
	return a, secret, nil
}

func sealAutomation(box *secretbox.Box, a Automation, headers map[string]string, secret string) (sealedHeaders, sealedSecret string, err error) {
	raw, err := json.Marshal(headers)
	if err != nil {
		return "", "", err
	}
	aad := automationAAD(a.ID, a.URL)
	if sealedHeaders, err = box.Seal(string(raw), aad); err != nil {
		return "", "", err
	}
	if sealedSecret, err = box.Seal(secret, aad); err != nil {
		return "", "", err
	}
	return sealedHeaders, sealedSecret, nil
}

func scanAutomation(r scanner) (Automation, error) {
	var (
		a                    Automation
		events, keys         string
		active               int
		createdAt, updatedAt int64
	)
	if err := r.Scan(&a.ID, &a.ProjectID, &a.Name, &events, &a.URL, &keys, &a.DisplaySecret, &active, &createdAt, &updatedAt); err != nil {
		return Automation{}, err
	}
	if err := json.Unmarshal([]byte(events), &a.Events); err != nil {
		return Automation{}, fmt.Errorf("automation %s: events: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(keys), &a.HeaderKeys); err != nil {
		return Automation{}, fmt.Errorf("automation %s: header keys: %w", a.ID, err)
	}
	a.Active = active != 0
	a.CreatedAt, a.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return a, nil
}

// ListAutomations returns a page of a project's automations by name, and
// their total.
func (s *Store) ListAutomations(ctx context.Context, projectID string, offset, limit int) ([]Automation, int, error) {
	var total int
	if err := s.conn().queryRow(ctx, `SELECT COUNT(*) FROM automations WHERE project_id = ?`, projectID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count automations: %w", err)
	}
	rows, err := s.conn().query(ctx, `SELECT `+automationColumns+` FROM automations WHERE project_id = ?
		ORDER BY name, id LIMIT ? OFFSET ?`, projectID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list automations: %w", err)
	}
	defer rows.Close()
	out := []Automation{}
	for rows.Next() {
		a, err := scanAutomation(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	return out, total, rows.Err()
}

// GetAutomation returns one automation of the project.
func (s *Store) GetAutomation(ctx context.Context, projectID, id string) (Automation, error) {
	return getAutomation(ctx, s.conn(), projectID, id)
}

func getAutomation(ctx context.Context, c conn, projectID, id string) (Automation, error) {
	a, err := scanAutomation(c.queryRow(ctx, `SELECT `+automationColumns+` FROM automations WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Automation{}, fmt.Errorf("automation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Automation{}, fmt.Errorf("get automation: %w", err)
	}
	return a, nil
}

// UpdateAutomation changes an automation. A new URL reseals its secrets,
// which are bound to it; the signing secret stays.
func (s *Store) UpdateAutomation(ctx context.Context, box *secretbox.Box, projectID, id string, u AutomationUpdate) (Automation, error) {
	var out Automation
	err := s.inTx(ctx, func(c conn) error {
		cur, err := getAutomation(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		next := cur
		if u.Name != nil {
			if next.Name, err = checkAutomationName(*u.Name); err != nil {
				return err
			}
		}
		if u.Events != nil {
			if next.Events, err = checkAutomationEvents(u.Events); err != nil {
				return err
			}
		}
		if u.URL != nil {
			if next.URL, err = checkAutomationURL(*u.URL, u.CheckURL); err != nil {
				return err
			}
		}
		if u.Active != nil {
			next.Active = *u.Active
		}
		var sealedHeaders, sealedSecret sql.NullString
		if next.URL != cur.URL || u.Headers != nil {
			if box == nil {
				return secretbox.ErrNoEncryptionKey
			}
			target, err := openAutomation(ctx, c, box, cur)
			if err != nil {
				return err
			}
			headers := target.Headers
			if u.Headers != nil {
				if headers, next.HeaderKeys, err = checkAutomationHeaders(u.Headers); err != nil {
					return err
				}
			}
			h, sec, err := sealAutomation(box, next, headers, target.SigningSecret)
			if err != nil {
				return err
			}
			sealedHeaders, sealedSecret = sql.NullString{String: h, Valid: true}, sql.NullString{String: sec, Valid: true}
		}
		now := s.micros()
		eventsJSON, _ := json.Marshal(next.Events)
		keysJSON, _ := json.Marshal(next.HeaderKeys)
		if _, err := c.exec(ctx, `UPDATE automations SET name = ?, events = ?, url = ?, header_keys = ?,
			sealed_headers = COALESCE(?, sealed_headers), sealed_secret = COALESCE(?, sealed_secret), active = ?, updated_at = ?
			WHERE project_id = ? AND id = ?`,
			next.Name, string(eventsJSON), next.URL, string(keysJSON), sealedHeaders, sealedSecret, boolInt(next.Active), now,
			projectID, id); err != nil {
			err = classify(err)
			if errors.Is(err, ErrConflict) {
				return fmt.Errorf("%w: an automation named %q exists", ErrConflict, next.Name)
			}
			return fmt.Errorf("update automation: %w", err)
		}
		next.UpdatedAt = fromMicros(now)
		out = next
		return nil
	})
	return out, err
}

// DeleteAutomation deletes an automation and its deliveries.
func (s *Store) DeleteAutomation(ctx context.Context, projectID, id string) error {
	return s.inTx(ctx, func(c conn) error {
		if _, err := c.exec(ctx, `DELETE FROM automation_deliveries WHERE project_id = ? AND automation_id = ?`, projectID, id); err != nil {
			return fmt.Errorf("delete automation deliveries: %w", err)
		}
		res, err := c.exec(ctx, `DELETE FROM automations WHERE project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return fmt.Errorf("delete automation: %w", err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("automation %s: %w", id, ErrNotFound)
		}
		return nil
	})
}

// AutomationTarget returns an automation with its secrets opened by box,
// for the worker that sends its deliveries.
func (s *Store) AutomationTarget(ctx context.Context, box *secretbox.Box, projectID, id string) (AutomationTarget, error) {
	a, err := s.GetAutomation(ctx, projectID, id)
	if err != nil {
		return AutomationTarget{}, err
	}
	return openAutomation(ctx, s.conn(), box, a)
}

func openAutomation(ctx context.Context, c conn, box *secretbox.Box, a Automation) (AutomationTarget, error) {
	var sealedHeaders, sealedSecret string
	if err := c.queryRow(ctx, `SELECT sealed_headers, sealed_secret FROM automations WHERE project_id = ? AND id = ?`,
		a.ProjectID, a.ID).Scan(&sealedHeaders, &sealedSecret); err != nil {
		return AutomationTarget{}, fmt.Errorf("read automation secrets: %w", err)
	}
	aad := automationAAD(a.ID, a.URL)
	rawHeaders, err := box.Open(sealedHeaders, aad)
	if err != nil {
		return AutomationTarget{}, err
	}
	secret, err := box.Open(sealedSecret, aad)
	if err != nil {
		return AutomationTarget{}, err
	}
	t := AutomationTarget{Automation: a, SigningSecret: secret}
	if err := json.Unmarshal([]byte(rawHeaders), &t.Headers); err != nil {
		return AutomationTarget{}, fmt.Errorf("automation %s: headers: %w", a.ID, err)
	}
	return t, nil
}

// EnqueueTestDelivery queues a sample event for one automation, active or
// not, and returns its delivery.
func (s *Store) EnqueueTestDelivery(ctx context.Context, projectID, id string) (AutomationDelivery, error) {
	var d AutomationDelivery
	err := s.inTx(ctx, func(c conn) error {
		if _, err := getAutomation(ctx, c, projectID, id); err != nil {
			return err
		}
		now := s.now()
		sample := Prompt{ID: "test", ProjectID: projectID, Name: "glassbox-test-event", Version: 1, Type: PromptText,
			Prompt: json.RawMessage(`"This is a test event from Glassbox."`), Config: json.RawMessage(`{}`),
			Labels: []string{}, Tags: []string{}, CommitMessage: "test event", CreatedAt: now, UpdatedAt: now}
		ev := newPromptEvent(EventTest, sample, now)
		ids, err := s.insertDeliveries(ctx, c, projectID, []automationSub{{id: id}}, ev)
		if err != nil {
			return err
		}
		d, err = getDelivery(ctx, c, projectID, ids[0])
		return err
	})
	return d, err
}

// promptEvent is one event and its JSON payload, shared by the deliveries
// of every subscribed automation.
type promptEvent struct {
	id, action string
	payload    []byte
}

// promptEventPayload is the body of a delivery, the shape of Langfuse's
// prompt-version webhooks.
type promptEventPayload struct {
	ID         string             `json:"id"`
	Timestamp  string             `json:"timestamp"`
	Type       string             `json:"type"`
	APIVersion string             `json:"apiVersion"`
	Action     string             `json:"action"`
	ProjectID  string             `json:"projectId"`
	Prompt     promptEventVersion `json:"prompt"`
}

type promptEventVersion struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Version       int             `json:"version"`
	ProjectID     string          `json:"projectId"`
	Labels        []string        `json:"labels"`
	Tags          []string        `json:"tags"`
	Type          string          `json:"type"`
	Prompt        json.RawMessage `json:"prompt"`
	Config        json.RawMessage `json:"config"`
	CommitMessage *string         `json:"commitMessage"`
	CreatedBy     string          `json:"createdBy"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
}

const jsonTime = "2006-01-02T15:04:05.000Z07:00"

func newPromptEvent(action string, p Prompt, at time.Time) promptEvent {
	var commit *string
	if p.CommitMessage != "" {
		commit = &p.CommitMessage
	}
	ev := promptEvent{id: uuid.NewString(), action: action}
	// Marshalling fixed types of checked JSON cannot fail.
	ev.payload, _ = json.Marshal(promptEventPayload{ID: ev.id, Timestamp: at.UTC().Format(jsonTime), Type: "prompt-version",
		APIVersion: "v1", Action: action, ProjectID: p.ProjectID,
		Prompt: promptEventVersion{ID: p.ID, Name: p.Name, Version: p.Version, ProjectID: p.ProjectID, Labels: p.Labels, Tags: p.Tags,
			Type: p.Type, Prompt: p.Prompt, Config: p.Config, CommitMessage: commit, CreatedBy: p.CreatedBy,
			CreatedAt: p.CreatedAt.UTC().Format(jsonTime), UpdatedAt: p.UpdatedAt.UTC().Format(jsonTime)}})
	return ev
}

// automationSub is an active automation and the events it wants.
type automationSub struct {
	id     string
	events []string
}

// promptWatch records a prompt name's state before a change, so that the
// change's events are written to the outbox in its own transaction: a
// change is never committed without its deliveries, nor they without it.
// A nil watch (no active automation in the project) does nothing.
type promptWatch struct {
	subs      []automationSub
	projectID string
	name      string
	labels    map[int][]string
	tags      []string
	deleted   []Prompt
}

// watchPrompt snapshots a prompt name, after lockPrompt, when the project
// has active automations.
func (s *Store) watchPrompt(ctx context.Context, c conn, projectID, name string) (*promptWatch, error) {
	rows, err := c.query(ctx, `SELECT id, events FROM automations WHERE project_id = ? AND active = 1`, projectID)
	if err != nil {
		return nil, fmt.Errorf("automations of project: %w", err)
	}
	var subs []automationSub
	for rows.Next() {
		var (
			sub    automationSub
			events string
		)
		if err := rows.Scan(&sub.id, &events); err != nil {
			_ = rows.Close() // the scan error is the one to report
			return nil, err
		}
		if err := json.Unmarshal([]byte(events), &sub.events); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("automation %s: events: %w", sub.id, err)
		}
		subs = append(subs, sub)
	}
	_ = rows.Close() // rows.Err reports what went wrong while reading
	if err := rows.Err(); err != nil || len(subs) == 0 {
		return nil, err
	}
	w := &promptWatch{subs: subs, projectID: projectID, name: name}
	if w.labels, err = promptLabels(ctx, c, projectID, name); err != nil {
		return nil, err
	}
	if w.tags, err = promptTags(ctx, c, projectID, name); err != nil {
		return nil, err
	}
	return w, nil
}

// deleting records the versions about to be deleted, as they are.
func (w *promptWatch) deleting(ctx context.Context, c conn, versions []int) error {
	if w == nil {
		return nil
	}
	for _, v := range versions {
		p, err := getPrompt(ctx, c, w.projectID, w.name, PromptSelector{Version: v})
		if err != nil {
			return err
		}
		w.deleted = append(w.deleted, p)
	}
	return nil
}

// emit writes the events of the change to the outbox: created for the
// version created (0 for none), deleted for each recorded deletion, and
// updated for every other version whose labels or tags changed.
func (s *Store) emit(ctx context.Context, c conn, w *promptWatch, created int) error {
	if w == nil {
		return nil
	}
	now := s.now()
	for _, p := range w.deleted {
		if err := s.emitEvent(ctx, c, w, newPromptEvent(EventPromptDeleted, p, now)); err != nil {
			return err
		}
	}
	labels, err := promptLabels(ctx, c, w.projectID, w.name)
	if err != nil {
		return err
	}
	tags, err := promptTags(ctx, c, w.projectID, w.name)
	if err != nil {
		return err
	}
	versions, err := promptVersions(ctx, c, w.projectID, w.name)
	if err != nil {
		return err
	}
	tagsChanged := !slices.Equal(tags, w.tags)
	for _, v := range versions {
		action := EventPromptUpdated
		switch {
		case v == created:
			action = EventPromptCreated
		case !tagsChanged && slices.Equal(labels[v], w.labels[v]):
			continue
		}
		p, err := getPrompt(ctx, c, w.projectID, w.name, PromptSelector{Version: v})
		if err != nil {
			return err
		}
		if err := s.emitEvent(ctx, c, w, newPromptEvent(action, p, now)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) emitEvent(ctx context.Context, c conn, w *promptWatch, ev promptEvent) error {
	var subs []automationSub
	for _, sub := range w.subs {
		if slices.Contains(sub.events, ev.action) {
			subs = append(subs, sub)
		}
	}
	_, err := s.insertDeliveries(ctx, c, w.projectID, subs, ev)
	return err
}

func (s *Store) insertDeliveries(ctx context.Context, c conn, projectID string, subs []automationSub, ev promptEvent) ([]string, error) {
	now := s.micros()
	ids := make([]string, 0, len(subs))
	for _, sub := range subs {
		id := uuid.NewString()
		if _, err := c.exec(ctx, `INSERT INTO automation_deliveries (id, project_id, automation_id, event_id, event_type, payload,
			status, attempts, error, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, ?)`,
			id, projectID, sub.id, ev.id, ev.action, string(ev.payload), DeliveryPending, now, now, now); err != nil {
			return nil, fmt.Errorf("queue automation delivery: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

const deliveryColumns = `id, project_id, automation_id, event_id, event_type, payload, status, attempts, status_code, error,
	next_attempt_at, lease_owner, created_at, updated_at, delivered_at`

func scanDelivery(r scanner) (AutomationDelivery, error) {
	var (
		d                                AutomationDelivery
		payload                          string
		statusCode, deliveredAt          sql.NullInt64
		leaseOwner                       sql.NullString
		nextAttempt, createdAt, updateAt int64
	)
	if err := r.Scan(&d.ID, &d.ProjectID, &d.AutomationID, &d.EventID, &d.EventType, &payload, &d.Status, &d.Attempts,
		&statusCode, &d.Error, &nextAttempt, &leaseOwner, &createdAt, &updateAt, &deliveredAt); err != nil {
		return AutomationDelivery{}, err
	}
	d.Payload = json.RawMessage(payload)
	d.StatusCode, d.LeaseOwner = int(statusCode.Int64), leaseOwner.String
	d.NextAttempt, d.CreatedAt, d.UpdatedAt = fromMicros(nextAttempt), fromMicros(createdAt), fromMicros(updateAt)
	if deliveredAt.Valid {
		d.DeliveredAt = fromMicros(deliveredAt.Int64)
	}
	return d, nil
}

func getDelivery(ctx context.Context, c conn, projectID, id string) (AutomationDelivery, error) {
	d, err := scanDelivery(c.queryRow(ctx, `SELECT `+deliveryColumns+` FROM automation_deliveries WHERE project_id = ? AND id = ?`,
		projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return AutomationDelivery{}, fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	return d, err
}

// ListAutomationDeliveries returns a page of an automation's deliveries,
// newest first, and their total; status filters when not empty.
func (s *Store) ListAutomationDeliveries(ctx context.Context, projectID, automationID, status string, offset, limit int) ([]AutomationDelivery, int, error) {
	if _, err := s.GetAutomation(ctx, projectID, automationID); err != nil {
		return nil, 0, err
	}
	where := `project_id = ? AND automation_id = ?`
	args := []any{projectID, automationID}
	if status != "" {
		if !slices.Contains(DeliveryStatuses, status) {
			return nil, 0, fmt.Errorf("%w: status: %q is not one of %s", ErrInvalid, status, strings.Join(DeliveryStatuses, ", "))
		}
		where += ` AND status = ?`
		args = append(args, status)
	}
	var total int
	if err := s.conn().queryRow(ctx, `SELECT COUNT(*) FROM automation_deliveries WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count deliveries: %w", err)
	}
	rows, err := s.conn().query(ctx, `SELECT `+deliveryColumns+` FROM automation_deliveries WHERE `+where+`
		ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := []AutomationDelivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// ClaimAutomationDeliveries leases up to limit due deliveries to owner and
// counts an attempt for each; a delivery whose lease passed (its worker
// died) is due again. SKIP LOCKED keeps concurrent claimers on PostgreSQL
// apart; SQLite's write lock does the same.
func (s *Store) ClaimAutomationDeliveries(ctx context.Context, owner string, limit int, lease time.Duration) ([]AutomationDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []AutomationDelivery
	err := s.inTx(ctx, func(c conn) error {
		now := s.micros()
		query := `SELECT id FROM automation_deliveries
			WHERE status = ? AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
			ORDER BY next_attempt_at, id LIMIT ?`
		if s.postgres {
			query += ` FOR UPDATE SKIP LOCKED`
		}
		rows, err := c.query(ctx, query, DeliveryPending, now, now, limit)
		if err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close() // the scan error is the one to report
				return fmt.Errorf("claim deliveries: %w", err)
			}
			ids = append(ids, id)
		}
		_ = rows.Close() // rows.Err reports what went wrong while reading
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		if _, err := c.exec(ctx, `UPDATE automation_deliveries SET attempts = attempts + 1, lease_until = ?, lease_owner = ?,
			updated_at = ? WHERE id IN `+in, append([]any{now + lease.Microseconds(), owner, now}, ids...)...); err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		rows, err = c.query(ctx, `SELECT `+deliveryColumns+` FROM automation_deliveries WHERE id IN `+in+` ORDER BY next_attempt_at, id`, ids...)
		if err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// FinishAutomationDelivery records how an attempt of d ended; d must still
// be leased to d.LeaseOwner.
func (s *Store) FinishAutomationDelivery(ctx context.Context, d AutomationDelivery, o DeliveryOutcome) error {
	if !slices.Contains(DeliveryStatuses, o.Status) {
		return fmt.Errorf("%w: delivery status %q", ErrInvalid, o.Status)
	}
	now := s.micros()
	next := now
	if o.Status == DeliveryPending {
		next = o.Next.UnixMicro()
	}
	var delivered sql.NullInt64
	if o.Status == DeliveryDelivered {
		delivered = sql.NullInt64{Int64: now, Valid: true}
	}
	var code sql.NullInt64
	if o.StatusCode > 0 {
		code = sql.NullInt64{Int64: int64(o.StatusCode), Valid: true}
	}
	msg := o.Error
	if len(msg) > maxDeliveryError {
		msg = msg[:maxDeliveryError]
	}
	res, err := s.conn().exec(ctx, `UPDATE automation_deliveries SET status = ?, status_code = ?, error = ?, next_attempt_at = ?,
		delivered_at = ?, lease_until = NULL, lease_owner = NULL, updated_at = ?
		WHERE id = ? AND project_id = ? AND lease_owner = ? AND status = ?`,
		o.Status, code, strings.ToValidUTF8(msg, "?"), next, delivered, now, d.ID, d.ProjectID, d.LeaseOwner, DeliveryPending)
	if err != nil {
		return fmt.Errorf("finish delivery: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrDeliveryLeaseLost
	}
	return nil
}

// PruneAutomationDeliveries deletes final deliveries last changed before cutoff.
func (s *Store) PruneAutomationDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.conn().exec(ctx, `DELETE FROM automation_deliveries WHERE status <> ? AND updated_at < ?`,
		DeliveryPending, cutoff.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return res.RowsAffected()
}
