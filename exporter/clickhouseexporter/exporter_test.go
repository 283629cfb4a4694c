package clickhouseexporter

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// spans builds n spans of project, numbered from first, two spans per trace.
// An empty project leaves the project attribute off.
func spans(project string, first, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if project != "" {
		rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, project)
	}
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	ss := rs.ScopeSpans().AppendEmpty()
	start := time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := first; i < first+n; i++ {
		span := ss.Spans().AppendEmpty()
		span.SetTraceID(traceID(i / 2))
		span.SetSpanID(spanID(i))
		if i%2 == 1 {
			span.SetParentSpanID(spanID(i - 1))
		}
		span.SetName("step")
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Millisecond)))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i)*time.Millisecond + 500*time.Microsecond)))
		span.Attributes().PutStr("langfuse.user.id", "user-1")
	}
	return td
}

func traceID(i int) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[8:], uint64(i)+1)
	id[0] = 0xab
	return id
}

func spanID(i int) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], uint64(i)+1)
	return id
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, Type, f.Type())
	assert.Equal(t, "glassbox_clickhouse", Type.String())
}

// unreachableConfig names a storage extension that unreachableHost offers.
func unreachableConfig() *Config {
	return createDefaultConfig().(*Config)
}

// unreachableHost offers cfg a glassbox_storage extension that points at a
// port where nothing listens.
func unreachableHost(t *testing.T, cfg *Config) component.Host {
	return withStorage(t, componenttest.NewNopHost(), cfg, chstore.Config{DSN: "clickhouse://127.0.0.1:1", Database: "down"})
}

func TestStartDoesNotWaitForClickHouse(t *testing.T) {
	cfg := unreachableConfig()
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(Type), cfg)
	require.NoError(t, err)

	began := time.Now()
	require.NoError(t, exp.Start(context.Background(), unreachableHost(t, cfg)))
	assert.Less(t, time.Since(began), 3*time.Second)
	// The queue takes the spans while ClickHouse is away.
	require.NoError(t, exp.ConsumeTraces(context.Background(), spans("p", 0, 4)))
	require.NoError(t, exp.Shutdown(context.Background()))
}

// A missing or wrong storage extension stops the start with the key.
func TestStartNeedsTheStorageExtension(t *testing.T) {
	cfg := unreachableConfig()
	cfg.Storage = component.MustNewID("glassbox_storage")
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	assert.ErrorContains(t, exp.Start(context.Background(), componenttest.NewNopHost()), `storage: no extension "glassbox_storage"`)
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(Type), unreachableConfig())
	require.NoError(t, err)
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestPushBeforeConnectIsRetryable(t *testing.T) {
	cfg := unreachableConfig()
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.BackOffConfig.Enabled = false
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), unreachableHost(t, cfg)))
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	err = exp.ConsumeTraces(context.Background(), spans("p", 0, 2))
	require.ErrorIs(t, err, chstore.ErrUnavailable)
	assert.ErrorContains(t, err, "connection refused")
	assert.False(t, consumererror.IsPermanent(err))
}
