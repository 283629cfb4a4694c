package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShippedConfigsValidate runs `glassbox validate` on every collector
// configuration in configs/, so a deployment file never drifts from the
// components' configuration.
func TestShippedConfigsValidate(t *testing.T) {
	bin := requireEnv(t, "GLASSBOX_BIN")
	files, err := filepath.Glob(repoPath(t, "configs/*.yaml"))
	require.NoError(t, err)
	env := validateEnv()
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

// validateEnv is the environment with values for the variables the
// deployment files require.
func validateEnv() []string {
	return append(os.Environ(),
		"GLASSBOX_PUBLIC_KEY=pk-lf-validate", "GLASSBOX_SECRET_KEY=sk-lf-validate", "GLASSBOX_PROJECT_ID=validate",
		"GLASSBOX_BASIC_AUTH=cGs6c2s=", "GLASSBOX_GATEWAY_URL=http://gateway.internal:3000/api/public/otel",
		"GLASSBOX_CONTROL_PLANE_DSN=postgres://glassbox@db.internal/glassbox",
		"GLASSBOX_CLICKHOUSE_DSN=clickhouse://clickhouse.internal:9000", "GLASSBOX_CLICKHOUSE_CLUSTER=glassbox",
		"GLASSBOX_FANOUT_URL=http://otel.internal:4318", "GLASSBOX_WRITERS=[writer-0.internal:4317, writer-1.internal:4317]",
		"GLASSBOX_WRITER_TLS_CERT=/etc/glassbox/writer.pem", "GLASSBOX_WRITER_TLS_KEY=/etc/glassbox/writer-key.pem",
		"GLASSBOX_WRITER_TLS_CLIENT_CA=/etc/glassbox/gateways-ca.pem", "GLASSBOX_WRITER_TLS_CA=/etc/glassbox/writers-ca.pem",
		"GLASSBOX_GATEWAY_TLS_CERT=/etc/glassbox/gateway.pem", "GLASSBOX_GATEWAY_TLS_KEY=/etc/glassbox/gateway-key.pem",
	)
}

// requiredRef finds the ${env:NAME:?message} references of a configuration.
var requiredRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*):\?`)

// TestShippedConfigsNameMissingVariables starts `glassbox validate` on each
// shipped configuration once per variable it requires, with that variable
// unset and then empty: the error names the variable rather than what a
// component makes of the missing value.
func TestShippedConfigsNameMissingVariables(t *testing.T) {
	bin := requireEnv(t, "GLASSBOX_BIN")
	files, err := filepath.Glob(repoPath(t, "configs/*.yaml"))
	require.NoError(t, err)
	required := map[string][]string{} // file -> variables
	for _, f := range files {
		raw, err := os.ReadFile(f) //nolint:gosec // a file of configs/
		require.NoError(t, err)
		for _, m := range requiredRef.FindAllStringSubmatch(string(raw), -1) {
			required[filepath.Base(f)] = append(required[filepath.Base(f)], m[1])
		}
	}
	require.Contains(t, required["gateway.yaml"], "GLASSBOX_WRITERS",
		"the gateway cannot route without writers; an unset list must be named at startup")
	for file, names := range required {
		for _, name := range names {
			for _, value := range []string{"unset", "empty"} {
				env := slices.DeleteFunc(validateEnv(), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
				if value == "empty" {
					env = append(env, name+"=")
				}
				cmd := exec.Command(bin, "validate", "--config", repoPath(t, "configs/"+file))
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				require.Error(t, err, "%s with %s %s:\n%s", file, name, value, out)
				assert.Contains(t, string(out), "environment variable "+name+" is required but not set", "%s with %s %s", file, name, value)
			}
		}
	}
}
