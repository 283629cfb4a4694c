package pricing

import (
	"strings"
)

// keyAliases names, for usage keys that some producers spell differently
// from the canonical keys, the canonical key whose price they take when they
// have none of their own. The usage itself keeps its keys.
var keyAliases = map[string]string{
	"input_cache_read":          "input_cached_tokens",
	"input_cache_write":         "input_cache_creation",
	"input_cache_creation_5m":   "input_cache_creation",
	"input_cache_creation_1h":   "input_cache_creation",
	"input_cached_audio_tokens": "input_cached_tokens",
	"input_cached_text_tokens":  "input_cached_tokens",
}

// Cost is the cost of one usage under one definition.
type Cost struct {
	// Details holds the cost in USD of each priced usage key, and "total".
	Details map[string]float64
	Total   float64
	// Tier is the name of the pricing tier that applied.
	Tier string
}

// Cost prices usage (normalised usage keys to units). ok is false when no
// key of the usage has a price, in which case the cost is unknown.
func (p *Price) Cost(usage map[string]int64) (c Cost, ok bool) {
	if len(usage) == 0 {
		return Cost{}, false
	}
	tier := p.tierFor(usage)
	details := make(map[string]float64, len(usage))
	var sum float64
	for k, n := range usage {
		if k == KeyTotal {
			continue
		}
		price, found := priceOf(tier.Prices, k)
		if !found {
			continue
		}
		v := price * float64(n)
		details[k] = v
		sum += v
		ok = true
	}
	total := sum
	if price, found := tier.Prices[KeyTotal]; found {
		if n, has := usage[KeyTotal]; has {
			total = price * float64(n)
			ok = true
		}
	}
	if !ok {
		return Cost{}, false
	}
	details[KeyTotal] = total
	return Cost{Details: details, Total: total, Tier: tier.Name}, true
}

// priceOf resolves the price of a usage key: its own, its alias's, or for
// an input or output detail the input or output price.
func priceOf(prices map[string]float64, key string) (float64, bool) {
	if p, ok := prices[key]; ok {
		return p, true
	}
	if alias, ok := keyAliases[key]; ok {
		if p, ok := prices[alias]; ok {
			return p, true
		}
	}
	switch {
	case strings.HasPrefix(key, KeyInput+"_"):
		p, ok := prices[KeyInput]
		return p, ok
	case strings.HasPrefix(key, KeyOutput+"_"):
		p, ok := prices[KeyOutput]
		return p, ok
	}
	return 0, false
}

// tierFor returns the first conditional tier whose conditions all hold,
// else the default tier, which compile sorts last.
func (p *Price) tierFor(usage map[string]int64) *Tier {
	last := len(p.tiers) - 1
	for i := range p.tiers[:last] {
		if p.tiers[i].matches(usage) {
			return p.tiers[i].tier
		}
	}
	return p.tiers[last].tier
}

func (t *compiledTier) matches(usage map[string]int64) bool {
	for _, c := range t.conds {
		var sum float64
		for k, n := range usage {
			if c.matches(k) {
				sum += float64(n)
			}
		}
		if !compare(sum, c.op, c.value) {
			return false
		}
	}
	return true
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case OpGT:
		return a > b
	case OpGTE:
		return a >= b
	case OpLT:
		return a < b
	case OpLTE:
		return a <= b
	case OpEQ:
		return a == b
	default: // OpNEQ; compile accepts no other operator
		return a != b
	}
}
