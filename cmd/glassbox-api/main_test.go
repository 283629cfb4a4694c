package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/internal/testutil/freeport"
)

// noInput is an admin run with empty standard input and environment.
var noInput = adminInput{stdin: strings.NewReader(""), getenv: func(string) string { return "" }}

// adminRun runs one admin command and decodes its JSON output.
func adminRun(t *testing.T, dsn string, args ...string) (map[string]any, error) {
	t.Helper()
	return adminRunWith(t, noInput, append([]string{"--dsn", dsn}, args...)...)
}

func adminRunWith(t *testing.T, in adminInput, args ...string) (map[string]any, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"admin"}, args...), in, &stdout, &stderr)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())
	return out, nil
}

func TestAdmin(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	org, err := adminRun(t, dsn, "create-org", "--id", "acme", "--name", "Acme")
	require.NoError(t, err)
	assert.Equal(t, "acme", org["id"])

	project, err := adminRun(t, dsn, "create-project", "--org", "acme", "--id", "web", "--name", "Web", "--retention-days", "30")
	require.NoError(t, err)
	assert.Equal(t, float64(30), project["retentionDays"])

	key, err := adminRun(t, dsn, "create-project-key", "--org", "acme", "--project", "web", "--note", "ci")
	require.NoError(t, err)
	assert.Regexp(t, `^pk-lf-`, key["publicKey"])
	assert.Regexp(t, `^sk-lf-`, key["secretKey"], "the secret is shown once, at creation")
	assert.Equal(t, "project", key["scope"])

	// Chosen secrets come from standard input or the environment, never argv.
	const chosen = "sk-lf-0123456789abcdef-0123456789abcdef0"
	_, err = adminRun(t, dsn, "create-org-key", "--org", "acme", "--public-key", "pk-lf-admin", "--secret-key", chosen)
	assert.ErrorContains(t, err, "flag provided but not defined: -secret-key")
	orgKey, err := adminRunWith(t, adminInput{stdin: strings.NewReader(chosen + "\n"), getenv: noInput.getenv},
		"--dsn", dsn, "create-org-key", "--org", "acme", "--public-key", "pk-lf-admin", "--secret-key-stdin")
	require.NoError(t, err)
	assert.Equal(t, "pk-lf-admin", orgKey["publicKey"])
	assert.Equal(t, chosen, orgKey["secretKey"])
	assert.Equal(t, "organization", orgKey["scope"])
	fromEnv, err := adminRunWith(t, adminInput{stdin: strings.NewReader(""), getenv: func(k string) string {
		return map[string]string{SecretKeyEnv: chosen + "-env", DSNEnv: dsn}[k]
	}}, "create-org-key", "--org", "acme", "--public-key", "pk-lf-admin-env")
	require.NoError(t, err, "the DSN and the secret from the environment")
	assert.Equal(t, chosen+"-env", fromEnv["secretKey"])
	_, err = adminRunWith(t, noInput, "--dsn", dsn, "create-org-key", "--org", "acme", "--secret-key-stdin")
	assert.ErrorContains(t, err, "standard input holds no secret key")
	_, err = adminRun(t, "postgres://glassbox:hunter2@127.0.0.1:1/gb", "list")
	require.ErrorContains(t, err, DSNEnv)
	assert.NotContains(t, err.Error(), "hunter2")

	listing, err := adminRun(t, dsn, "list", "--org", "acme")
	require.NoError(t, err)
	buf, _ := json.Marshal(listing)
	assert.NotContains(t, string(buf), key["secretKey"], "lists never show secrets")
	projects := listing["projects"].([]any)
	require.Len(t, projects, 1)
	keys := projects[0].(map[string]any)["apiKeys"].([]any)
	require.Len(t, keys, 1)
	assert.Equal(t, key["id"], keys[0].(map[string]any)["id"])
	require.Len(t, listing["apiKeys"], 2, "the organization keys from stdin and from the environment")

	_, err = adminRun(t, dsn, "revoke", "--org", "acme", "--project", "web", "--key", key["id"].(string))
	require.NoError(t, err)
	listing, err = adminRun(t, dsn, "list", "--org", "acme")
	require.NoError(t, err)
	assert.NotContains(t, listing["projects"].([]any)[0], "apiKeys")
	_, err = adminRun(t, dsn, "revoke", "--org", "acme", "--project", "web", "--key", key["id"].(string))
	assert.ErrorContains(t, err, "not found")
}

// list without --org shows every organization, by name, with projects and
// keys but never a secret.
func TestAdminListAll(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	listing, err := adminRun(t, dsn, "list")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"organizations": []any{}}, listing, "an empty store lists no organization")

	for _, org := range [][2]string{{"zeta", "Zeta"}, {"acme", "Acme"}} {
		_, err = adminRun(t, dsn, "create-org", "--id", org[0], "--name", org[1])
		require.NoError(t, err)
	}
	_, err = adminRun(t, dsn, "create-project", "--org", "zeta", "--id", "api", "--name", "API")
	require.NoError(t, err)
	key, err := adminRun(t, dsn, "create-project-key", "--org", "zeta", "--project", "api")
	require.NoError(t, err)

	listing, err = adminRun(t, dsn, "list")
	require.NoError(t, err)
	buf, _ := json.Marshal(listing)
	assert.NotContains(t, string(buf), key["secretKey"], "lists never show secrets")
	orgs := listing["organizations"].([]any)
	require.Len(t, orgs, 2)
	acme, zeta := orgs[0].(map[string]any), orgs[1].(map[string]any)
	assert.Equal(t, "acme", acme["id"], "ordered by name")
	assert.NotContains(t, acme, "projects")
	assert.Equal(t, "zeta", zeta["id"])
	projects := zeta["projects"].([]any)
	require.Len(t, projects, 1)
	keys := projects[0].(map[string]any)["apiKeys"].([]any)
	require.Len(t, keys, 1)
	assert.Equal(t, key["publicKey"], keys[0].(map[string]any)["publicKey"])
}

func TestAdminErrors(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "cp.db")
	for name, args := range map[string][]string{
		"no command":       {},
		"unknown command":  {"drop-everything"},
		"unknown flag":     {"create-org", "--colour", "red"},
		"stray argument":   {"create-org", "--name", "x", "extra"},
		"missing project":  {"create-project-key", "--org", "acme"},
		"unknown org":      {"create-project", "--org", "nope", "--name", "x"},
		"list unknown org": {"list", "--org", "nope"},
		"invalid org id":   {"create-org", "--id", "a b", "--name", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := adminRun(t, dsn, args...)
			assert.Error(t, err)
		})
	}
}

func TestServe(t *testing.T) {
	ch := chtest.Config(t)
	addr := freeport.Addr(t)
	t.Setenv("TEST_GLASSBOX_LISTEN", addr)
	t.Setenv("TEST_GLASSBOX_CP_DSN", "sqlite://"+filepath.Join(t.TempDir(), "cp.db"))
	t.Setenv("TEST_GLASSBOX_CH_DSN", ch.DSN)
	t.Setenv("TEST_GLASSBOX_CH_DB", ch.Database)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stdout, stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"--config", "testdata/config.yaml"}, noInput, &stdout, &stderr) }()

	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/api/public/health")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after the context ended")
	}
}

func TestServeArguments(t *testing.T) {
	var out bytes.Buffer
	assert.ErrorContains(t, run(context.Background(), []string{"serve", "extra"}, noInput, &out, &out), "unexpected argument")
	assert.ErrorContains(t, run(context.Background(), []string{"--config", "testdata/invalid.yaml"}, noInput, &out, &out), "listen")
}
