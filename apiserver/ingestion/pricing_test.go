package ingestion

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// gpt-4o's built-in prices per token, in force at the events' time.
const (
	gpt4oInput  = 2.5e-6
	gpt4oOutput = 10e-6
	eventTime   = "2025-11-01T10:00:00.000Z"
	laterTime   = "2025-11-01T10:00:05.000Z"
)

// chat counts 9 input and 2 output tokens with gpt-4o's tokenizer.
var chat = ev{"input": []ev{{"role": "user", "content": "Hello world"}}, "output": "Hello world"}

func generationEvent(eventID, typ, ts, id string, fields ev) ev {
	body := ev{"id": id, "traceId": "priced-trace", "name": "llm", "startTime": ts}
	for k, v := range fields {
		body[k] = v
	}
	return envelopeOf(eventID, typ, ts, body)
}

func stored(t *testing.T, f fixture, project, id string) model.Observation {
	t.Helper()
	o, err := f.ch.GetObservation(context.Background(), project, id)
	require.NoError(t, err)
	return o.Observation
}

func TestGenerationsArePricedAsOTLPSpans(t *testing.T) {
	f := setup(t)
	_, err := f.cp.CreateModel(context.Background(), f.a.ProjectID, pricing.Model{
		Name: "acme-llm", MatchPattern: `^acme-llm$`,
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1e-3, "output": 2e-3}}},
	})
	require.NoError(t, err)

	resp := send(t, f, f.a.ProjectAuth,
		generationEvent("1", "generation-create", eventTime, "g-usage", ev{"model": "gpt-4o",
			"usage": ev{"promptTokens": 1000, "completionTokens": 100, "totalTokens": 1100}}),
		generationEvent("2", "generation-create", eventTime, "g-project", ev{"model": "acme-llm", "usageDetails": ev{"input": 10, "output": 5}}),
		generationEvent("3", "generation-create", eventTime, "g-client", ev{"model": "gpt-4o",
			"usageDetails": ev{"input": 10}, "costDetails": ev{"total": 0.5}}),
		generationEvent("4", "generation-create", eventTime, "g-estimate", ev{"model": "gpt-4o", "input": chat["input"], "output": chat["output"]}),
		generationEvent("5", "generation-create", eventTime, "g-unknown", ev{"model": "acme-unknown", "usageDetails": ev{"input": 10}}),
		generationEvent("6", "span-create", eventTime, "s-span", ev{"model": "gpt-4o", "usageDetails": ev{"input": 10}}),
	)
	require.Empty(t, resp.Errors)

	usage := stored(t, f, f.a.ProjectID, "g-usage")
	assert.InDelta(t, 1000*gpt4oInput, usage.CostDetails["input"], 1e-12)
	assert.InDelta(t, 1000*gpt4oInput+100*gpt4oOutput, usage.CostDetails["total"], 1e-12)
	assert.InDelta(t, 10*1e-3+5*2e-3, stored(t, f, f.a.ProjectID, "g-project").CostDetails["total"], 1e-12, "the project's own definition")
	assert.Equal(t, map[string]float64{"total": 0.5}, stored(t, f, f.a.ProjectID, "g-client").CostDetails, "the client's cost wins")
	estimate := stored(t, f, f.a.ProjectID, "g-estimate")
	assert.Equal(t, map[string]int64{"input": 9, "output": 2, "total": 11}, estimate.UsageDetails, "counted from input and output")
	assert.InDelta(t, 9*gpt4oInput+2*gpt4oOutput, estimate.CostDetails["total"], 1e-12)
	assert.Empty(t, stored(t, f, f.a.ProjectID, "g-unknown").CostDetails, "an unknown model has no cost, not 0")
	assert.Empty(t, stored(t, f, f.a.ProjectID, "s-span").CostDetails, "spans carry no model")

	// Project b has no definition of acme-llm.
	resp = send(t, f, f.b.ProjectAuth,
		generationEvent("7", "generation-create", eventTime, "g-project", ev{"model": "acme-llm", "usageDetails": ev{"input": 10}}))
	require.Empty(t, resp.Errors)
	assert.Empty(t, stored(t, f, f.b.ProjectID, "g-project").CostDetails)
}

// An update in a later batch changes the usage: the cost follows it, unless
// the client sent the cost.
func TestGenerationsArePricedAgainWhenUpdated(t *testing.T) {
	f := setup(t)
	resp := send(t, f, f.a.ProjectAuth,
		generationEvent("1", "generation-create", eventTime, "g-estimated", ev{"model": "gpt-4o", "input": chat["input"]}),
		generationEvent("2", "generation-create", eventTime, "g-reported", ev{"model": "gpt-4o", "usageDetails": ev{"input": 1000, "output": 100}}),
		generationEvent("3", "generation-create", eventTime, "g-client", ev{"model": "gpt-4o", "usageDetails": ev{"input": 1000}, "costDetails": ev{"total": 0.5}}),
		generationEvent("4", "generation-create", eventTime, "g-output", ev{"model": "gpt-4o", "input": chat["input"]}),
	)
	require.Empty(t, resp.Errors)
	require.Equal(t, map[string]int64{"input": 9, "output": 0, "total": 9}, stored(t, f, f.a.ProjectID, "g-estimated").UsageDetails)

	resp = send(t, f, f.a.ProjectAuth,
		generationEvent("5", "generation-update", laterTime, "g-estimated", ev{"usage": ev{"promptTokens": 2000, "completionTokens": 200}}),
		generationEvent("6", "generation-update", laterTime, "g-reported", ev{"usageDetails": ev{"input": 3000, "output": 100}}),
		generationEvent("7", "generation-update", laterTime, "g-client", ev{"usageDetails": ev{"input": 3000}}),
		generationEvent("8", "generation-update", laterTime, "g-output", ev{"output": chat["output"]}),
	)
	require.Empty(t, resp.Errors)

	estimated := stored(t, f, f.a.ProjectID, "g-estimated")
	assert.Equal(t, map[string]int64{"input": 2000, "output": 200, "total": 2200}, estimated.UsageDetails)
	assert.InDelta(t, 2000*gpt4oInput+200*gpt4oOutput, estimated.CostDetails["total"], 1e-12, "priced by the reported usage, not the estimate")
	assert.InDelta(t, 3000*gpt4oInput+100*gpt4oOutput, stored(t, f, f.a.ProjectID, "g-reported").CostDetails["total"], 1e-12)
	assert.Equal(t, map[string]float64{"total": 0.5}, stored(t, f, f.a.ProjectID, "g-client").CostDetails)
	output := stored(t, f, f.a.ProjectID, "g-output")
	assert.Equal(t, map[string]int64{"input": 9, "output": 2, "total": 11}, output.UsageDetails, "the estimate counts the output that arrived")
	assert.InDelta(t, 9*gpt4oInput+2*gpt4oOutput, output.CostDetails["total"], 1e-12)
}

// failingModels is a control plane whose model definitions stop loading.
type failingModels struct {
	*controlplane.Store
	fail bool
}

func (c *failingModels) ListModels(ctx context.Context, projectID string) ([]pricing.Model, error) {
	if c.fail {
		return nil, errors.New("control plane unavailable")
	}
	return c.Store.ListModels(ctx, projectID)
}

func TestProjectDefinitionsOutliveAControlPlaneOutage(t *testing.T) {
	f := setup(t)
	_, err := f.cp.CreateModel(context.Background(), f.a.ProjectID, pricing.Model{
		Name: "acme-llm", MatchPattern: `^acme-llm$`,
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1e-3}}},
	})
	require.NoError(t, err)
	cp := &failingModels{Store: f.cp}
	f.h, err = httpx.NewRouter(Routes(f.ch, cp, zap.NewNop()), httpx.Options{Verifier: f.cp})
	require.NoError(t, err)

	for i, id := range []string{"before", "during"} {
		cp.fail = i == 1
		resp := send(t, f, f.a.ProjectAuth, generationEvent(id, "generation-create", eventTime, id, ev{"model": "acme-llm", "usageDetails": ev{"input": 10}}))
		require.Empty(t, resp.Errors)
		assert.InDelta(t, 10*1e-3, stored(t, f, f.a.ProjectID, id).CostDetails["total"], 1e-12, id)
	}
}
