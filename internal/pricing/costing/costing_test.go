package costing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

var (
	now   = time.Date(2025, 11, 1, 12, 0, 0, 0, time.UTC)
	start = now.Add(-time.Hour).UnixMicro()
)

// chatInput and chatOutput count 9 and 2 tokens with gpt-4o's tokenizer.
const (
	chatInput  = `[{"role":"user","content":"Hello world"}]`
	chatOutput = `"Hello world"`
)

func testPricer(t *testing.T) *pricing.Pricer {
	t.Helper()
	builtin, err := pricing.Builtin()
	require.NoError(t, err)
	return pricing.NewPricer(builtin, 100)
}

func generation(modelName string) model.Observation {
	return model.Observation{Type: model.TypeGeneration, Level: model.LevelDefault, Model: modelName, StartTime: start}
}

func TestApplyPricesReportedUsage(t *testing.T) {
	p := testPricer(t)
	o := generation("gpt-4o")
	o.UsageDetails = map[string]int64{"input": 1000, "output": 100, "total": 1100}
	r, err := Apply(p, "proj", &o, now, DefaultEstimation, nil)
	require.NoError(t, err)
	assert.Equal(t, Priced, r)
	assert.InDelta(t, 1000*2.5e-6, o.CostDetails["input"], 1e-12)
	assert.InDelta(t, 100*10e-6, o.CostDetails["output"], 1e-12)
	assert.InDelta(t, 1000*2.5e-6+100*10e-6, o.CostDetails["total"], 1e-12)
	assert.False(t, o.UsageEstimated)
	assert.Equal(t, map[string]int64{"input": 1000, "output": 100, "total": 1100}, o.UsageDetails)
}

func TestApplyUsesTheProjectDefinitionInForceAtTheStart(t *testing.T) {
	p := testPricer(t)
	custom := pricing.Model{
		ID: "m1", Name: "our-gpt-4o", MatchPattern: `^gpt-4o$`, StartDate: now.Add(-30 * time.Minute),
		Tiers: []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1, "output": 1}}},
	}
	require.NoError(t, p.SetModelsOf("proj", []pricing.Model{custom}))
	for _, c := range []struct {
		name    string
		project string
		start   int64
		total   float64
	}{
		{"after the project definition starts", "proj", now.UnixMicro(), 3},
		{"before it starts: the built-in price", "proj", start, 2.5e-6 + 2*10e-6},
		{"no start time: priced at now", "proj", 0, 3},
		{"another project", "other", now.UnixMicro(), 2.5e-6 + 2*10e-6},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := generation("gpt-4o")
			o.StartTime, o.UsageDetails = c.start, map[string]int64{"input": 1, "output": 2}
			r, err := Apply(p, c.project, &o, now, DefaultEstimation, nil)
			require.NoError(t, err)
			assert.Equal(t, Priced, r)
			assert.InDelta(t, c.total, o.CostDetails["total"], 1e-12)
		})
	}
}

func TestApplyLeavesCostEmptyWhenItCannotPrice(t *testing.T) {
	p := testPricer(t)
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = 'a'
	}
	for _, c := range []struct {
		name   string
		change func(o *model.Observation)
		est    Estimation
		want   Result
	}{
		{"no model", func(o *model.Observation) { o.Model = "" }, DefaultEstimation, NoModel},
		{"client cost", func(o *model.Observation) { o.CostDetails = map[string]float64{"total": 7} }, DefaultEstimation, ClientCost},
		{"unknown model", func(o *model.Observation) { o.Model = "acme-llm-9000" }, DefaultEstimation, UnknownModel},
		{"no priced key", func(o *model.Observation) { o.UsageDetails = map[string]int64{"requests": 3} }, DefaultEstimation, Unpriced},
		{"estimation off", func(*model.Observation) {}, Estimation{}, NoUsage},
		{"failed generation", func(o *model.Observation) { o.Level = model.LevelError }, DefaultEstimation, NoUsage},
		{"a span", func(o *model.Observation) { o.Type = model.TypeSpan }, DefaultEstimation, NoUsage},
		{"no offline tokenizer", func(o *model.Observation) { o.Model = "claude-3-5-sonnet-20241022" }, DefaultEstimation, NoUsage},
		{"nothing to count", func(o *model.Observation) { o.Input, o.Output = "", "" }, DefaultEstimation, NoUsage},
		{"too large to count", func(o *model.Observation) { o.Input = string(big) }, DefaultEstimation, NoUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := generation("gpt-4o")
			o.Input, o.Output = chatInput, chatOutput
			c.change(&o)
			before := o
			r, err := Apply(p, "proj", &o, now, c.est, nil)
			require.NoError(t, err)
			assert.Equal(t, c.want, r)
			assert.Equal(t, before, o, "left as it was")
		})
	}
}

func TestApplyEstimatesMissingUsage(t *testing.T) {
	p := testPricer(t)
	o := generation("gpt-4o")
	o.Input, o.Output = chatInput, chatOutput
	r, err := Apply(p, "proj", &o, now, DefaultEstimation, nil)
	require.NoError(t, err)
	assert.Equal(t, Estimated, r)
	// 3 + (3 + role 1 + content 2) for the chat input, 2 for the output.
	assert.Equal(t, map[string]int64{"input": 9, "output": 2, "total": 11}, o.UsageDetails)
	assert.True(t, o.UsageEstimated)
	assert.InDelta(t, 9*2.5e-6+2*10e-6, o.CostDetails["total"], 1e-12)

	// The text to count may come from elsewhere.
	bare := generation("gpt-4o")
	r, err = Apply(p, "proj", &bare, now, DefaultEstimation, func() model.Observation { return o })
	require.NoError(t, err)
	assert.Equal(t, Estimated, r)
	assert.Equal(t, o.UsageDetails, bare.UsageDetails)
}

func TestApplyReportsWhyAnEstimateFailed(t *testing.T) {
	p := testPricer(t)
	odd := pricing.Model{
		ID: "m1", Name: "odd", MatchPattern: `^odd$`, TokenizerID: pricing.TokenizerOpenAI,
		TokenizerConfig: &pricing.TokenizerConfig{TokenizerModel: "no-such-encoding"},
		Tiers:           []pricing.Tier{{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1}}},
	}
	require.NoError(t, p.SetModelsOf("proj", []pricing.Model{odd}))
	o := generation("odd")
	o.Input = "hello"
	r, err := Apply(p, "proj", &o, now, DefaultEstimation, nil)
	assert.Equal(t, NoUsage, r)
	require.Error(t, err)
	assert.Empty(t, o.CostDetails)
}

func TestReset(t *testing.T) {
	p := testPricer(t)
	priced := generation("gpt-4o")
	priced.Input, priced.Output = chatInput, chatOutput
	priced.UsageDetails = map[string]int64{"input": 1000, "output": 100}
	_, err := Apply(p, "proj", &priced, now, DefaultEstimation, nil)
	require.NoError(t, err)
	estimated := generation("gpt-4o")
	estimated.Input = chatInput
	_, err = Apply(p, "proj", &estimated, now, DefaultEstimation, nil)
	require.NoError(t, err)
	require.True(t, estimated.UsageEstimated)
	estimated.UsageEstimated = false // storage does not keep it

	t.Run("derived cost", func(t *testing.T) {
		o := priced
		Reset(p, "proj", &o, now, DefaultEstimation)
		assert.Empty(t, o.CostDetails)
		assert.Equal(t, priced.UsageDetails, o.UsageDetails, "the reported usage stays")

		// A new usage is then priced afresh.
		o.UsageDetails = map[string]int64{"input": 2000, "output": 100}
		r, err := Apply(p, "proj", &o, now, DefaultEstimation, nil)
		require.NoError(t, err)
		assert.Equal(t, Priced, r)
		assert.InDelta(t, 2000*2.5e-6+100*10e-6, o.CostDetails["total"], 1e-12)
	})
	t.Run("derived cost stored with a rounded last digit", func(t *testing.T) {
		o := priced
		o.CostDetails = map[string]float64{}
		for k, v := range priced.CostDetails {
			o.CostDetails[k] = v * (1 + 1e-15)
		}
		Reset(p, "proj", &o, now, DefaultEstimation)
		assert.Empty(t, o.CostDetails)
	})
	t.Run("estimated usage and its cost", func(t *testing.T) {
		o := estimated
		Reset(p, "proj", &o, now, DefaultEstimation)
		assert.Empty(t, o.CostDetails)
		assert.Empty(t, o.UsageDetails)

		// The output arrives: the estimate counts it too.
		o.Output = chatOutput
		r, err := Apply(p, "proj", &o, now, DefaultEstimation, nil)
		require.NoError(t, err)
		assert.Equal(t, Estimated, r)
		assert.Equal(t, map[string]int64{"input": 9, "output": 2, "total": 11}, o.UsageDetails)
	})
	t.Run("client cost", func(t *testing.T) {
		o := priced
		o.CostDetails = map[string]float64{"input": 1, "output": 2, "total": 3}
		Reset(p, "proj", &o, now, DefaultEstimation)
		assert.Equal(t, map[string]float64{"input": 1, "output": 2, "total": 3}, o.CostDetails)
		assert.Equal(t, priced.UsageDetails, o.UsageDetails)
	})
	t.Run("no cost", func(t *testing.T) {
		o := generation("gpt-4o")
		o.UsageDetails = map[string]int64{"input": 1}
		Reset(p, "proj", &o, now, DefaultEstimation)
		assert.Equal(t, map[string]int64{"input": 1}, o.UsageDetails)
	})
}

func TestResultNames(t *testing.T) {
	assert.Equal(t, "priced", Priced.String())
	assert.Equal(t, "unknown_model", UnknownModel.String())
	assert.Equal(t, "unknown", NumResults.String())
}
