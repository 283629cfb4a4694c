package pricing

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// farFuture is after every start date in the catalogue.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

func builtinCatalogue(t testing.TB) *Catalogue {
	t.Helper()
	c, err := Builtin()
	require.NoError(t, err)
	return c
}

func TestBuiltinCoversTheMajorProviders(t *testing.T) {
	c := builtinCatalogue(t)
	assert.GreaterOrEqual(t, c.Len(), 100)
	for _, name := range []string{
		"gpt-4o", "gpt-5", "o3", "text-embedding-3-small", // OpenAI
		"claude-sonnet-4-5", "claude-3-5-haiku", // Anthropic
		"gemini-2.5-pro", "gemini-2.0-flash", // Google
		"mistral-large", "codestral", // Mistral
		"llama-3.3-70b-versatile", "meta.llama3-1-70b-instruct-v1:0", // Meta on Groq and Bedrock
		"deepseek-chat", "grok-4", // DeepSeek, xAI
	} {
		p, ok := c.Find(name, farFuture)
		if assert.True(t, ok, name) {
			assert.Equal(t, name, p.Name())
		}
	}
}

// Every entry is found by its own name, and no other entry of equal rank
// matches that name: the catalogue has no ambiguous patterns.
func TestBuiltinEntriesAreUnambiguous(t *testing.T) {
	c := builtinCatalogue(t)
	for _, p := range c.entries {
		at := p.model.StartDate
		if at.IsZero() {
			at = farFuture
		}
		got, ok := c.Find(p.model.Name, at)
		require.True(t, ok, p.model.Name)
		assert.Equal(t, p.model.Name, got.model.Name, "%s resolves to another entry", p.model.Name)
		for _, other := range c.appendMatching(nil, p.model.Name) {
			if other.model.Name != p.model.Name {
				assert.Less(t, other.specificity, got.specificity,
					"%s is matched as specifically by %s", p.model.Name, other.model.Name)
			}
		}
		assert.True(t, strings.HasPrefix(p.model.ID, BuiltinPrefix))
		assert.Equal(t, p.model.ID, sanitizeID(p.model.ID), "id is URL safe")
	}
}

func TestBuiltinProviderSpellings(t *testing.T) {
	c := builtinCatalogue(t)
	for name, want := range map[string]string{
		"openai/gpt-4o-mini-2024-07-18":                       "gpt-4o-mini",
		"azure/gpt-35-turbo":                                  "gpt-3.5-turbo",
		"GPT-4.1-MINI":                                        "gpt-4.1-mini",
		"claude-3-5-sonnet-20241022":                          "claude-3-5-sonnet",
		"anthropic.claude-3-5-sonnet-20241022-v2:0":           "claude-3-5-sonnet",
		"us.anthropic.claude-sonnet-4-20250514-v1:0":          "claude-sonnet-4",
		"claude-sonnet-4-5@20250929":                          "claude-sonnet-4-5",
		"claude-3-5-sonnet-v2@20241022":                       "claude-3-5-sonnet",
		"anthropic/claude-opus-4-1-20250805":                  "claude-opus-4-1",
		"gemini-2.5-flash-preview-05-20":                      "gemini-2.5-flash",
		"models/gemini-2.0-flash-001":                         "gemini-2.0-flash",
		"gemini-2.5-flash-lite-preview-06-17":                 "gemini-2.5-flash-lite",
		"gemini-3-pro-preview":                                "gemini-3-pro",
		"mistral-large-latest":                                "mistral-large",
		"mistral-small-2503":                                  "mistral-small",
		"grok-4-0709":                                         "grok-4",
		"xai/grok-3-mini":                                     "grok-3-mini",
		"groq/llama-3.1-8b-instant":                           "llama-3.1-8b-instant",
		"together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
		"bedrock/us.meta.llama3-3-70b-instruct-v1:0":          "meta.llama3-3-70b-instruct-v1:0",
		"deepseek/deepseek-reasoner":                          "deepseek-reasoner",
	} {
		p, ok := c.Find(name, farFuture)
		if assert.True(t, ok, name) {
			assert.Equal(t, want, p.Name(), name)
		}
	}
	for _, name := range []string{"gpt-4o-2", "claude-sonnet-4-6", "gemini-2.5-flash-image", "my-model"} {
		_, ok := c.Find(name, farFuture)
		assert.False(t, ok, "%s must stay unpriced", name)
	}
}

func TestBuiltinPrices(t *testing.T) {
	c := builtinCatalogue(t)
	cost := func(name string, at time.Time, usage map[string]int64) Cost {
		t.Helper()
		p, ok := c.Find(name, at)
		require.True(t, ok, name)
		got, ok := p.Cost(usage)
		require.True(t, ok, name)
		return got
	}
	// gpt-4o: $2.50 in, $1.25 cached, $10 out per million tokens since 2024-10-02.
	got := cost("gpt-4o", farFuture, map[string]int64{"input": 1_000_000, "input_cached_tokens": 1_000_000, "output": 1_000_000, "total": 3_000_000})
	assert.InDelta(t, 2.5, got.Details["input"], 1e-9)
	assert.InDelta(t, 1.25, got.Details["input_cached_tokens"], 1e-9)
	assert.InDelta(t, 10, got.Details["output"], 1e-9)
	assert.InDelta(t, 13.75, got.Total, 1e-9)
	// Before the alias moved, gpt-4o cost $5 / $15.
	got = cost("gpt-4o", time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC), map[string]int64{"input": 1_000_000, "output": 1_000_000})
	assert.InDelta(t, 20, got.Total, 1e-9)
	// Claude Sonnet 4.5: writes 1.25x, 1h writes 2x, reads 0.1x of $3.
	got = cost("claude-sonnet-4-5", farFuture, map[string]int64{
		"input": 10_000, "input_cache_creation": 10_000, "input_cache_creation_1h": 10_000, "input_cached_tokens": 10_000,
	})
	assert.InDelta(t, 0.03, got.Details["input"], 1e-9)
	assert.InDelta(t, 0.0375, got.Details["input_cache_creation"], 1e-9)
	assert.InDelta(t, 0.06, got.Details["input_cache_creation_1h"], 1e-9)
	assert.InDelta(t, 0.003, got.Details["input_cached_tokens"], 1e-9)
	assert.Equal(t, "Standard", got.Tier)
	// Over 200k prompt tokens Gemini 2.5 Pro switches to its large-context prices.
	got = cost("gemini-2.5-pro", farFuture, map[string]int64{"input": 250_000, "output": 1_000})
	assert.Equal(t, "Large context", got.Tier)
	assert.InDelta(t, 250_000*2.5e-6+1_000*15e-6, got.Total, 1e-9)
}
