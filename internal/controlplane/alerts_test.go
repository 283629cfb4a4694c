package controlplane

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func alertRule() AlertRule {
	return AlertRule{Name: " p95 latency ", Query: json.RawMessage(`{"view":"observations","metric":{"measure":"latency","aggregation":"p95"}}`),
		Operator: ">", Threshold: 1000, Window: 5 * time.Minute, Interval: time.Minute, For: 2,
		TargetURL: "http://127.0.0.1/hook", TargetFormat: "json"}
}

func TestAlertRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		for _, p := range []string{"p1", "p2"} {
			_, err = s.CreateProject(ctx, "org", NewProject{ID: p, Name: p})
			require.NoError(t, err)
		}
		a, err := s.CreateAlert(ctx, "p1", alertRule())
		require.NoError(t, err)
		assert.Equal(t, "p95 latency", a.Name)
		assert.Equal(t, AlertNoData, a.State)
		assert.Nil(t, a.Denominator)
		assert.Nil(t, a.LastValue)
		assert.True(t, a.LastEvaluatedAt.IsZero())
		assert.Equal(t, 5*time.Minute, a.Window)

		for name, edit := range map[string]func(*AlertRule){
			"operator":  func(r *AlertRule) { r.Operator = "==" },
			"window":    func(r *AlertRule) { r.Window = 25 * time.Hour },
			"interval":  func(r *AlertRule) { r.Interval = time.Second },
			"for":       func(r *AlertRule) { r.For = 0 },
			"format":    func(r *AlertRule) { r.TargetFormat = "xml" },
			"url":       func(r *AlertRule) { r.TargetURL = "" },
			"query":     func(r *AlertRule) { r.Query = json.RawMessage(`[]`) },
			"ratio":     func(r *AlertRule) { r.Denominator = json.RawMessage(`3`) },
			"name":      func(r *AlertRule) { r.Name = " " },
			"fractions": func(r *AlertRule) { r.Window = 90*time.Second + time.Millisecond },
		} {
			r := alertRule()
			edit(&r)
			_, err := s.CreateAlert(ctx, "p1", r)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}

		_, err = s.GetAlert(ctx, "p2", a.ID)
		assert.ErrorIs(t, err, ErrNotFound, "another project's alert")
		_, err = s.UpdateAlert(ctx, "p2", a.ID, func(*AlertRule) error { return nil })
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteAlert(ctx, "p2", a.ID), ErrNotFound)
		_, _, err = s.ListAlertHistory(ctx, "p2", a.ID, 0, 10)
		assert.ErrorIs(t, err, ErrNotFound)

		b, err := s.UpdateAlert(ctx, "p1", a.ID, func(r *AlertRule) error {
			r.Denominator = json.RawMessage(`{"view":"observations","metric":{"measure":"count","aggregation":"count"}}`)
			r.Paused = true
			return nil
		})
		require.NoError(t, err)
		assert.True(t, b.Paused)
		assert.JSONEq(t, `{"view":"observations","metric":{"measure":"count","aggregation":"count"}}`, string(b.Denominator))
		_, err = s.UpdateAlert(ctx, "p1", a.ID, func(r *AlertRule) error { r.Threshold, r.For = 1, -1; return nil })
		assert.ErrorIs(t, err, ErrInvalid)

		list, total, err := s.ListAlerts(ctx, "p1", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, a.ID, list[0].ID)
		list, total, err = s.ListAlerts(ctx, "p2", 0, 10)
		require.NoError(t, err)
		assert.Zero(t, total)
		assert.Empty(t, list)

		require.NoError(t, s.DeleteAlert(ctx, "p1", a.ID))
		_, err = s.GetAlert(ctx, "p1", a.ID)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestAlertEvaluationStatesAndLeases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		_, err = s.CreateProject(ctx, "org", NewProject{ID: "p1", Name: "p1"})
		require.NoError(t, err)
		a, err := s.CreateAlert(ctx, "p1", alertRule())
		require.NoError(t, err)
		paused := alertRule()
		paused.Paused = true
		_, err = s.CreateAlert(ctx, "p1", paused)
		require.NoError(t, err)

		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		claimed, err := s.ClaimDueAlerts(ctx, "server-a", now, time.Minute, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 1, "a new alert is due at once; a paused one never")
		assert.Equal(t, a.ID, claimed[0].ID)
		again, err := s.ClaimDueAlerts(ctx, "server-b", now.Add(30*time.Second), time.Minute, 10)
		require.NoError(t, err)
		assert.Empty(t, again, "leased to server-a")

		value := func(v float64) *float64 { return &v }
		record := func(owner string, at time.Time, v *float64) (Alert, *AlertTransition) {
			t.Helper()
			a, tr, err := s.RecordAlertEvaluation(ctx, owner, "p1", a.ID, AlertEvaluation{At: at, Value: v})
			require.NoError(t, err)
			return a, tr
		}
		_, _, err = s.RecordAlertEvaluation(ctx, "server-b", "p1", a.ID, AlertEvaluation{At: now, Value: value(1)})
		assert.ErrorIs(t, err, ErrAlertLeaseLost, "only the lease's owner records")
		_, _, err = s.RecordAlertEvaluation(ctx, "", "p1", a.ID, AlertEvaluation{At: now, Value: value(1)})
		assert.ErrorIs(t, err, ErrInvalid)

		got, tr := record("server-a", now, value(1500))
		assert.Equal(t, AlertPending, got.State, "one breach of two")
		assert.Equal(t, 1, got.Breaches)
		require.NotNil(t, tr)
		assert.Equal(t, AlertNoData, tr.From)
		assert.Equal(t, now.Add(time.Minute), got.NextEvalAt)
		_, _, err = s.RecordAlertEvaluation(ctx, "server-a", "p1", a.ID, AlertEvaluation{At: now, Value: value(1)})
		assert.ErrorIs(t, err, ErrAlertLeaseLost, "the lease was released")

		claimed, err = s.ClaimDueAlerts(ctx, "server-b", now.Add(30*time.Second), time.Minute, 10)
		require.NoError(t, err)
		assert.Empty(t, claimed, "not due before its interval")
		now = now.Add(time.Minute)
		claimed, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		got, tr = record("server-b", now, value(2000))
		assert.Equal(t, AlertFiring, got.State)
		require.NotNil(t, tr)
		assert.Equal(t, AlertPending, tr.From)
		assert.Equal(t, 2000.0, *tr.Value)
		assert.Equal(t, now, got.StateSince)

		now = now.Add(time.Minute)
		_, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		got, tr = record("server-b", now, value(3000))
		assert.Equal(t, AlertFiring, got.State)
		assert.Nil(t, tr, "still firing: no transition")
		assert.Equal(t, now.Add(-time.Minute), got.StateSince)

		// A failed query keeps the state.
		now = now.Add(time.Minute)
		_, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		got, tr, err = s.RecordAlertEvaluation(ctx, "server-b", "p1", a.ID, AlertEvaluation{At: now, Error: "timeout"})
		require.NoError(t, err)
		assert.Nil(t, tr)
		assert.Equal(t, AlertFiring, got.State)
		assert.Equal(t, "timeout", got.LastError)
		assert.Equal(t, 3000.0, *got.LastValue)

		// An expired lease is claimed by another server.
		now = now.Add(time.Minute)
		_, err = s.ClaimDueAlerts(ctx, "server-a", now, time.Minute, 10)
		require.NoError(t, err)
		now = now.Add(2 * time.Minute)
		claimed, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		got, tr = record("server-b", now, value(10))
		assert.Equal(t, AlertOK, got.State)
		require.NotNil(t, tr)
		assert.Empty(t, got.LastError)
		require.NoError(t, s.SetAlertNotification(ctx, "p1", tr.ID, "sent"))

		now = now.Add(time.Minute)
		_, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		got, _ = record("server-b", now, nil)
		assert.Equal(t, AlertNoData, got.State)
		assert.Nil(t, got.LastValue)

		history, total, err := s.ListAlertHistory(ctx, "p1", a.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 4, total)
		var path []string
		for _, h := range history {
			path = append(path, h.From+">"+h.To)
		}
		assert.Equal(t, []string{"ok>no_data", "firing>ok", "pending>firing", "no_data>pending"}, path, "newest first")
		assert.Equal(t, "sent", history[1].Notification)
		assert.Nil(t, history[0].Value)

		// Deleting the project's row is not done; a soft-deleted project's
		// alerts are not evaluated.
		now = now.Add(time.Minute)
		require.NoError(t, s.DeleteProject(ctx, "org", "p1"))
		claimed, err = s.ClaimDueAlerts(ctx, "server-b", now, time.Minute, 10)
		require.NoError(t, err)
		assert.Empty(t, claimed)
	})
}
