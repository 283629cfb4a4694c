package pricing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func price(t *testing.T, m Model) *Price {
	t.Helper()
	p, err := compile(m)
	require.NoError(t, err)
	return p
}

func TestCostPerKeyAndTotal(t *testing.T) {
	p := price(t, flat("m", "m", "^m$", map[string]float64{
		"input": 1e-6, "output": 4e-6, "input_cached_tokens": 0.1e-6, "input_cache_creation": 1.25e-6,
	}))
	got, ok := p.Cost(map[string]int64{
		"input": 1000, "output": 500, "input_cached_tokens": 2000, "total": 3500,
		"output_reasoning_tokens": 100,  // no own price: output's
		"input_cache_read":        1000, // alias of input_cached_tokens
		"input_cache_creation_5m": 400,  // alias of input_cache_creation
		"web_search_queries":      3,    // no price, not a token detail
	})
	require.True(t, ok)
	want := map[string]float64{
		"input":                   1000 * 1e-6,
		"output":                  500 * 4e-6,
		"input_cached_tokens":     2000 * 0.1e-6,
		"output_reasoning_tokens": 100 * 4e-6,
		"input_cache_read":        1000 * 0.1e-6,
		"input_cache_creation_5m": 400 * 1.25e-6,
	}
	var sum float64
	for k, v := range want {
		assert.InDelta(t, v, got.Details[k], 1e-15, k)
		sum += v
	}
	assert.NotContains(t, got.Details, "web_search_queries")
	assert.InDelta(t, sum, got.Details["total"], 1e-15)
	assert.InDelta(t, sum, got.Total, 1e-15)
	assert.Equal(t, "Standard", got.Tier)
}

func TestCostTotalPrice(t *testing.T) {
	p := price(t, flat("m", "m", "^m$", map[string]float64{"total": 2e-6}))
	got, ok := p.Cost(map[string]int64{"input": 10, "output": 5, "total": 15})
	require.True(t, ok)
	assert.InDelta(t, 30e-6, got.Total, 1e-15)
	assert.Equal(t, map[string]float64{"total": got.Total}, got.Details)
}

func TestCostUnknown(t *testing.T) {
	p := price(t, flat("m", "m", "^m$", map[string]float64{"input": 1e-6}))
	_, ok := p.Cost(map[string]int64{"characters": 10, "total": 10})
	assert.False(t, ok, "no priced key: unknown, not zero")
	_, ok = p.Cost(nil)
	assert.False(t, ok)
	got, ok := p.Cost(map[string]int64{"input": 0, "total": 0})
	require.True(t, ok, "a priced key with no units costs a known 0")
	assert.Zero(t, got.Total)
}

func TestTierSelection(t *testing.T) {
	m := flat("m", "m", "^m$", map[string]float64{"input": 1})
	m.Tiers = append(m.Tiers,
		Tier{Name: "Huge", Priority: 2, Prices: map[string]float64{"input": 3},
			Conditions: []Condition{{UsageDetailPattern: "^input", Operator: OpGTE, Value: 1000}}},
		Tier{Name: "Big", Priority: 1, Prices: map[string]float64{"input": 2},
			Conditions: []Condition{
				{UsageDetailPattern: "^input", Operator: OpGT, Value: 100},
				{UsageDetailPattern: "^INPUT$", Operator: OpLT, Value: 500, CaseSensitive: true},
			}},
	)
	p := price(t, m)
	for _, tc := range []struct {
		usage map[string]int64
		tier  string
	}{
		{map[string]int64{"input": 50, "input_cached_tokens": 50}, "Standard"}, // sum 100, not > 100
		{map[string]int64{"input": 60, "input_cached_tokens": 50}, "Big"},      // "^INPUT$" matches no key: sum 0 < 500
		{map[string]int64{"input": 900, "input_cached_tokens": 100}, "Big"},    // priority 1 is tried first
		{map[string]int64{"input": 1000, "output": 1}, "Big"},
	} {
		got, ok := p.Cost(tc.usage)
		require.True(t, ok)
		assert.Equal(t, tc.tier, got.Tier, "%v", tc.usage)
	}

	eq := flat("e", "e", "^e$", map[string]float64{"input": 1})
	eq.Tiers = append(eq.Tiers,
		Tier{Name: "Ten", Priority: 1, Prices: map[string]float64{"input": 2},
			Conditions: []Condition{{UsageDetailPattern: "input", Operator: OpEQ, Value: 10}}},
		Tier{Name: "NotZero", Priority: 2, Prices: map[string]float64{"input": 3},
			Conditions: []Condition{{UsageDetailPattern: "input", Operator: OpNEQ, Value: 0}, {UsageDetailPattern: "input", Operator: OpLTE, Value: 20}}},
	)
	pe := price(t, eq)
	for in, tier := range map[int64]string{10: "Ten", 20: "NotZero", 21: "Standard", 0: "Standard"} {
		got, ok := pe.Cost(map[string]int64{"input": in})
		require.True(t, ok)
		assert.Equal(t, tier, got.Tier, "input %d", in)
	}
}
