package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShippedConfigsValidate runs `glassbox validate` on every collector
// configuration in configs/, so a deployment file never drifts from the
// components' configuration.
func TestShippedConfigsValidate(t *testing.T) {
	bin := requireEnv(t, "GLASSBOX_BIN")
	files, err := filepath.Glob(repoPath(t, "configs/*.yaml"))
	require.NoError(t, err)
	// Values for the variables the deployment files require.
	env := append(os.Environ(),
		"GLASSBOX_PUBLIC_KEY=pk-lf-validate", "GLASSBOX_SECRET_KEY=sk-lf-validate", "GLASSBOX_PROJECT_ID=validate",
		"GLASSBOX_BASIC_AUTH=cGs6c2s=", "GLASSBOX_GATEWAY_URL=http://gateway.internal:3000/api/public/otel",
		"GLASSBOX_CONTROL_PLANE_DSN=postgres://glassbox@db.internal/glassbox",
		"GLASSBOX_CLICKHOUSE_DSN=clickhouse://clickhouse.internal:9000", "GLASSBOX_CLICKHOUSE_CLUSTER=glassbox",
		"GLASSBOX_FANOUT_URL=http://otel.internal:4318", "GLASSBOX_WRITERS=[writer-0.internal:4317, writer-1.internal:4317]",
		"GLASSBOX_WRITER_TLS_CERT=/etc/glassbox/writer.pem", "GLASSBOX_WRITER_TLS_KEY=/etc/glassbox/writer-key.pem",
		"GLASSBOX_WRITER_TLS_CLIENT_CA=/etc/glassbox/gateways-ca.pem", "GLASSBOX_WRITER_TLS_CA=/etc/glassbox/writers-ca.pem",
		"GLASSBOX_GATEWAY_TLS_CERT=/etc/glassbox/gateway.pem", "GLASSBOX_GATEWAY_TLS_KEY=/etc/glassbox/gateway-key.pem",
	)
	validated := 0
	for _, f := range files {
		if strings.HasSuffix(f, "api-server.yaml") {
			continue // the standalone API server's file, covered by cmd/glassbox-api
		}
		cmd := exec.Command(bin, "validate", "--config", f)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s", filepath.Base(f), out)
		validated++
	}
	require.GreaterOrEqual(t, validated, 5)
}
