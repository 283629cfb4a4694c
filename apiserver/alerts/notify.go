package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// maxNotifyBackoff caps one pause between notification attempts.
const maxNotifyBackoff = 30 * time.Second

// Notification events.
const (
	EventFiring   = "firing"
	EventResolved = "resolved"
)

// Payload is the body of a notification in the json format.
type Payload struct {
	// Event is firing, or resolved when the alert stopped firing (its
	// state then says whether to ok or to no_data).
	Event         string          `json:"event"`
	Alert         PayloadAlert    `json:"alert"`
	Project       PayloadProject  `json:"project"`
	State         string          `json:"state"`
	PreviousState string          `json:"previousState"`
	Value         *float64        `json:"value"`
	Operator      string          `json:"operator"`
	Threshold     float64         `json:"threshold"`
	Time          string          `json:"time"`
	Link          string          `json:"link"`
	Query         json.RawMessage `json:"query"`
	Denominator   json.RawMessage `json:"denominator"`
	Window        string          `json:"window"`
}

// PayloadAlert names the alert.
type PayloadAlert struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PayloadProject names the project.
type PayloadProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type notifier struct {
	cfg       Config
	client    *http.Client // connects only where policy allows
	policy    egress.Policy
	publicURL string
}

// link is the alert's page in the UI: absolute when the server knows its
// public URL, else its path.
func link(publicURL, projectID, alertID string) string {
	return strings.TrimRight(publicURL, "/") + "/project/" + url.PathEscape(projectID) + "/alerts/" + url.PathEscape(alertID)
}

// payload is the json format's body.
func (n notifier) payload(a controlplane.Alert, p controlplane.Project, tr controlplane.AlertTransition) Payload {
	event := EventFiring
	if tr.To != controlplane.AlertFiring {
		event = EventResolved
	}
	return Payload{Event: event, Alert: PayloadAlert{ID: a.ID, Name: a.Name}, Project: PayloadProject{ID: p.ID, Name: p.Name},
		State: tr.To, PreviousState: tr.From, Value: tr.Value, Operator: a.Operator, Threshold: a.Threshold,
		Time: tr.At.UTC().Format(time.RFC3339Nano), Link: link(n.publicURL, a.ProjectID, a.ID), Query: a.Query,
		Denominator: a.Denominator, Window: formatDuration(a.Window)}
}

// body is the request body in the alert's format.
func (n notifier) body(a controlplane.Alert, p controlplane.Project, tr controlplane.AlertTransition) ([]byte, error) {
	pl := n.payload(a, p, tr)
	if a.TargetFormat != "slack" {
		return json.Marshal(pl)
	}
	return json.Marshal(slackMessage(pl))
}

// slackMessage is Slack's incoming-webhook shape: text for notifications
// and clients without blocks, blocks for the message itself.
func slackMessage(p Payload) map[string]any {
	value := "no data"
	if p.Value != nil {
		value = strconv.FormatFloat(*p.Value, 'g', 6, 64)
	}
	head := fmt.Sprintf(":rotating_light: Alert firing: %s", p.Alert.Name)
	if p.Event == EventResolved {
		head = fmt.Sprintf(":white_check_mark: Alert resolved: %s", p.Alert.Name)
	}
	name := p.Project.Name
	if name == "" {
		name = p.Project.ID
	}
	detail := fmt.Sprintf("Value *%s* (threshold %s %s over %s) in project *%s*; state %s since %s.",
		value, p.Operator, strconv.FormatFloat(p.Threshold, 'g', 6, 64), p.Window, slackEscape(name), p.State, p.Time)
	text := head + ". " + detail
	section := "*" + slackEscape(head) + "*\n" + detail
	if u, err := url.Parse(p.Link); err == nil && u.IsAbs() {
		section += "\n<" + p.Link + "|Open in Glassbox>"
	}
	return map[string]any{
		"text": text,
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": section}},
			map[string]any{"type": "context", "elements": []any{
				map[string]any{"type": "mrkdwn", "text": "alert " + p.Alert.ID + " · previous state " + p.PreviousState},
			}},
		},
	}
}

// slackEscape escapes the characters Slack's mrkdwn treats as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// errFinal marks a failure that another attempt would repeat.
type errFinal struct{ err error }

func (e errFinal) Error() string { return e.err.Error() }

// send POSTs the notification, retrying network errors, 5xx and 429 with
// a doubling pause. A URL the egress policy refuses now is not tried.
func (n notifier) send(ctx context.Context, a controlplane.Alert, p controlplane.Project, tr controlplane.AlertTransition) error {
	if err := n.policy.CheckURL(a.TargetURL); err != nil {
		return err
	}
	body, err := n.body(a, p, tr)
	if err != nil {
		return err
	}
	pause := n.cfg.NotifyBackoff
	for attempt := 1; ; attempt++ {
		err = n.post(ctx, a.TargetURL, body)
		var final errFinal
		if err == nil || errors.As(err, &final) || errors.Is(err, egress.ErrDenied) || attempt >= n.cfg.NotifyAttempts {
			if err != nil && attempt > 1 {
				return fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, maxNotifyBackoff)
	}
}

func (n notifier) post(ctx context.Context, target string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.NotifyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return errFinal{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Glassbox-Alerts")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return errFinal{fmt.Errorf("webhook answered %s", resp.Status)}
}
