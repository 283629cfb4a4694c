package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAutomationCRUDAndSecrets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		box := testBox(t)

		_, _, err := s.CreateAutomation(ctx, nil, pa.ID, NewAutomation{Name: "x", Events: AutomationEvents, URL: "https://h.example/x"})
		require.ErrorIs(t, err, secretbox.ErrNoEncryptionKey)
		for name, bad := range map[string]NewAutomation{
			"no name":         {Events: AutomationEvents, URL: "https://h.example"},
			"no events":       {Name: "a", URL: "https://h.example"},
			"unknown event":   {Name: "a", Events: []string{"renamed"}, URL: "https://h.example"},
			"no url":          {Name: "a", Events: AutomationEvents},
			"reserved header": {Name: "a", Events: AutomationEvents, URL: "https://h.example", Headers: map[string]string{"x-glassbox-signature": "v"}},
			"header newline":  {Name: "a", Events: AutomationEvents, URL: "https://h.example", Headers: map[string]string{"X-Token": "a\nb"}},
			"denied url": {Name: "a", Events: AutomationEvents, URL: "https://denied.example",
				CheckURL: func(string) error { return errors.New("host not allowed") }},
		} {
			_, _, err := s.CreateAutomation(ctx, box, pa.ID, bad)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}

		a, secret, err := s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: " deploy ", Events: []string{"updated", "created", "updated"},
			URL: "https://hooks.example/in", Headers: map[string]string{"authorization": "Bearer t0ken"}})
		require.NoError(t, err)
		assert.Equal(t, "deploy", a.Name)
		assert.Equal(t, []string{"created", "updated"}, a.Events)
		assert.Equal(t, []string{"Authorization"}, a.HeaderKeys)
		assert.True(t, a.Active)
		require.True(t, strings.HasPrefix(secret, signingSecretPrefix))
		assert.Equal(t, signingSecretPrefix+"..."+secret[len(secret)-4:], a.DisplaySecret)

		_, _, err = s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: "deploy", Events: AutomationEvents, URL: "https://h.example"})
		assert.ErrorIs(t, err, ErrConflict)

		// Neither the secret nor the header value is stored in clear.
		var sealedHeaders, sealedSecret string
		require.NoError(t, s.conn().queryRow(ctx, `SELECT sealed_headers, sealed_secret FROM automations WHERE id = ?`, a.ID).
			Scan(&sealedHeaders, &sealedSecret))
		assert.NotContains(t, sealedHeaders, "t0ken")
		assert.NotContains(t, sealedSecret, secret[len(signingSecretPrefix):])

		target, err := s.AutomationTarget(ctx, box, pa.ID, a.ID)
		require.NoError(t, err)
		assert.Equal(t, secret, target.SigningSecret)
		assert.Equal(t, map[string]string{"Authorization": "Bearer t0ken"}, target.Headers)

		// Other projects see nothing.
		_, err = s.GetAutomation(ctx, pb.ID, a.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.AutomationTarget(ctx, box, pb.ID, a.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.UpdateAutomation(ctx, box, pb.ID, a.ID, AutomationUpdate{Active: ptr(false)})
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteAutomation(ctx, pb.ID, a.ID), ErrNotFound)
		_, err = s.EnqueueTestDelivery(ctx, pb.ID, a.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		_, _, err = s.ListAutomationDeliveries(ctx, pb.ID, a.ID, "", 0, 10)
		assert.ErrorIs(t, err, ErrNotFound)
		list, total, err := s.ListAutomations(ctx, pb.ID, 0, 10)
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.Zero(t, total)
		list, total, err = s.ListAutomations(ctx, pa.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, []Automation{a}, list)

		// A new URL reseals the secrets for it; the signing secret stays.
		a, err = s.UpdateAutomation(ctx, box, pa.ID, a.ID, AutomationUpdate{URL: ptr("https://hooks.example/v2"), Active: ptr(false)})
		require.NoError(t, err)
		assert.False(t, a.Active)
		target, err = s.AutomationTarget(ctx, box, pa.ID, a.ID)
		require.NoError(t, err)
		assert.Equal(t, secret, target.SigningSecret)
		assert.Equal(t, "Bearer t0ken", target.Headers["Authorization"])
		// A URL changed behind the store's back opens nothing.
		_, err = s.conn().exec(ctx, `UPDATE automations SET url = 'https://evil.example' WHERE id = ?`, a.ID)
		require.NoError(t, err)
		_, err = s.AutomationTarget(ctx, box, pa.ID, a.ID)
		require.Error(t, err)
		_, err = s.conn().exec(ctx, `UPDATE automations SET url = 'https://hooks.example/v2' WHERE id = ?`, a.ID)
		require.NoError(t, err)

		a, err = s.UpdateAutomation(ctx, box, pa.ID, a.ID, AutomationUpdate{Headers: map[string]string{"X-Team": "prompts"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"X-Team"}, a.HeaderKeys)
		target, err = s.AutomationTarget(ctx, box, pa.ID, a.ID)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"X-Team": "prompts"}, target.Headers)

		d, err := s.EnqueueTestDelivery(ctx, pa.ID, a.ID)
		require.NoError(t, err)
		assert.Equal(t, EventTest, d.EventType)
		assert.Equal(t, DeliveryPending, d.Status)

		// Deleting the project switches its automations off.
		live, _, err := s.CreateAutomation(ctx, box, pb.ID, NewAutomation{Name: "live", Events: AutomationEvents, URL: "https://h.example"})
		require.NoError(t, err)
		require.NoError(t, s.DeleteProject(ctx, pb.OrganizationID, pb.ID))
		live, err = s.GetAutomation(ctx, pb.ID, live.ID)
		require.NoError(t, err)
		assert.False(t, live.Active)

		require.NoError(t, s.DeleteAutomation(ctx, pa.ID, a.ID))
		_, err = s.GetAutomation(ctx, pa.ID, a.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		var left int
		require.NoError(t, s.conn().queryRow(ctx, `SELECT COUNT(*) FROM automation_deliveries WHERE automation_id = ?`, a.ID).Scan(&left))
		assert.Zero(t, left, "the deliveries go with their automation")
	})
}

type deliveredEvent struct {
	Action string `json:"action"`
	Type   string `json:"type"`
	Prompt struct {
		Name          string          `json:"name"`
		Version       int             `json:"version"`
		Labels        []string        `json:"labels"`
		Tags          []string        `json:"tags"`
		Prompt        json.RawMessage `json:"prompt"`
		CommitMessage *string         `json:"commitMessage"`
		ProjectID     string          `json:"projectId"`
	} `json:"prompt"`
}

func eventsOf(t *testing.T, s *Store, projectID, automationID string) []deliveredEvent {
	t.Helper()
	ds, _, err := s.ListAutomationDeliveries(context.Background(), projectID, automationID, "", 0, 100)
	require.NoError(t, err)
	out := make([]deliveredEvent, 0, len(ds))
	for _, d := range ds {
		var ev deliveredEvent
		require.NoError(t, json.Unmarshal(d.Payload, &ev))
		assert.Equal(t, d.EventType, ev.Action)
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Action != out[j].Action {
			return out[i].Action < out[j].Action
		}
		return out[i].Prompt.Version < out[j].Prompt.Version
	})
	return out
}

func summary(evs []deliveredEvent) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.Action+" v"+string(rune('0'+ev.Prompt.Version))+" "+strings.Join(ev.Prompt.Labels, ","))
	}
	return out
}

func TestPromptChangesWriteTheOutbox(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		box := testBox(t)

		// Without automations nothing is written.
		_, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "greet", Prompt: json.RawMessage(`"v1"`), Labels: []string{"production"}})
		require.NoError(t, err)
		var n int
		require.NoError(t, s.conn().queryRow(ctx, `SELECT COUNT(*) FROM automation_deliveries`).Scan(&n))
		assert.Zero(t, n)

		all, _, err := s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: "all", Events: AutomationEvents, URL: "https://h.example"})
		require.NoError(t, err)
		created, _, err := s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: "created", Events: []string{EventPromptCreated}, URL: "https://h.example"})
		require.NoError(t, err)
		off, _, err := s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: "off", Events: AutomationEvents, URL: "https://h.example", Inactive: true})
		require.NoError(t, err)
		other, _, err := s.CreateAutomation(ctx, box, pb.ID, NewAutomation{Name: "other", Events: AutomationEvents, URL: "https://h.example"})
		require.NoError(t, err)

		// v2 takes latest from v1: created v2, updated v1.
		_, err = s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "greet", Prompt: json.RawMessage(`"v2"`), CommitMessage: "second"})
		require.NoError(t, err)
		evs := eventsOf(t, s, pa.ID, all.ID)
		assert.Equal(t, []string{"created v2 latest", "updated v1 production"}, summary(evs))
		assert.Equal(t, "prompt-version", evs[0].Type)
		assert.JSONEq(t, `"v2"`, string(evs[0].Prompt.Prompt))
		assert.Equal(t, "second", *evs[0].Prompt.CommitMessage)
		assert.Equal(t, pa.ID, evs[0].Prompt.ProjectID)
		assert.Equal(t, []string{"created v2 latest"}, summary(eventsOf(t, s, pa.ID, created.ID)), "only the events subscribed to")
		assert.Empty(t, eventsOf(t, s, pa.ID, off.ID), "inactive automations get nothing")
		assert.Empty(t, eventsOf(t, s, pb.ID, other.ID), "nor do other projects'")

		// Moving production to v2: both versions changed.
		_, err = s.SetPromptLabels(ctx, pa.ID, "greet", 2, []string{"production"})
		require.NoError(t, err)
		evs = eventsOf(t, s, pa.ID, all.ID)
		assert.Equal(t, []string{"created v2 latest", "updated v1 ", "updated v1 production", "updated v2 latest,production"}, summary(evs))
		// Setting a label a version already has changes nothing.
		_, err = s.SetPromptLabels(ctx, pa.ID, "greet", 2, []string{"production"})
		require.NoError(t, err)
		assert.Len(t, eventsOf(t, s, pa.ID, all.ID), 4)

		require.NoError(t, s.RemovePromptLabel(ctx, pa.ID, "greet", "production"))
		assert.Len(t, eventsOf(t, s, pa.ID, all.ID), 5)

		// New tags change every version.
		_, err = s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "greet", Prompt: json.RawMessage(`"v3"`), Tags: []string{"t"}})
		require.NoError(t, err)
		evs = eventsOf(t, s, pa.ID, all.ID)
		assert.Len(t, evs, 8, "created v3, updated v1 (tags) and v2 (tags, latest)")

		// Deleting the latest version: deleted v3 as it was, latest back on v2.
		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "greet", PromptSelector{Version: 3}))
		evs = eventsOf(t, s, pa.ID, all.ID)
		require.Len(t, evs, 10)
		var deleted []string
		for _, ev := range evs {
			if ev.Action == EventPromptDeleted {
				deleted = append(deleted, summary([]deliveredEvent{ev})...)
				assert.Equal(t, []string{"t"}, ev.Prompt.Tags)
			}
		}
		assert.Equal(t, []string{"deleted v3 latest"}, deleted)

		// A failed change writes no event: the outbox shares its transaction.
		err = s.DeletePrompts(ctx, pa.ID, "greet", PromptSelector{Version: 9})
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.SetPromptLabels(ctx, pa.ID, "greet", 1, []string{"BAD LABEL"})
		require.Error(t, err)
		assert.Len(t, eventsOf(t, s, pa.ID, all.ID), 10)

		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "greet", PromptSelector{}))
		evs = eventsOf(t, s, pa.ID, all.ID)
		assert.Len(t, evs, 12, "deleted v1 and v2")
	})
}

func TestAutomationDeliveryLeases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		s.now = clock.Now
		pa, _ := twoOrgs(t, s)
		box := testBox(t)
		a, _, err := s.CreateAutomation(ctx, box, pa.ID, NewAutomation{Name: "a", Events: AutomationEvents, URL: "https://h.example"})
		require.NoError(t, err)
		d, err := s.EnqueueTestDelivery(ctx, pa.ID, a.ID)
		require.NoError(t, err)

		got, err := s.ClaimAutomationDeliveries(ctx, "w1", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, d.ID, got[0].ID)
		assert.Equal(t, 1, got[0].Attempts)
		assert.Equal(t, "w1", got[0].LeaseOwner)
		again, err := s.ClaimAutomationDeliveries(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, again, "a leased delivery is not claimed twice")

		// The lease passes (w1 died): w2 takes it over, and w1's late
		// outcome is refused.
		clock.Advance(2 * time.Minute)
		again, err = s.ClaimAutomationDeliveries(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, again, 1)
		assert.Equal(t, 2, again[0].Attempts)
		assert.ErrorIs(t, s.FinishAutomationDelivery(ctx, got[0], DeliveryOutcome{Status: DeliveryDelivered}), ErrDeliveryLeaseLost)

		require.NoError(t, s.FinishAutomationDelivery(ctx, again[0], DeliveryOutcome{Status: DeliveryPending, StatusCode: 503,
			Error: "503 Service Unavailable", Next: clock.Now().Add(time.Hour)}))
		none, err := s.ClaimAutomationDeliveries(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, none, "not due before its next attempt")
		clock.Advance(time.Hour)
		third, err := s.ClaimAutomationDeliveries(ctx, "w3", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, third, 1)
		require.NoError(t, s.FinishAutomationDelivery(ctx, third[0], DeliveryOutcome{Status: DeliveryDelivered, StatusCode: 204}))

		list, total, err := s.ListAutomationDeliveries(ctx, pa.ID, a.ID, DeliveryDelivered, 0, 10)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		assert.Equal(t, 3, list[0].Attempts)
		assert.Equal(t, 204, list[0].StatusCode)
		assert.Equal(t, clock.Now(), list[0].DeliveredAt)
		_, _, err = s.ListAutomationDeliveries(ctx, pa.ID, a.ID, "LOST", 0, 10)
		assert.ErrorIs(t, err, ErrInvalid)

		pruned, err := s.PruneAutomationDeliveries(ctx, clock.Now().Add(time.Second))
		require.NoError(t, err)
		assert.EqualValues(t, 1, pruned)
	})
}
