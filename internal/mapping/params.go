package mapping

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// modelParameters returns the model parameters as a JSON object, "" when the
// span has none. Values other than strings and numbers are stored as JSON
// text, as Langfuse keeps parameters a flat map.
func (m *mapper) modelParameters() string {
	a := &m.a
	b := &m.obj
	b.reset()
	explicit := a.obsModelParams.str()
	if !isJSONObject(explicit) {
		explicit = ""
	}
	if explicit != "" && m.scope.name != "ai" {
		m.addSanitized(b, explicit)
		return m.objOrEmpty(b)
	}
	if m.scope.name == "ai" {
		m.vercelSettings(b)
		if explicit != "" {
			m.addSanitized(b, explicit)
		}
		if !b.empty() {
			return m.objOrEmpty(b)
		}
	}
	for _, at := range [...]attr{a.llmInvocationParameters, a.modelConfig} {
		if s := at.str(); s != "" && isJSONObject(s) {
			m.addSanitized(b, s)
			return m.objOrEmpty(b)
		}
	}
	if a.families&(famGenAIRequest|famLLMInvParams) != 0 {
		for k, v := range m.span.Attributes().All() {
			var key string
			switch {
			case strings.HasPrefix(k, prefixGenAIRequest):
				key = k[len(prefixGenAIRequest):]
			case strings.HasPrefix(k, prefixLLMInvParams):
				key = k[len(prefixLLMInvParams):]
			default:
				continue
			}
			if key == "model" {
				continue
			}
			m.addSanitizedValue(b, key, v)
		}
	}
	return m.objOrEmpty(b)
}

func (m *mapper) objOrEmpty(b *objBuilder) string {
	if b.empty() {
		return ""
	}
	return m.objString(b, &m.lastMPs)
}

// vercelSettings adds the Vercel AI SDK call settings, as text.
func (m *mapper) vercelSettings(b *objBuilder) {
	a := &m.a
	for _, s := range [...]struct {
		key string
		a   attr
	}{
		{"maxSteps", a.aiMaxSteps},
		{"toolChoice", a.aiToolChoice},
		{"maxTokens", a.genaiMaxTokens},
		{"finishReason", pick(a.genaiFinishReasons, a.genaiFinishReasonLegacy)},
		{"system", pick(a.genaiSystem, a.aiModelProvider)},
		{"maxRetries", a.aiMaxRetries},
		{"mode", a.aiMode},
		{"temperature", a.genaiTemperature},
	} {
		if !s.a.ok {
			continue
		}
		m.tmp = jsString(m.tmp[:0], s.a.v)
		b.addString(s.key, unsafeString(m.tmp))
	}
	if meta := a.aiProviderMetadata.str(); isJSONObject(meta) {
		if tier, ok := member(meta, "openai", "serviceTier"); ok && tier[0] == '"' {
			b.addString("service_tier", rawString(tier))
			return
		}
	}
	if a.genaiServiceTier.ok {
		m.tmp = jsString(m.tmp[:0], a.genaiServiceTier.v)
		b.addString("service_tier", unsafeString(m.tmp))
	}
}

// addSanitized adds the members of a JSON object, turning values other than
// strings and numbers into JSON text.
func (m *mapper) addSanitized(b *objBuilder, obj string) {
	eachMember(obj, func(k, raw string) {
		switch raw[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			b.addRaw(k, raw)
		default:
			b.addString(k, raw)
		}
	})
}

func (m *mapper) addSanitizedValue(b *objBuilder, key string, v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr, pcommon.ValueTypeInt, pcommon.ValueTypeDouble:
		b.addValue(key, v)
	default:
		m.tmp = appendValue(m.tmp[:0], v)
		b.addString(key, unsafeString(m.tmp))
	}
}
