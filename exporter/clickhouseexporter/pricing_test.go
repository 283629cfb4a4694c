package clickhouseexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
	"github.com/glassbox-dev/glassbox/processor/costprocessor"
)

// generations are LLM calls as SDKs report them: usage without cost, usage
// with the client's own cost, no usage (estimated from the text), a model
// without a price, and a span that names no model.
func generations(project string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, project)
	ss := rs.ScopeSpans().AppendEmpty()
	start := time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC)
	add := func(i int, set func(pcommon.Map)) {
		span := ss.Spans().AppendEmpty()
		span.SetTraceID(traceID(0))
		span.SetSpanID(spanID(i))
		span.SetName("chat")
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
		set(span.Attributes())
	}
	add(0, func(a pcommon.Map) {
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutInt("gen_ai.usage.input_tokens", 1200)
		a.PutInt("gen_ai.usage.output_tokens", 300)
	})
	add(1, func(a pcommon.Map) {
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "gpt-4o")
		a.PutInt("gen_ai.usage.input_tokens", 10)
		a.PutStr(model.CostDetailsAttribute, `{"total":0.5}`)
	})
	add(2, func(a pcommon.Map) {
		a.PutStr("langfuse.observation.type", "generation")
		a.PutStr("gen_ai.request.model", "gpt-4o-mini")
		a.PutStr("langfuse.observation.input", `[{"role":"user","content":"How many tokens does this question take?"}]`)
		a.PutStr("langfuse.observation.output", "About a dozen.")
	})
	add(3, func(a pcommon.Map) {
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "in-house-model-7")
		a.PutInt("gen_ai.usage.input_tokens", 5)
	})
	add(4, func(a pcommon.Map) { a.PutStr("tool.name", "search") })
	return td
}

// directConfig inserts each export at once, with pricing or without.
func directConfig(pricing bool) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	if pricing {
		cfg.Pricing = configoptional.Some(costing.DefaultConfig())
	}
	return cfg
}

// startCostProcessor starts a glassbox_cost processor with its defaults in
// front of next, until the test ends.
func startCostProcessor(t *testing.T, next consumer.Traces) processor.Traces {
	t.Helper()
	f := costprocessor.NewFactory()
	proc, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(costprocessor.Type), f.CreateDefaultConfig(), next)
	require.NoError(t, err)
	require.NoError(t, proc.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, proc.Shutdown(context.Background())) })
	return proc
}

// storedCosts maps each stored observation's id to its usage and cost.
func storedCosts(t *testing.T, s *chstore.Store, project string) map[string]model.Observation {
	t.Helper()
	tr, err := s.GetTrace(context.Background(), project, traceID(0).String())
	require.NoError(t, err)
	out := map[string]model.Observation{}
	for _, o := range tr.Observations {
		out[o.ID] = model.Observation{UsageDetails: o.UsageDetails, CostDetails: o.CostDetails}
	}
	return out
}

// TestPricingStoresWhatTheCostProcessorWould sends the same generations
// through the exporter's pricing and through glassbox_cost before an
// exporter without it: both store the same usage and cost.
func TestPricingStoresWhatTheCostProcessorWould(t *testing.T) {
	storeCfg := chtest.Config(t)
	exp, tt := startWithTelemetry(t, directConfig(true), storeCfg)
	require.NoError(t, exp.ConsumeTraces(context.Background(), generations("by-exporter")))

	plainExp, _ := startWithTelemetry(t, directConfig(false), storeCfg)
	sink := new(consumertest.TracesSink)
	proc := startCostProcessor(t, sink)
	require.NoError(t, proc.ConsumeTraces(context.Background(), generations("by-processor")))
	require.Len(t, sink.AllTraces(), 1)
	require.NoError(t, plainExp.ConsumeTraces(context.Background(), sink.AllTraces()[0]))

	s := openStore(t, storeCfg)
	byExporter, byProcessor := storedCosts(t, s, "by-exporter"), storedCosts(t, s, "by-processor")
	require.Len(t, byExporter, 5)
	assert.Equal(t, byProcessor, byExporter)

	usage := byExporter[spanID(0).String()]
	assert.Equal(t, map[string]int64{"input": 1200, "output": 300, "total": 1500}, usage.UsageDetails)
	require.NotEmpty(t, usage.CostDetails, "priced by its usage")
	assert.InDelta(t, usage.CostDetails["input"]+usage.CostDetails["output"], usage.CostDetails["total"], 1e-12)
	assert.Equal(t, map[string]float64{"total": 0.5}, byExporter[spanID(1).String()].CostDetails, "the client's cost wins")
	estimated := byExporter[spanID(2).String()]
	assert.NotEmpty(t, estimated.UsageDetails, "usage counted from input and output")
	assert.NotEmpty(t, estimated.CostDetails)
	assert.Empty(t, byExporter[spanID(3).String()].CostDetails, "an unknown model stays without cost")
	assert.Empty(t, byExporter[spanID(4).String()].CostDetails)

	assert.Equal(t, int64(4), sumCounter(t, tt, "otelcol_exporter_glassbox_clickhouse_priced_spans"), "every span naming a model")
}

// TestPricingLeavesWhatTheProcessorPriced runs glassbox_cost and the
// exporter's pricing in one pipeline: the processor's costs are kept.
func TestPricingLeavesWhatTheProcessorPriced(t *testing.T) {
	storeCfg := chtest.Config(t)
	exp, tt := startWithTelemetry(t, directConfig(true), storeCfg)
	proc := startCostProcessor(t, exp)
	require.NoError(t, proc.ConsumeTraces(context.Background(), generations("both")))

	costs := storedCosts(t, openStore(t, storeCfg), "both")
	assert.NotEmpty(t, costs[spanID(0).String()].CostDetails)
	m, err := tt.GetMetric("otelcol_exporter_glassbox_clickhouse_priced_spans")
	require.NoError(t, err)
	var clientCost int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := dp.Attributes.Value("result"); v.AsString() == "client_cost" {
			clientCost += dp.Value
		}
	}
	assert.Equal(t, int64(3), clientCost, "the processor's two prices and the client's own cost are kept")
}
