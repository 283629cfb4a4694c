package mapping

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeUsage(t *testing.T) {
	tests := []struct {
		name   string
		raw    map[string]int64
		expect map[string]int64
	}{
		{"nil", nil, nil},
		{"canonical keys are taken as they are", map[string]int64{"input": 10, "output": 20, "input_cached_tokens": 5},
			map[string]int64{"input": 10, "output": 20, "input_cached_tokens": 5, "total": 35}},
		{"provided total is kept", map[string]int64{"input": 10, "output": 20, "total": 99},
			map[string]int64{"input": 10, "output": 20, "total": 99}},
		{"OpenAI chat completions", map[string]int64{
			"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
			"prompt_tokens_details.cached_tokens": 20, "prompt_tokens_details.audio_tokens": 5,
			"completion_tokens_details.reasoning_tokens": 10, "completion_tokens_details.accepted_prediction_tokens": 2,
		}, map[string]int64{
			"input": 75, "output": 38, "total": 150, "input_cached_tokens": 20, "input_audio_tokens": 5,
			"output_reasoning_tokens": 10, "output_accepted_prediction_tokens": 2,
		}},
		{"OpenAI responses", map[string]int64{
			"input_tokens": 300, "output_tokens": 80, "total_tokens": 380,
			"input_tokens_details.cached_tokens": 256, "output_tokens_details.reasoning_tokens": 64,
		}, map[string]int64{
			"input": 44, "output": 16, "total": 380, "input_cached_tokens": 256, "output_reasoning_tokens": 64,
		}},
		{"GenAI semantic conventions", map[string]int64{
			"input_tokens": 1000, "output_tokens": 10,
			"cache_read.input_tokens": 600, "cache_creation.input_tokens": 300,
		}, map[string]int64{
			"input": 100, "output": 10, "input_cached_tokens": 600, "input_cache_creation": 300, "total": 1010,
		}},
		{"OpenInference token counts", map[string]int64{
			"prompt": 512, "completion": 64, "total": 576,
			"prompt_details.cache_read": 256, "completion_details.reasoning": 4, "completion_details.audio": 6,
		}, map[string]int64{
			"input": 256, "output": 54, "total": 576, "input_cached_tokens": 256,
			"output_reasoning_tokens": 4, "output_audio_tokens": 6,
		}},
		{"subtraction stops at zero", map[string]int64{"output_tokens": 5, "reasoning_tokens": 9},
			map[string]int64{"output": 0, "output_reasoning_tokens": 9, "total": 9}},
		{"first alias wins, others dropped", map[string]int64{"prompt_tokens": 7, "input_tokens": 9, "prompt": 11},
			map[string]int64{"input": 7, "total": 7}},
		{"canonical beats alias", map[string]int64{"input": 3, "input_tokens": 9},
			map[string]int64{"input": 3, "total": 3}},
		{"negative values dropped", map[string]int64{"input": -1, "output": 4, "image_tokens": -3},
			map[string]int64{"output": 4, "total": 4}},
		{"other keys kept, details prefix removed", map[string]int64{
			"details.image_tokens": 3, "web_search_queries": 1}, map[string]int64{
			"image_tokens": 3, "web_search_queries": 1, "total": 4}},
		{"a key as given wins over a renamed one", map[string]int64{"details.image_tokens": 1, "image_tokens": 2},
			map[string]int64{"image_tokens": 2, "total": 2}},
		{"camelCase SDK usage", map[string]int64{"inputTokens": 50, "outputTokens": 5, "cachedInputTokens": 40},
			map[string]int64{"input": 10, "output": 5, "input_cached_tokens": 40, "total": 55}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.raw)
			assert.Equal(t, tt.expect, NormalizeUsage(tt.raw))
			assert.Equal(t, before, tt.raw, "input must not change")
		})
	}
}

func TestUsageSources(t *testing.T) {
	t.Run("langfuse JSON with nested OpenAI usage", func(t *testing.T) {
		o := mapAttrs(t, map[string]any{
			"langfuse.observation.usage_details": `{"prompt_tokens":10,"completion_tokens":"4",` +
				`"prompt_tokens_details":{"cached_tokens":6},"note":"x","frac":1.5}`,
			"gen_ai.usage.input_tokens": int64(999),
		})
		assert.Equal(t, map[string]int64{"input": 4, "output": 4, "input_cached_tokens": 6, "total": 14}, o.UsageDetails)
	})
	t.Run("empty langfuse JSON falls back", func(t *testing.T) {
		o := mapAttrs(t, map[string]any{
			"langfuse.observation.usage_details": `{}`, "llm.token_count.prompt": int64(3),
		})
		assert.Equal(t, map[string]int64{"input": 3, "total": 3}, o.UsageDetails)
	})
	t.Run("generic keys skip cost and non-numbers", func(t *testing.T) {
		o := mapAttrs(t, map[string]any{
			"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": 3.0,
			"gen_ai.usage.cost": 0.2, "gen_ai.usage.kind": "tokens",
		})
		assert.Equal(t, map[string]int64{"input": 12, "output": 3, "total": 15}, o.UsageDetails)
	})
	t.Run("Vercel provider call", func(t *testing.T) {
		f := newFixture().inScope("ai", "").withAttrs(t, map[string]any{
			"gen_ai.usage.input_tokens": int64(3000), "gen_ai.usage.output_tokens": int64(100),
			"ai.usage.cachedInputTokens": int64(500), "ai.usage.reasoningTokens": int64(40),
			"ai.response.providerMetadata": `{"anthropic":{"usage":{"cache_creation_input_tokens":300,` +
				`"cache_read_input_tokens":700,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":0}}}}`,
		})
		assert.Equal(t, map[string]int64{
			"input": 2200, "output": 60, "input_cached_tokens": 500, "output_reasoning_tokens": 40,
			"input_cache_creation": 100, "input_cache_creation_5m": 200, "input_cache_creation_1h": 0,
			"total": 3100,
		}, f.mapped().UsageDetails)
	})
	t.Run("Vercel outer span has no usage", func(t *testing.T) {
		f := newFixture().inScope("ai", "").withAttrs(t, map[string]any{
			"ai.usage.inputTokens": int64(3000), "ai.usage.cachedInputTokens": int64(500),
		})
		assert.Nil(t, f.mapped().UsageDetails)
	})
	t.Run("Bedrock and OpenAI provider metadata", func(t *testing.T) {
		f := newFixture().inScope("ai", "").withAttrs(t, map[string]any{
			"gen_ai.usage.prompt_tokens": int64(100), "gen_ai.usage.completion_tokens": int64(10),
			"ai.response.providerMetadata": `{"bedrock":{"usage":{"cacheReadInputTokens":30,"cacheWriteInputTokens":20}},` +
				`"openai":{"acceptedPredictionTokens":1}}`,
		})
		assert.Equal(t, map[string]int64{
			"input": 50, "output": 10, "input_cache_read": 30, "input_cache_write": 20,
			"accepted_prediction_tokens": 1, "total": 111,
		}, f.mapped().UsageDetails)
	})
}

func TestCostSources(t *testing.T) {
	assert.Equal(t, map[string]float64{"input": 0.1, "total": 0.3},
		mapAttrs(t, map[string]any{"langfuse.observation.cost_details": `{"input":0.1,"total":0.3,"neg":-1,"s":"1"}`}).CostDetails)
	assert.Equal(t, map[string]float64{"total": 0.02},
		mapAttrs(t, map[string]any{"langfuse.observation.cost_details": `{"x":"y"}`, "llm.cost.total": 0.02}).CostDetails)
	assert.Equal(t, map[string]float64{"total": 0.5},
		mapAttrs(t, map[string]any{"gen_ai.usage.cost": "0.5", "llm.cost.total": 0.02}).CostDetails)
	assert.Nil(t, mapAttrs(t, nil).CostDetails)
}
