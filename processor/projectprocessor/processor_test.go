package projectprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/glassbox-dev/glassbox/internal/model"
)

type authData map[string]any

func (a authData) GetAttribute(name string) any { return a[name] }
func (a authData) GetAttributeNames() []string {
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	return names
}

// spoofed is data whose client named projects itself, twice on one resource.
func spoofed() ptrace.Traces {
	td := ptrace.NewTraces()
	for range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, "victim")
		rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("span")
	}
	return td
}

func TestStampsTheAuthenticatedProject(t *testing.T) {
	sink := new(consumertest.TracesSink)
	f := NewFactory()
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(Type), f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	ctx := client.NewContext(context.Background(), client.Info{Auth: authData{"project_id": "mine"}})
	require.NoError(t, p.ConsumeTraces(ctx, spoofed()))
	require.Len(t, sink.AllTraces(), 1)
	for _, rs := range sink.AllTraces()[0].ResourceSpans().All() {
		n := 0
		for k, v := range rs.Resource().Attributes().All() {
			if k == model.ProjectIDAttribute {
				n++
				assert.Equal(t, "mine", v.Str(), "the client's value is overwritten")
			}
		}
		assert.Equal(t, 1, n)
	}

	// Without an authenticated project nothing passes, and retrying cannot help.
	for name, ctx := range map[string]context.Context{
		"no auth":       context.Background(),
		"empty project": client.NewContext(context.Background(), client.Info{Auth: authData{"project_id": ""}}),
		"other type":    client.NewContext(context.Background(), client.Info{Auth: authData{"project_id": 7}}),
	} {
		err := p.ConsumeTraces(ctx, spoofed())
		require.Error(t, err, name)
		assert.True(t, consumererror.IsPermanent(err), name)
		assert.ErrorContains(t, err, "authenticator", name)
	}
	assert.Len(t, sink.AllTraces(), 1)
}
