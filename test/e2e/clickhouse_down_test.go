package e2e

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// TestTiersStartWhileClickHouseIsDown starts every shipped configuration
// with ClickHouse stopped: the all-in-one, the fan-out, the chain of sidecar,
// gateway and writer, and the standalone API server. Each starts; the
// collectors accept and queue spans (the fan-out's second backend gets its
// copy at once); the API serves the control plane, answers 503 with a
// message on ClickHouse routes and its health names ClickHouse. Once
// ClickHouse starts, every accepted span is stored and the API reads it.
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

	fanOutDB := chstore.Config{DSN: dsn, Database: "down_fanout", QueryTimeout: 10 * time.Second}
	backend := newOTLPBackend(t)
	f := newAllInOne(t, fanOutDB)
	f.config = "configs/fan-out.yaml"
	f.env["GLASSBOX_FANOUT_URL"] = backend.URL
	f.run(t, http.StatusServiceUnavailable)
	const fannedOut = "1af7651916cd43dd8448eb211c80319c"
	resp, body = postJSON(t, f.BaseURL+"/api/public/otel/v1/traces", auth, generation(fannedOut, "gpt-4o", "default"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	backend.waitTrace(t, fannedOut)

	writerDB := chstore.Config{DSN: dsn, Database: "down_writer", QueryTimeout: 10 * time.Second}
	w := startWriter(t, writerDB)
	routed := pcommon.TraceID{0xd0, 0x4e}
	require.NoError(t, w.export(t, w.gateway(t), routed))
	// The gateway verifies keys against the all-in-one's control plane.
	gateway := startGateway(t, w, "sqlite://"+filepath.Join(a.DataDir, "glassbox.db"))
	sidecar := startSidecar(t, gateway.BaseURL, a.PublicKey, a.SecretKey, "proj-e2e")
	const chained = "2af7651916cd43dd8448eb211c80319c"
	resp, body = postJSON(t, sidecar.BaseURL+"/api/public/otel/v1/traces", auth, generation(chained, "gpt-4o", "default"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	api := startAPIServer(t, allInOneDB, a.PublicKey, a.SecretKey)
	api.waitHealth(t, http.StatusServiceUnavailable)
	resp, body = get(t, api.BaseURL+"/api/public/projects", auth)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = get(t, api.BaseURL+"/api/public/observations", auth)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)

	out, err := exec.Command(script, "start", dir, fmt.Sprint(tcp), fmt.Sprint(httpPort)).CombinedOutput()
	require.NoError(t, err, "%s", out)

	tr := waitTrace(t, chtest.StoreOn(t, allInOneDB), "proj-e2e", queued, 1)
	assert.Equal(t, "gpt-4o", tr.Observations[0].Model)
	waitTrace(t, chtest.StoreOn(t, writerDB), "proj-w", routed.String(), 1)
	chain := waitTrace(t, chtest.StoreOn(t, writerDB), "proj-e2e", chained, 1)
	assert.NotEmpty(t, chain.Observations[0].CostDetails, "priced on the way")
	waitTrace(t, chtest.StoreOn(t, fanOutDB), "proj-e2e", fannedOut, 1)
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
	return startProcess(t, bin, "configs/api-server.yaml", "http://"+listen,
		"GLASSBOX_API_LISTEN="+listen, "GLASSBOX_DATA_DIR="+dataDir,
		"GLASSBOX_CONTROL_PLANE_DSN=sqlite://"+filepath.Join(dataDir, "cp.db"),
		"GLASSBOX_CLICKHOUSE_DSN="+ch.DSN, "GLASSBOX_CLICKHOUSE_DATABASE="+ch.Database,
		"GLASSBOX_INIT_ORG_ID=org-e2e", "GLASSBOX_INIT_PROJECT_ID=proj-e2e",
		"GLASSBOX_INIT_PUBLIC_KEY="+publicKey, "GLASSBOX_INIT_SECRET_KEY="+secretKey,
	)
}

// startGateway runs configs/gateway.yaml in front of the writer w, verifying
// keys against the control plane at controlPlane.
func startGateway(t *testing.T, w *writerTier, controlPlane string) *collector {
	t.Helper()
	cert, key := w.gatewayCA.issue(t, "gateway", false)
	listen, health := freeport.Addr(t), freeport.Addr(t)
	c := startProcess(t, requireEnv(t, "GLASSBOX_BIN"), "configs/gateway.yaml", "http://"+listen,
		"GLASSBOX_LISTEN="+listen, "GLASSBOX_HEALTH_LISTEN="+health,
		"GLASSBOX_METRICS_HOST=127.0.0.1", fmt.Sprintf("GLASSBOX_METRICS_PORT=%d", freeport.Port(t)),
		"GLASSBOX_CONTROL_PLANE_DSN="+controlPlane, "GLASSBOX_WRITERS=["+w.listen+"]",
		"GLASSBOX_WRITER_TLS_CA="+w.writerCA.file(), "GLASSBOX_GATEWAY_TLS_CERT="+cert, "GLASSBOX_GATEWAY_TLS_KEY="+key,
	)
	c.waitServing(t, http.MethodPost, "/api/public/otel/v1/traces", "", http.StatusUnauthorized)
	return c
}

// startSidecar runs configs/sidecar.yaml with one project key, forwarding
// to the gateway at gatewayURL with the same key.
func startSidecar(t *testing.T, gatewayURL, publicKey, secretKey, projectID string) *collector {
	t.Helper()
	listen := freeport.Addr(t)
	auth := basic(publicKey, secretKey)
	c := startProcess(t, requireEnv(t, "GLASSBOX_BIN"), "configs/sidecar.yaml", "http://"+listen,
		"GLASSBOX_LISTEN="+listen, "GLASSBOX_DATA_DIR="+t.TempDir(),
		fmt.Sprintf("GLASSBOX_METRICS_PORT=%d", freeport.Port(t)),
		"GLASSBOX_PUBLIC_KEY="+publicKey, "GLASSBOX_SECRET_KEY="+secretKey, "GLASSBOX_PROJECT_ID="+projectID,
		"GLASSBOX_GATEWAY_URL="+gatewayURL+"/api/public/otel", "GLASSBOX_BASIC_AUTH="+strings.TrimPrefix(auth, "Basic "),
	)
	c.waitServing(t, http.MethodPost, "/api/public/otel/v1/traces", auth, http.StatusOK)
	return c
}

// otlpBackend is a second OTLP/HTTP backend for the fan-out: it records the
// trace ids it receives.
type otlpBackend struct {
	*httptest.Server
	mu     sync.Mutex
	traces map[string]bool
}

func newOTLPBackend(t *testing.T) *otlpBackend {
	t.Helper()
	b := &otlpBackend{traces: map[string]bool{}}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		req := ptraceotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(raw)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		for _, rs := range req.Traces().ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					b.traces[span.TraceID().String()] = true
				}
			}
		}
		b.mu.Unlock()
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *otlpBackend) waitTrace(t *testing.T, traceID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.traces[traceID]
	}, 30*time.Second, 100*time.Millisecond, "the second backend did not receive trace %s", traceID)
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
