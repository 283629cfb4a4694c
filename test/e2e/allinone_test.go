package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// allInOne runs bin/glassbox with the shipped configs/all-in-one.yaml, set up
// only through the environment variables the README documents.
type allInOne struct {
	*collector
	DataDir                 string
	PublicKey, SecretKey    string
	UserEmail, UserPassword string // the first owner, who signs in to the UI
	config                  string // the shipped file it runs, relative to the repository
	env                     map[string]string
}

func startAllInOne(t *testing.T) *allInOne {
	t.Helper()
	return startAllInOneOn(t, chtest.Config(t), http.StatusOK)
}

// startAllInOneOn runs it on the given ClickHouse and waits until its health
// route answers health (503 while ClickHouse is down).
func startAllInOneOn(t *testing.T, ch chstore.Config, health int) *allInOne {
	t.Helper()
	a := newAllInOne(t, ch)
	a.run(t, health)
	return a
}

// newAllInOne describes an all-in-one deployment on ch with its own data
// directory, ports and first project, not yet started.
func newAllInOne(t *testing.T, ch chstore.Config) *allInOne {
	t.Helper()
	requireEnv(t, "GLASSBOX_BIN")
	dataDir := t.TempDir()
	port := freeport.Port(t)
	a := &allInOne{PublicKey: "pk-lf-allinone-0123456789", SecretKey: "sk-lf-allinone-0123456789-0123456789abcd",
		UserEmail: "admin@glassbox.local", UserPassword: "first owner password", DataDir: dataDir,
		config: "configs/all-in-one.yaml"}
	a.env = map[string]string{
		"GLASSBOX_LISTEN":              fmt.Sprintf("127.0.0.1:%d", port),
		"GLASSBOX_HEALTH_LISTEN":       fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"GLASSBOX_METRICS_PORT":        fmt.Sprint(freeport.Port(t)),
		"GLASSBOX_PPROF_LISTEN":        fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		"GLASSBOX_DATA_DIR":            dataDir,
		"GLASSBOX_CONTROL_PLANE_DSN":   "sqlite://" + filepath.Join(dataDir, "glassbox.db"),
		"GLASSBOX_CLICKHOUSE_DSN":      ch.DSN,
		"GLASSBOX_CLICKHOUSE_DATABASE": ch.Database,
		"GLASSBOX_ENCRYPTION_KEY":      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"GLASSBOX_INIT_ORG_ID":         "org-e2e",
		"GLASSBOX_INIT_PROJECT_ID":     "proj-e2e",
		"GLASSBOX_INIT_PROJECT_NAME":   "End to end",
		"GLASSBOX_INIT_PUBLIC_KEY":     a.PublicKey,
		"GLASSBOX_INIT_SECRET_KEY":     a.SecretKey,
		"GLASSBOX_INIT_USER_EMAIL":     a.UserEmail,
		"GLASSBOX_INIT_USER_PASSWORD":  a.UserPassword,
	}
	return a
}

// run starts the process with a's environment, on its data directory and
// port, and waits until its health route answers health.
func (a *allInOne) run(t *testing.T, health int) {
	t.Helper()
	c := &collector{BaseURL: "http://" + a.env["GLASSBOX_LISTEN"], log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(requireEnv(t, "GLASSBOX_BIN"), "--config", repoPath(t, a.config))
	c.cmd.Env = os.Environ()
	for k, v := range a.env {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	a.collector = c
	c.waitHealth(t, health)
}

// repoPath resolves a path relative to the repository root.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	require.NoError(t, err)
	return p
}

// TestIntegrationsFromNPM runs the suites in test/integrations: the
// instrumentation libraries users install (Vercel AI SDK, OpenInference,
// OpenTelemetry's and OpenLLMetry's OpenAI instrumentations, the Anthropic
// SDK's own tracing, LangChain JS, LlamaIndex TS), pinned in its
// package-lock.json, exporting to the all-in-one deployment.
func TestIntegrationsFromNPM(t *testing.T) {
	runNodeSuites(t, requireEnv(t, "GLASSBOX_INTEGRATIONS_DIR"), "*.test.*js", func(a *allInOne) []string {
		return []string{"GLASSBOX_URL=" + a.BaseURL, "GLASSBOX_PUBLIC_KEY=" + a.PublicKey, "GLASSBOX_SECRET_KEY=" + a.SecretKey}
	})
}

// TestAllInOneWithOfficialSDK runs the Node suites in test/sdk (the official
// @langfuse/* packages) against the all-in-one deployment: one base URL for
// OTLP ingestion and the REST API.
func TestAllInOneWithOfficialSDK(t *testing.T) {
	runNodeSuites(t, requireEnv(t, "GLASSBOX_SDK_DIR"), "*.test.mjs", func(a *allInOne) []string {
		return []string{"LANGFUSE_BASE_URL=" + a.BaseURL, "LANGFUSE_PUBLIC_KEY=" + a.PublicKey, "LANGFUSE_SECRET_KEY=" + a.SecretKey}
	})
}

// runNodeSuites runs node --test on dir's files matching pattern, one file
// at a time, against a fresh all-in-one deployment described to them by env.
func runNodeSuites(t *testing.T, dir, pattern string, env func(*allInOne) []string) {
	a := startAllInOne(t)
	suites, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, suites)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, suites...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env(a)...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	require.NoError(t, err, "the Node suites in %s failed against the all-in-one deployment", dir)
}
