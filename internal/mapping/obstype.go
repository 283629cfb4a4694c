package mapping

import (
	"strings"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// observationType decides the type by trying, in Langfuse's priority order,
// each convention's rule; the first rule that applies and yields a type wins.
func (m *mapper) observationType() string {
	a := &m.a
	if m.pythonLegacyGeneration() {
		return model.TypeGeneration
	}
	if a.obsType.meaningful() {
		if t := lookupType(a.obsType.str(), langfuseTypes); t != "" {
			return t
		}
	}
	if a.oiKind.meaningful() {
		if t := lookupType(a.oiKind.str(), openInferenceKinds); t != "" {
			return t
		}
	}
	if a.genaiOperation.meaningful() {
		if t := lookupType(a.genaiOperation.str(), genAIOperations); t != "" {
			return t
		}
	}
	if a.genkitSubtype.meaningful() {
		if t := lookupType(a.genkitSubtype.str(), genkitSubtypes); t != "" {
			return t
		}
	}
	if m.pydanticAgent() {
		return model.TypeAgent
	}
	if a.traceloopKind.meaningful() {
		if t := lookupType(a.traceloopKind.str(), traceloopKinds); t != "" {
			return t
		}
	}
	if t := m.vercelType(); t != "" {
		return t
	}
	if a.genaiToolName.meaningful() || a.genaiToolCallID.meaningful() {
		return model.TypeTool
	}
	if a.flueToolName.meaningful() || a.flueToolCallID.meaningful() {
		return model.TypeTool
	}
	if a.flueTaskID.meaningful() || a.flueTaskAgent.meaningful() {
		return model.TypeAgent
	}
	if m.scope.name == "livekit-agents" {
		switch m.span.Name() {
		case "agent_turn", "start_agent_activity":
			return model.TypeAgent
		case "function_tool":
			return model.TypeTool
		}
	}
	for _, at := range [...]attr{a.obsModel, a.genaiRequestModel, a.genaiResponseModel, a.llmModelName, a.model} {
		if at.meaningful() {
			return model.TypeGeneration
		}
	}
	return model.TypeSpan
}

// pydanticAgent says whether the span is Pydantic AI's agent run, which
// names its agent and carries the run's result or message history.
func (m *mapper) pydanticAgent() bool {
	a := &m.a
	return a.pydAgentName.meaningful() && (a.pydFinalResult.ok || a.pydAllMessages.ok)
}

// pythonLegacyGeneration repairs Python SDK <= 3.3, which sent generations
// with type "span": a span carrying generation attributes is a generation.
func (m *mapper) pythonLegacyGeneration() bool {
	a := &m.a
	if !m.scope.pythonLegacy || a.obsType.str() != "span" {
		return false
	}
	return a.obsModel.ok || a.obsCost.ok || a.obsUsage.ok || a.obsCompletionStart.ok ||
		a.obsModelParams.ok || a.obsPromptName.ok || a.obsPromptVersion.ok
}

type typeMapping struct{ value, typ string }

// traceloopKinds are OpenLLMetry's span kinds; its "task" stays a span.
var traceloopKinds = []typeMapping{
	{"workflow", model.TypeChain},
	{"agent", model.TypeAgent},
	{"tool", model.TypeTool},
}

var langfuseTypes = []typeMapping{
	{"span", model.TypeSpan},
	{"generation", model.TypeGeneration},
	{"event", model.TypeEvent},
	{"embedding", model.TypeEmbedding},
	{"agent", model.TypeAgent},
	{"tool", model.TypeTool},
	{"chain", model.TypeChain},
	{"retriever", model.TypeRetriever},
	{"guardrail", model.TypeGuardrail},
	{"evaluator", model.TypeEvaluator},
}

var openInferenceKinds = []typeMapping{
	{"LLM", model.TypeGeneration},
	{"CHAIN", model.TypeChain},
	{"RETRIEVER", model.TypeRetriever},
	{"EMBEDDING", model.TypeEmbedding},
	{"AGENT", model.TypeAgent},
	{"TOOL", model.TypeTool},
	{"GUARDRAIL", model.TypeGuardrail},
	{"EVALUATOR", model.TypeEvaluator},
}

var genAIOperations = []typeMapping{
	{"chat", model.TypeGeneration},
	{"completion", model.TypeGeneration},
	{"text_completion", model.TypeGeneration},
	{"generate_content", model.TypeGeneration},
	{"generate", model.TypeGeneration},
	{"embeddings", model.TypeEmbedding},
	{"invoke_agent", model.TypeAgent},
	{"create_agent", model.TypeAgent},
	{"execute_tool", model.TypeTool},
}

var genkitSubtypes = []typeMapping{
	{"model", model.TypeGeneration},
	{"background-model", model.TypeGeneration},
	{"embedder", model.TypeEmbedding},
	{"tool", model.TypeTool},
	{"tool.v2", model.TypeTool},
	{"retriever", model.TypeRetriever},
	{"evaluator", model.TypeEvaluator},
}

// lookupType matches case-insensitively: senders disagree on case and the
// values cannot be confused.
func lookupType(v string, table []typeMapping) string {
	for _, t := range table {
		if strings.EqualFold(v, t.value) {
			return t.typ
		}
	}
	return ""
}

var (
	vercelGenerationOps = []string{
		"ai.generateText.doGenerate", "ai.streamText.doStream",
		"ai.generateObject.doGenerate", "ai.streamObject.doStream",
	}
	vercelEmbeddingOps = []string{"ai.embedMany.doEmbed", "ai.embed.doEmbed"}
	vercelToolOps      = []string{"ai.toolCall"}
)

// vercelType maps Vercel AI SDK operations: provider calls that name a model
// are generations or embeddings, tool calls are tools.
func (m *mapper) vercelType() string {
	a := &m.a
	gen := m.vercelOperation(vercelGenerationOps)
	emb := !gen && m.vercelOperation(vercelEmbeddingOps)
	if gen || emb {
		if a.obsModel.meaningful() || a.aiModelID.meaningful() ||
			a.genaiRequestModel.meaningful() || a.genaiResponseModel.meaningful() {
			if gen {
				return model.TypeGeneration
			}
			return model.TypeEmbedding
		}
		return ""
	}
	if m.vercelOperation(vercelToolOps) {
		return model.TypeTool
	}
	return ""
}

// vercelOperation reports whether operation.name starts with (the SDK appends
// the function id) or ai.operationId equals one of ops.
func (m *mapper) vercelOperation(ops []string) bool {
	name := m.a.operationName.str()
	id := m.a.aiOperationID.str()
	for _, op := range ops {
		if (name != "" && strings.HasPrefix(name, op)) || id == op {
			return true
		}
	}
	return false
}
