package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// stockReceiverConfig ingests through the stock otlp receiver with
// glassbox_auth, as the README shows for pipelines that do not use
// glassbox_ingest; glassbox_project stamps the key's project.
const stockReceiverConfig = `
extensions:
  glassbox_storage:
    dsn: {{.DSN}}
    database: {{.Database}}
  glassbox_auth:
    keys:
{{- range .Projects}}
      - public_key: {{.PublicKey}}
        secret: {{.SecretKey}}
        project_id: {{.ID}}
{{- end}}
  health_check:
    endpoint: 127.0.0.1:{{.HealthPort}}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{{.Port}}
        auth:
          authenticator: glassbox_auth
processors:
  glassbox_project:
exporters:
  glassbox_clickhouse:
    storage: glassbox_storage
service:
  extensions: [glassbox_storage, glassbox_auth, health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [glassbox_project]
      exporters: [glassbox_clickhouse]
`

// On a stock receiver a client cannot pick its project either: the span
// names project b in its resource, the key is project a's, and it lands in a.
func TestStockReceiverStampsTheKeysProject(t *testing.T) {
	bin := requireEnv(t, "GLASSBOX_BIN")
	store, dsn := newStore(t)
	port, healthPort := freeport.Port(t), freeport.Port(t)
	var cfg bytes.Buffer
	require.NoError(t, template.Must(template.New("cfg").Parse(stockReceiverConfig)).Execute(&cfg, map[string]any{
		"Projects": []project{projectA, projectB}, "Port": port, "HealthPort": healthPort,
		"DSN": dsn, "Database": store.Database(),
	}))
	cfgPath := filepath.Join(t.TempDir(), "collector.yaml")
	require.NoError(t, os.WriteFile(cfgPath, cfg.Bytes(), 0o600))
	c := &collector{BaseURL: fmt.Sprintf("http://127.0.0.1:%d", healthPort), log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	require.Eventually(t, func() bool {
		resp, err := http.Get(c.BaseURL + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "collector not ready:\n%s", c.log)

	traceID := "5a11ed0000000000000000000000beef"
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"glassbox.project.id","value":{"stringValue":"proj-b"}}]},
		"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"00000000000000a1","name":"spoofed",
		"startTimeUnixNano":"1714564800000000000","endTimeUnixNano":"1714564801000000000"}]}]}]}`
	send := func(auth string) int {
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/traces", port), strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, send(""), "the stock receiver authenticates through glassbox_auth")
	require.Equal(t, http.StatusOK, send("Basic "+base64.StdEncoding.EncodeToString([]byte(projectA.PublicKey+":"+projectA.SecretKey))))

	tr := waitTrace(t, store, projectA.ID, traceID, 1)
	assert.Equal(t, "spoofed", tr.Observations[0].Name)
	_, err := store.GetTrace(context.Background(), projectB.ID, traceID)
	assert.ErrorIs(t, err, chstore.ErrNotFound, "the project the client named gets nothing")
}
