package mapping

import (
	"slices"
	"strings"
)

// Canonical usage keys.
const (
	UsageInput            = "input"
	UsageOutput           = "output"
	UsageTotal            = "total"
	UsageInputCached      = "input_cached_tokens"
	UsageInputCacheCreate = "input_cache_creation"
	UsageInputAudio       = "input_audio_tokens"
	UsageOutputReasoning  = "output_reasoning_tokens"
	UsageOutputAudio      = "output_audio_tokens"
)

const (
	inputDetailPrefix      = "input_"
	outputDetailPrefix     = "output_"
	providerDetailsStrip   = "details."
	usageKeySeparator      = "."
	maxUsageFlattenDepth   = 4
	maxUsageFlattenMembers = 256
)

// The alias lists give, per canonical key, the provider keys that carry it, in
// order of precedence. The input and output aliases are totals that include
// their details (cached, reasoning, ...); the canonical input and output
// already exclude them.
var (
	inputAliases  = []string{"prompt_tokens", "input_tokens", "prompt", "promptTokens", "inputTokens"}
	outputAliases = []string{
		"completion_tokens", "output_tokens", "completion", "completionTokens", "outputTokens",
	}
	totalAliases  = []string{UsageTotal, "total_tokens", "totalTokens"}
	detailAliases = [...]struct {
		key     string
		aliases []string
	}{
		{UsageInputCached, []string{
			UsageInputCached, "cache_read.input_tokens", "cache_read_input_tokens", "cache_read_tokens",
			"details.cache_read_tokens", "details.cache_read_input_tokens", "prompt_details.cache_read",
			"prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens", "input_tokens.cached",
			"cachedInputTokens", "cacheReadInputTokens",
		}},
		{UsageInputCacheCreate, []string{
			UsageInputCacheCreate, "cache_creation.input_tokens", "cache_creation_input_tokens",
			"cache_write.input_tokens", "cache_write_tokens", "cache_write_input_tokens", "details.cache_creation_input_tokens",
			"details.cache_write_tokens", "prompt_details.cache_write", "cacheCreationInputTokens",
		}},
		{UsageInputAudio, []string{
			UsageInputAudio, "prompt_details.audio", "prompt_tokens_details.audio_tokens",
			"input_tokens_details.audio_tokens",
		}},
		{UsageOutputReasoning, []string{
			UsageOutputReasoning, "reasoning.output_tokens", "completion_details.reasoning",
			"completion_tokens_details.reasoning_tokens", "output_tokens_details.reasoning_tokens",
			"output_tokens.reasoning", "reasoning_tokens", "reasoningTokens",
		}},
		{UsageOutputAudio, []string{
			UsageOutputAudio, "completion_details.audio", "completion_tokens_details.audio_tokens",
			"output_tokens_details.audio_tokens",
		}},
	}
	// Remaining OpenAI-style detail objects become input_<k> / output_<k>.
	detailPrefixes = []struct{ prefix, to string }{
		{"prompt_tokens_details.", inputDetailPrefix},
		{"input_tokens_details.", inputDetailPrefix},
		{"completion_tokens_details.", outputDetailPrefix},
		{"output_tokens_details.", outputDetailPrefix},
	}
)

// Alias groups: the canonical input and output, the provider totals that
// stand for them, total, then one group per detail in detailAliases.
const (
	groupInput = iota
	groupInputTotal
	groupOutput
	groupOutputTotal
	groupTotal
	groupDetails
)

type usageAlias struct{ group, rank int }

// usageAliases maps every alias key to its group and its precedence there.
var usageAliases = func() map[string]usageAlias {
	m := make(map[string]usageAlias)
	add := func(group int, keys []string) {
		for rank, k := range keys {
			m[k] = usageAlias{group, rank}
		}
	}
	add(groupInput, []string{UsageInput})
	add(groupInputTotal, inputAliases)
	add(groupOutput, []string{UsageOutput})
	add(groupOutputTotal, outputAliases)
	add(groupTotal, totalAliases)
	for i, d := range detailAliases {
		add(groupDetails+i, d.aliases)
	}
	return m
}()

// NormalizeUsage turns provider-specific usage keys into the canonical ones:
// input, output, total, input_cached_tokens, input_cache_creation,
// input_audio_tokens, output_reasoning_tokens, output_audio_tokens, and
// input_<k>/output_<k> for other OpenAI-style details. Nested provider
// objects are expected flattened with "." (prompt_tokens_details.cached_tokens).
//
// Provider totals (prompt_tokens, input_tokens, ...) include their details,
// so when input or output comes from such a key, every input_* or output_*
// detail is subtracted from it (never below zero); a canonical input or
// output is taken as already exclusive. Other keys are kept ("details."
// removed), negative values dropped, and total, when absent, is the sum of
// all values. The input map is not modified; nil or empty input gives nil.
func NormalizeUsage(raw map[string]int64) map[string]int64 {
	var pairs usagePairs
	for k, n := range raw {
		pairs = append(pairs, usagePair{k, n})
	}
	return normalizeUsage(pairs)
}

// usagePair is one raw usage count; the mapping collects them in a slice,
// which for the handful of keys a span has is cheaper than a map.
type usagePair struct {
	key string
	n   int64
}

type usagePairs []usagePair

// set adds or replaces a count (a repeated key keeps its last value).
func (ps *usagePairs) set(key string, n int64) {
	for i := range *ps {
		if (*ps)[i].key == key {
			(*ps)[i].n = n
			return
		}
	}
	*ps = append(*ps, usagePair{key, n})
}

// setCount sets key to f when f is a whole number: counts are not fractions.
func (ps *usagePairs) setCount(key string, f float64) {
	if f == float64(int64(f)) {
		ps.set(key, int64(f))
	}
}

func (ps usagePairs) get(key string) (int64, bool) {
	for _, p := range ps {
		if p.key == key {
			return p.n, true
		}
	}
	return 0, false
}

// normalizeUsage is NormalizeUsage over unique keys.
func normalizeUsage(raw usagePairs) map[string]int64 {
	if len(raw) == 0 {
		return nil
	}
	type pick struct {
		n, rank int64
		ok      bool
	}
	var best [groupDetails + len(detailAliases)]pick
	out := make(map[string]int64, len(raw)+1)
	renamed := false
	for _, p := range raw {
		if p.n < 0 {
			continue
		}
		if al, ok := usageAliases[p.key]; ok {
			// Of several aliases the first in precedence wins; the rest are dropped.
			if b := &best[al.group]; !b.ok || int64(al.rank) < b.rank {
				*b = pick{p.n, int64(al.rank), true}
			}
			continue
		}
		if renameUsageKey(p.key) != p.key {
			renamed = true
			continue
		}
		out[p.key] = p.n
	}
	if renamed { // after the keys as given, so that those win a clash
		for _, p := range raw {
			if _, alias := usageAliases[p.key]; alias || p.n < 0 {
				continue
			}
			if key := renameUsageKey(p.key); key != p.key {
				if _, taken := out[key]; !taken {
					out[key] = p.n
				}
			}
		}
	}
	for i, d := range detailAliases {
		if b := best[groupDetails+i]; b.ok {
			out[d.key] = b.n
		}
	}
	input, hasInput := best[groupInput].n, best[groupInput].ok
	inputInclusive := !hasInput && best[groupInputTotal].ok
	if inputInclusive {
		input, hasInput = best[groupInputTotal].n, true
	}
	output, hasOutput := best[groupOutput].n, best[groupOutput].ok
	outputInclusive := !hasOutput && best[groupOutputTotal].ok
	if outputInclusive {
		output, hasOutput = best[groupOutputTotal].n, true
	}
	total, hasTotal := best[groupTotal].n, best[groupTotal].ok

	var inputDetails, outputDetails int64
	for k, n := range out {
		switch {
		case strings.HasPrefix(k, inputDetailPrefix):
			inputDetails += n
		case strings.HasPrefix(k, outputDetailPrefix):
			outputDetails += n
		}
	}
	if hasInput {
		if inputInclusive {
			input = max(input-inputDetails, 0)
		}
		out[UsageInput] = input
	}
	if hasOutput {
		if outputInclusive {
			output = max(output-outputDetails, 0)
		}
		out[UsageOutput] = output
	}
	if !hasTotal && len(out) > 0 {
		for _, n := range out {
			total += n
		}
		hasTotal = true
	}
	if hasTotal {
		out[UsageTotal] = total
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// renameUsageKey drops the "details." prefix and turns the remaining
// OpenAI-style detail keys into input_<k> / output_<k>.
func renameUsageKey(k string) string {
	for _, p := range detailPrefixes {
		if rest, ok := strings.CutPrefix(k, p.prefix); ok {
			return p.to + rest
		}
	}
	return strings.TrimPrefix(k, providerDetailsStrip)
}

// usage extracts usage details: the Langfuse JSON first, then the Vercel AI
// SDK keys for its scope, then the generic gen_ai.usage.* and
// llm.token_count.* keys.
func (m *mapper) usage() map[string]int64 {
	a := &m.a
	raw := m.usageRaw[:0]
	defer func() { m.usageRaw = raw[:0] }()
	if s := a.obsUsage.str(); s != "" && usageObject(&raw, s) {
		if u := normalizeUsage(raw); u != nil {
			return u
		}
		raw = raw[:0]
	}
	if a.families&(famGenAIUsage|famLLMTokens) == 0 && (m.scope.name != "ai" || !a.aiUsageTokens.ok) {
		return nil
	}
	if m.scope.name == "ai" {
		m.vercelUsage(&raw)
	} else {
		for k, v := range m.span.Attributes().All() {
			var key string
			switch {
			case strings.HasPrefix(k, prefixGenAIUsage):
				key = k[len(prefixGenAIUsage):]
				if key == "cost" {
					continue
				}
			case strings.HasPrefix(k, prefixLLMTokens):
				key = k[len(prefixLLMTokens):]
			default:
				continue
			}
			if n, ok := intOf(attr{v: v, ok: true}); ok {
				raw.set(key, n)
			}
		}
	}
	return normalizeUsage(raw)
}

// vercelUsage collects the AI SDK's usage. Only the provider-call spans carry
// gen_ai.usage.*; the enclosing ai.* spans repeat their children's sum in
// ai.usage.* and are left without usage so that nothing is counted twice.
func (m *mapper) vercelUsage(raw *usagePairs) {
	a := &m.a
	// An embedding call reports its input tokens as ai.usage.tokens alone.
	if slices.Contains(vercelEmbeddingOps, a.aiOperationID.str()) {
		if n, ok := intOf(a.aiUsageTokens); ok {
			raw.set("input_tokens", n)
		}
		return
	}
	attrs := m.span.Attributes()
	for _, k := range [...][2]string{
		{"gen_ai.usage.prompt_tokens", "prompt_tokens"},
		{"gen_ai.usage.input_tokens", "input_tokens"},
		{"gen_ai.usage.completion_tokens", "completion_tokens"},
		{"gen_ai.usage.output_tokens", "output_tokens"},
	} {
		if n, ok := intOf(get(attrs, k[0])); ok {
			raw.set(k[1], n)
		}
	}
	if len(*raw) == 0 {
		return
	}
	for _, k := range [...]struct {
		a   attr
		key string
	}{
		{a.aiUsageTokens, "total_tokens"},
		{a.aiUsageCachedInput, UsageInputCached},
		{a.aiUsageReasoning, UsageOutputReasoning},
	} {
		if n, ok := intOf(k.a); ok {
			raw.set(k.key, n)
		}
	}
	if s := a.aiProviderMetadata.str(); s != "" && isJSONObject(s) {
		var meta usagePairs
		flattenNumbers(&meta, "", s, 0)
		for _, k := range [...][2]string{
			{"openai.cachedPromptTokens", UsageInputCached},
			{"openai.acceptedPredictionTokens", "accepted_prediction_tokens"},
			{"openai.rejectedPredictionTokens", "rejected_prediction_tokens"},
			{"openai.reasoningTokens", UsageOutputReasoning},
			{"anthropic.usage.cache_creation_input_tokens", UsageInputCacheCreate},
			{"anthropic.usage.cache_read_input_tokens", UsageInputCached},
			{"anthropic.usage.cache_creation.ephemeral_5m_input_tokens", "input_cache_creation_5m"},
			{"anthropic.usage.cache_creation.ephemeral_1h_input_tokens", "input_cache_creation_1h"},
			{"bedrock.usage.cacheReadInputTokens", "input_cache_read"},
			{"bedrock.usage.cacheWriteInputTokens", "input_cache_write"},
			{"bedrock.usage.cacheCreationInputTokens", UsageInputCacheCreate},
		} {
			if n, ok := meta.get(k[0]); ok {
				if _, set := raw.get(k[1]); !set {
					raw.set(k[1], n)
				}
			}
		}
		// Anthropic reports cache creation in total and per TTL; keep the
		// per-TTL counts and only the remainder in the total key.
		n5, _ := raw.get("input_cache_creation_5m")
		n1, _ := raw.get("input_cache_creation_1h")
		if n5+n1 > 0 {
			total, _ := raw.get(UsageInputCacheCreate)
			raw.set(UsageInputCacheCreate, max(total-n5-n1, 0))
		}
	}
}

// flattenNumbers collects the numbers (or numeric strings) of a JSON object
// into dst with dotted keys for nested objects.
func flattenNumbers(dst *usagePairs, prefix, obj string, depth int) {
	if depth > maxUsageFlattenDepth {
		return
	}
	eachMember(obj, func(k, raw string) {
		if len(*dst) >= maxUsageFlattenMembers {
			return
		}
		key := k
		if prefix != "" {
			key = prefix + usageKeySeparator + k
		}
		if raw[0] == '{' {
			flattenNumbers(dst, key, raw, depth+1)
			return
		}
		if f, ok := rawNumber(raw); ok {
			dst.setCount(key, f)
		}
	})
}

// usageObject reads the whole-number counts of the JSON object s into dst,
// flattening nested objects; it reports false when s is not an object.
func usageObject(dst *usagePairs, s string) bool {
	var buf [8]numberMember
	if members, ok := appendFlatNumbers(buf[:0], s); ok {
		for _, mb := range members {
			dst.setCount(mb.key, mb.n)
		}
		return true
	}
	if !isJSONObject(s) {
		return false
	}
	flattenNumbers(dst, "", s, 0)
	return true
}

// cost extracts cost details in USD.
func (m *mapper) cost() map[string]float64 {
	a := &m.a
	if s := a.obsCost.str(); s != "" {
		var buf [8]numberMember
		members, ok := appendFlatNumbers(buf[:0], s)
		if !ok {
			members = members[:0]
			if isJSONObject(s) {
				eachMember(s, func(k, raw string) {
					if raw[0] == '"' {
						return // only numbers are costs
					}
					if f, ok := rawNumber(raw); ok {
						members = append(members, numberMember{k, f})
					}
				})
			}
		}
		var out map[string]float64
		for _, mb := range members {
			if mb.n >= 0 {
				if out == nil {
					out = make(map[string]float64, len(members))
				}
				out[mb.key] = mb.n
			}
		}
		if out != nil {
			return out
		}
	}
	for _, at := range [...]attr{a.genaiUsageCost, a.llmCostTotal} {
		if !at.truthy() {
			continue
		}
		if f, ok := floatOf(at); ok && f >= 0 {
			return map[string]float64{UsageTotal: f}
		}
	}
	return nil
}
