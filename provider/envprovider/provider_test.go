package envprovider

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newProvider(t *testing.T) confmap.Provider {
	t.Helper()
	p := NewFactory().Create(confmap.ProviderSettings{Logger: zap.NewNop()})
	t.Cleanup(func() { assert.NoError(t, p.Shutdown(context.Background())) })
	return p
}

func retrieve(t *testing.T, p confmap.Provider, uri string) (any, error) {
	t.Helper()
	r, err := p.Retrieve(context.Background(), uri, nil)
	if err != nil {
		return nil, err
	}
	return r.AsRaw()
}

func TestRequiredVariable(t *testing.T) {
	p := newProvider(t)
	assert.Equal(t, "env", p.Scheme())

	t.Setenv("GLASSBOX_TEST_WRITERS", "[a:4317, b:4317]")
	v, err := retrieve(t, p, "env:GLASSBOX_TEST_WRITERS:?the writers' addresses")
	require.NoError(t, err)
	assert.Equal(t, []any{"a:4317", "b:4317"}, v, "a set variable is read as YAML, as the collector's provider does")

	unset := func() { require.NoError(t, os.Unsetenv("GLASSBOX_TEST_WRITERS")) } // t.Setenv above restores it
	for name, prepare := range map[string]func(){"empty": func() { t.Setenv("GLASSBOX_TEST_WRITERS", "") }, "unset": unset} {
		prepare()
		_, err = retrieve(t, p, "env:GLASSBOX_TEST_WRITERS:?the writers' addresses, a YAML list")
		assert.EqualError(t, err, "environment variable GLASSBOX_TEST_WRITERS is required but not set: the writers' addresses, a YAML list", name)
		_, err = retrieve(t, p, "env:GLASSBOX_TEST_WRITERS:?")
		assert.EqualError(t, err, "environment variable GLASSBOX_TEST_WRITERS is required but not set", name)
	}
}

func TestOtherReferencesAreTheCollectors(t *testing.T) {
	p := newProvider(t)
	t.Setenv("GLASSBOX_TEST_UNSET", "")
	require.NoError(t, os.Unsetenv("GLASSBOX_TEST_UNSET"))
	v, err := retrieve(t, p, "env:GLASSBOX_TEST_UNSET:-8888")
	require.NoError(t, err)
	assert.Equal(t, 8888, v)
	v, err = retrieve(t, p, "env:GLASSBOX_TEST_UNSET:-a:?b")
	require.NoError(t, err)
	assert.Equal(t, "a:?b", v, "a default may hold ':?'")
	v, err = retrieve(t, p, "env:GLASSBOX_TEST_UNSET")
	require.NoError(t, err)
	assert.Nil(t, v, "an unset variable without a default stays empty, as before")
	_, err = retrieve(t, p, "env:NOT A NAME:?x")
	assert.ErrorContains(t, err, "invalid name")
	_, err = retrieve(t, p, "file:/etc/x")
	assert.Error(t, err)
}
