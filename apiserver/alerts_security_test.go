package apiserver

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// alertSeed holds tenant b's alert of the latest newServer.
var alertSeed struct{ alert string }

func seedAlerts(t *testing.T, cp *controlplane.Store, project string) {
	t.Helper()
	a, err := cp.CreateAlert(context.Background(), project, controlplane.AlertRule{Name: "alert-of-b",
		Query:    json.RawMessage(`{"view":"observations","metric":{"measure":"count","aggregation":"count"},"filters":[]}`),
		Operator: ">", Threshold: 1, Window: time.Hour, Interval: time.Minute, For: 1,
		TargetURL: "https://hooks.example.com/secret-of-b", TargetFormat: "json"})
	require.NoError(t, err)
	alertSeed.alert = a.ID
}

func noAlertOfB(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
	require.Less(t, rec.Code, 300, rec.Body.String())
	for _, v := range []string{alertSeed.alert, "alert-of-b", "secret-of-b"} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

func alertOfB(suffix string) func(server) string {
	return func(server) string { return "/api/public/alerts/" + alertSeed.alert + suffix }
}

var alertAttacks = map[string]attack{
	"GET /api/public/alerts": {auth: projectKey, target: fixed("/api/public/alerts"), check: noAlertOfB},
	// Webhooks are off in the matrix's server: the target is refused, and
	// nothing of b's is named.
	"POST /api/public/alerts": {auth: projectKey, target: fixed("/api/public/alerts"),
		body: func(server) any {
			return map[string]any{"name": "mine", "query": map[string]any{"view": "observations",
				"metric": map[string]any{"measure": "count", "aggregation": "count"}}, "operator": ">", "threshold": 1, "window": "1h",
				"target": map[string]any{"url": "https://hooks.example.com/x"}}
		},
		check: func(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
			assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), "webhook_allowed_hosts")
			assert.NotContains(t, rec.Body.String(), "alert-of-b")
		}},
	"GET /api/public/alerts/{alertId}":         {auth: projectKey, target: alertOfB(""), check: notFound},
	"PATCH /api/public/alerts/{alertId}":       {auth: projectKey, target: alertOfB(""), body: func(server) any { return map[string]any{"paused": true} }, check: notFound},
	"DELETE /api/public/alerts/{alertId}":      {auth: projectKey, target: alertOfB(""), check: notFound},
	"GET /api/public/alerts/{alertId}/history": {auth: projectKey, target: alertOfB("/history"), check: notFound},
}

func init() {
	maps.Copy(attacks, alertAttacks)
}

func TestAlertAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, alertAttacks)
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/alerts/"+alertSeed.alert, s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "alert-of-b")
	assert.Contains(t, rec.Body.String(), `"paused":false`)
}
