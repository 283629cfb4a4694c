package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// TestTiersStartWhileClickHouseIsDown starts the shipped all-in-one, writer
// and standalone API server configurations with ClickHouse stopped. Each
// starts; the collectors accept and queue spans; the API serves the control
// plane, answers 503 with a message on ClickHouse routes and its health
// names ClickHouse. Once ClickHouse starts, every accepted span is stored
// and the API reads it.
func TestTiersStartWhileClickHouseIsDown(t *testing.T) {
	script := requireEnv(t, "GLASSBOX_CLICKHOUSE_SCRIPT")
	dir := filepath.Join(t.TempDir(), "clickhouse")
	tcp, httpPort := freeport.Port(t), freeport.Port(t)
	dsn := fmt.Sprintf("clickhouse://127.0.0.1:%d", tcp)
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })

	allInOneDB := chstore.Config{DSN: dsn, Database: "down_allinone", QueryTimeout: 10 * time.Second}
	a := startAllInOneOn(t, allInOneDB, http.StatusServiceUnavailable)
	auth := basic(a.PublicKey, a.SecretKey)
	health := a.request(t, http.MethodGet, "/api/public/health", "", nil, http.StatusServiceUnavailable)
	assert.Equal(t, "ClickHouse is unreachable", health["status"])
	a.request(t, http.MethodGet, "/api/public/projects", auth, nil, http.StatusOK)
	a.request(t, http.MethodPost, "/api/public/v2/prompts", auth,
		map[string]any{"name": "while-down", "type": "text", "prompt": "hello {{name}}"}, http.StatusCreated)
	down := a.request(t, http.MethodGet, "/api/public/traces", auth, nil, http.StatusServiceUnavailable)
	assert.Contains(t, down["message"], "ClickHouse is unavailable")

	const queued = "0af7651916cd43dd8448eb211c80319c"
	resp, body := postJSON(t, a.BaseURL+"/api/public/otel/v1/traces", auth, generation(queued, "gpt-4o", "default"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	writerDB := chstore.Config{DSN: dsn, Database: "down_writer", QueryTimeout: 10 * time.Second}
	w := startWriter(t, writerDB)
	routed := pcommon.TraceID{0xd0, 0x4e}
	require.NoError(t, w.export(t, w.gateway(t), routed))

	api := startAPIServer(t, allInOneDB, a.PublicKey, a.SecretKey)
	api.waitHealth(t, http.StatusServiceUnavailable)
	resp, body = get(t, api.BaseURL+"/api/public/projects", auth)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = get(t, api.BaseURL+"/api/public/observations", auth)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)

	out, err := exec.Command(script, "start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort)).CombinedOutput()
	require.NoError(t, err, "%s", out)

	tr := waitTrace(t, newStoreOn(t, allInOneDB), "proj-e2e", queued, 1)
	assert.Equal(t, "gpt-4o", tr.Observations[0].Model)
	waitTrace(t, newStoreOn(t, writerDB), "proj-w", routed.String(), 1)
	a.waitHealth(t, http.StatusOK)
	got := a.request(t, http.MethodGet, "/api/public/traces/"+queued, auth, nil, http.StatusOK)
	assert.Equal(t, queued, got["id"])
	api.waitHealth(t, http.StatusOK)
	resp, body = get(t, api.BaseURL+"/api/public/traces/"+queued, auth)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
}

// startAPIServer runs bin/glassbox-api with configs/api-server.yaml on its
// own SQLite control plane, with one project key.
func startAPIServer(t *testing.T, ch chstore.Config, publicKey, secretKey string) *collector {
	t.Helper()
	bin := filepath.Join(filepath.Dir(requireEnv(t, "GLASSBOX_BIN")), "glassbox-api")
	dataDir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
	c := &collector{BaseURL: "http://" + listen, log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, "--config", repoPath(t, "configs/api-server.yaml"))
	c.cmd.Env = append(os.Environ(),
		"GLASSBOX_API_LISTEN="+listen, "GLASSBOX_DATA_DIR="+dataDir,
		"GLASSBOX_CONTROL_PLANE_DSN=sqlite://"+filepath.Join(dataDir, "cp.db"),
		"GLASSBOX_CLICKHOUSE_DSN="+ch.DSN, "GLASSBOX_CLICKHOUSE_DATABASE="+ch.Database,
		"GLASSBOX_INIT_ORG_ID=org-e2e", "GLASSBOX_INIT_PROJECT_ID=proj-e2e",
		"GLASSBOX_INIT_PUBLIC_KEY="+publicKey, "GLASSBOX_INIT_SECRET_KEY="+secretKey,
	)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

func get(t *testing.T, url, auth string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b [4096]byte
	n, _ := resp.Body.Read(b[:])
	return resp, string(b[:n])
}
