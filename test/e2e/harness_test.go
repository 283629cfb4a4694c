// Package e2e runs the built collector (bin/glassbox) as a process against a
// real ClickHouse and drives it with real clients: the OTel Go SDK exporter,
// the official Langfuse JS SDK and plain HTTP.
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
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// requireEnv returns an environment variable that `make test` sets; without
// it the test is skipped, or fails under CI=true.
func requireEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI runs every end-to-end test (use make test)", name)
		}
		t.Skipf("%s is not set; run through make test", name)
	}
	return v
}

// project is a project with its static key pair.
type project struct {
	ID, PublicKey, SecretKey string
}

func (p project) basicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(p.PublicKey+":"+p.SecretKey))
}

var (
	projectA = project{ID: "proj-a", PublicKey: "pk-lf-e2e-aaaaaaaaaaaaaaaa", SecretKey: "sk-lf-e2e-aaaaaaaaaaaaaaaa-0123456789abc"}
	projectB = project{ID: "proj-b", PublicKey: "pk-lf-e2e-bbbbbbbbbbbbbbbb", SecretKey: "sk-lf-e2e-bbbbbbbbbbbbbbbb-0123456789abc"}
)

// collectorConfig is a pipeline with static keys for two projects, so that
// ingestion is tested without the control plane.
const collectorConfig = `
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
receivers:
  glassbox_ingest:
    http:
      endpoint: 127.0.0.1:{{.Port}}
    authenticator: glassbox_auth
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 1024
exporters:
  glassbox_clickhouse:
    storage: glassbox_storage
    disk_queue:
      directory: {{.QueueDir}}
      flush_interval: 100ms
    retry_on_failure:
      enabled: true
      initial_interval: 500ms
      max_interval: 2s
      max_elapsed_time: 0s
service:
  extensions: [glassbox_storage, glassbox_auth]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [glassbox_ingest]
      processors: [memory_limiter]
      exporters: [glassbox_clickhouse]
`

// collector is a running bin/glassbox.
type collector struct {
	BaseURL string
	cmd     *exec.Cmd
	log     *lockedBuffer
	done    chan struct{}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startCollector runs bin/glassbox with the static-key pipeline writing to
// the given ClickHouse database, and waits until it accepts requests.
func startCollector(t *testing.T, dsn, database string, queueDir string) *collector {
	t.Helper()
	bin := requireEnv(t, "GLASSBOX_BIN")
	port := freeport.Port(t)
	var cfg bytes.Buffer
	require.NoError(t, template.Must(template.New("cfg").Parse(collectorConfig)).Execute(&cfg, map[string]any{
		"Projects": []project{projectA, projectB},
		"Port":     port, "DSN": dsn, "Database": database, "QueueDir": queueDir,
	}))
	cfgPath := filepath.Join(t.TempDir(), "collector.yaml")
	require.NoError(t, os.WriteFile(cfgPath, cfg.Bytes(), 0o600))
	c := &collector{BaseURL: fmt.Sprintf("http://127.0.0.1:%d", port), log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	c.waitReady(t)
	return c
}

// startProcess runs bin with --config config (relative to the repository)
// and env added to the test's environment; base is the URL the process
// serves. It is stopped when the test ends.
func startProcess(t *testing.T, bin, config, base string, env ...string) *collector {
	t.Helper()
	c := &collector{BaseURL: base, log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, "--config", repoPath(t, config))
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// waitServing polls path until it answers status.
func (c *collector) waitServing(t *testing.T, method, path, auth string, status int) {
	t.Helper()
	require.Eventually(t, func() bool {
		select {
		case <-c.done:
			return true
		default:
		}
		req, err := http.NewRequest(method, c.BaseURL+path, strings.NewReader("{}"))
		if err != nil {
			return false
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == status
	}, 60*time.Second, 100*time.Millisecond, "%s %s did not answer %d:\n%s", method, path, status, c.log)
	select {
	case <-c.done:
		t.Fatalf("process exited early:\n%s", c.log.String())
	default:
	}
}

func (c *collector) waitReady(t *testing.T) {
	t.Helper()
	c.waitHealth(t, http.StatusOK)
}

// waitHealth polls the health route until it answers with status.
func (c *collector) waitHealth(t *testing.T, status int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			t.Fatalf("collector exited early:\n%s", c.log.String())
		default:
		}
		resp, err := http.Get(c.BaseURL + "/api/public/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("health did not answer %d within 60s:\n%s", status, c.log.String())
}

// stop shuts the collector down gracefully, so its queue is flushed or kept.
func (c *collector) stop(t *testing.T) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("collector did not stop within 30s:\n%s", c.log.String())
	}
	if t.Failed() {
		t.Logf("collector log:\n%s", c.log.String())
	}
}

// waitTrace polls until the trace has want observations in the project.
func waitTrace(t *testing.T, store *chstore.Store, projectID, traceID string, want int) chstore.TraceWithObservations {
	t.Helper()
	var last chstore.TraceWithObservations
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		tr, err := store.GetTrace(context.Background(), projectID, traceID)
		if err == nil {
			last = tr
			if len(tr.Observations) >= want {
				return tr
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("trace %s of %s has %d observations after 60s, want %d", traceID, projectID, len(last.Observations), want)
	return last
}

// newStore opens a fresh, migrated test database.
func newStore(t *testing.T) (*chstore.Store, string) {
	t.Helper()
	return chtest.Store(t), chtest.DSN(t)
}

func postJSON(t *testing.T, url, auth, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.String()
}
