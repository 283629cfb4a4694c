package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/glassbox-dev/glassbox/apiserver"
)

func TestExpandEnv(t *testing.T) {
	t.Setenv("GB_SET", "value")
	t.Setenv("GB_EMPTY", "")
	for in, want := range map[string]string{
		"a: ${env:GB_SET}":             "a: value",
		"a: ${GB_SET}":                 "a: value",
		"a: ${env:GB_UNSET:-fallback}": "a: fallback",
		"a: ${env:GB_EMPTY:-fallback}": "a: fallback",
		"a: ${env:GB_EMPTY}":           "a: ",
		"a: pa$$word":                  "a: pa$word",
		"a: $GB_SET":                   "a: $GB_SET",
	} {
		got, err := expandEnv(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := expandEnv("a: ${env:GB_UNSET_ONE} b: ${GB_UNSET_TWO}")
	assert.ErrorContains(t, err, "GB_UNSET_ONE, GB_UNSET_TWO")

	// Required variables: set, unset, empty; a default may hold ":?".
	got, err := expandEnv("a: ${env:GB_SET:?the a} b: ${env:GB_UNSET_ONE:-x:?y}")
	require.NoError(t, err)
	assert.Equal(t, "a: value b: x:?y", got)
	_, err = expandEnv("a: ${env:GB_UNSET_ONE:?the writers' addresses} b: ${env:GB_EMPTY:?}")
	assert.EqualError(t, err, "environment variables not set: GB_UNSET_ONE (the writers' addresses), GB_EMPTY")
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("TEST_GLASSBOX_CP_DSN", "sqlite:///tmp/x.db")
	t.Setenv("TEST_GLASSBOX_CH_DSN", "clickhouse://ch:9000")
	t.Setenv("TEST_GLASSBOX_ADMIN_KEY", "admin-key-from-the-file")
	cfg, err := loadConfig("testdata/config.yaml")
	require.NoError(t, err)
	assert.Equal(t, configopaque.String("admin-key-from-the-file"), cfg.AdminAPIKey)
	assert.Equal(t, "127.0.0.1:3999", cfg.Listen)
	assert.Equal(t, "https://glassbox.example.com", cfg.PublicURL)
	assert.Equal(t, "sqlite:///tmp/x.db", cfg.ControlPlane.DSN)
	assert.Equal(t, "clickhouse://ch:9000", string(cfg.ClickHouse.DSN))
	assert.Equal(t, "glassbox", cfg.ClickHouse.Database)
	assert.True(t, cfg.InitFromEnv)
	assert.Equal(t, []string{"hooks.example.com", "*.svc.internal"}, cfg.Evaluation.WebhookAllowedHosts)
	assert.Equal(t, apiserver.NewDefaultConfig().MaxRequestBodyBytes, cfg.MaxRequestBodyBytes, "unset keys keep their defaults")

	cfg, err = loadConfig("")
	require.NoError(t, err)
	assert.Equal(t, apiserver.NewDefaultConfig(), cfg)
}

func TestLoadConfigErrors(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/missing.yaml":     "read config",
		"testdata/unknown_key.yaml": "clickhouse_dsn",
		"testdata/invalid.yaml":     "listen",
		"testdata/config.yaml":      "TEST_GLASSBOX_CP_DSN",
	} {
		_, err := loadConfig(file)
		assert.ErrorContains(t, err, want, file)
	}
}
