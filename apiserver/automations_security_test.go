package apiserver

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// automationSeed holds tenant b's automation and its test delivery, of the
// latest newServer.
var automationSeed struct{ automation, delivery string }

func seedAutomations(t *testing.T, cp *controlplane.Store, project string) {
	t.Helper()
	ctx := context.Background()
	box, err := secretbox.New(make([]byte, 32))
	require.NoError(t, err)
	a, _, err := cp.CreateAutomation(ctx, box, project, controlplane.NewAutomation{Name: "automation-of-b",
		Events: controlplane.AutomationEvents, URL: "https://hooks-of-b.example/in", Headers: map[string]string{"X-Token": "token-of-b"}})
	require.NoError(t, err)
	d, err := cp.EnqueueTestDelivery(ctx, project, a.ID)
	require.NoError(t, err)
	automationSeed.automation, automationSeed.delivery = a.ID, d.ID
}

// noAutomationOfB asserts an answer that names none of tenant b's
// automation objects: a success, or a creation refused for want of an
// encryption key or an allowed host.
func noAutomationOfB(t *testing.T, _ server, rec *httptest.ResponseRecorder) {
	require.Contains(t, []int{http.StatusOK, http.StatusCreated, http.StatusBadRequest, http.StatusServiceUnavailable}, rec.Code, rec.Body.String())
	for _, v := range []string{automationSeed.automation, automationSeed.delivery, "automation-of-b", "hooks-of-b", "token-of-b"} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

func automationOfB(suffix string) func(server) string {
	return func(server) string { return "/api/public/automations/" + automationSeed.automation + suffix }
}

var automationAttacks = map[string]attack{
	"GET /api/public/automations": {auth: projectKey, target: fixed("/api/public/automations"), check: noAutomationOfB},
	"POST /api/public/automations": {auth: projectKey, target: fixed("/api/public/automations"),
		body: func(server) any {
			return map[string]any{"name": "automation-of-b", "eventTypes": []string{"created"}, "url": "https://hooks.example/a"}
		}, check: noAutomationOfB},
	"GET /api/public/automations/{automationId}": {auth: projectKey, target: automationOfB(""), check: notFound},
	"PATCH /api/public/automations/{automationId}": {auth: projectKey, target: automationOfB(""),
		body: func(server) any { return map[string]any{"url": "https://attacker.example", "active": false} }, check: notFound},
	"DELETE /api/public/automations/{automationId}":         {auth: projectKey, target: automationOfB(""), check: notFound},
	"GET /api/public/automations/{automationId}/deliveries": {auth: projectKey, target: automationOfB("/deliveries"), check: notFound},
	"POST /api/public/automations/{automationId}/test":      {auth: projectKey, target: automationOfB("/test"), check: notFound},
}

func init() {
	maps.Copy(attacks, automationAttacks)
}

func TestAutomationAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, automationAttacks)
	rec := apitest.Do(t, s.h, http.MethodGet, "/api/public/automations/"+automationSeed.automation, s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "https://hooks-of-b.example/in")
	assert.Contains(t, rec.Body.String(), `"active":true`)
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/automations/"+automationSeed.automation+"/deliveries", s.b.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), automationSeed.delivery)
	assert.Contains(t, rec.Body.String(), `"totalItems":1`, "no test event was queued by a")
}
