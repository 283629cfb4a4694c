package mapping

import (
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// attr is one looked-up attribute value; ok is false when the span lacks it.
type attr struct {
	v  pcommon.Value
	ok bool
}

func (a attr) isStr() bool { return a.ok && a.v.Type() == pcommon.ValueTypeStr }

// str is the value when it is a string, else "".
func (a attr) str() string {
	if a.isStr() {
		return a.v.Str()
	}
	return ""
}

// text is the value as text: strings verbatim, anything else as JSON.
func (a attr) text() string {
	if !a.ok {
		return ""
	}
	if a.v.Type() == pcommon.ValueTypeStr {
		return a.v.Str()
	}
	return string(appendValue(nil, a.v))
}

// truthy follows JavaScript truthiness, which is what decides precedence in
// the Langfuse rules ("a || b").
func (a attr) truthy() bool {
	if !a.ok {
		return false
	}
	switch a.v.Type() {
	case pcommon.ValueTypeStr:
		return a.v.Str() != ""
	case pcommon.ValueTypeInt:
		return a.v.Int() != 0
	case pcommon.ValueTypeDouble:
		d := a.v.Double()
		return d != 0 && !math.IsNaN(d)
	case pcommon.ValueTypeBool:
		return a.v.Bool()
	case pcommon.ValueTypeEmpty:
		return false
	default:
		return true
	}
}

// meaningful is "present" in the observation type rules: not empty text,
// not an empty array or map.
func (a attr) meaningful() bool {
	if !a.ok {
		return false
	}
	switch a.v.Type() {
	case pcommon.ValueTypeStr:
		return a.v.Str() != ""
	case pcommon.ValueTypeSlice:
		return a.v.Slice().Len() > 0
	case pcommon.ValueTypeMap:
		return a.v.Map().Len() > 0
	case pcommon.ValueTypeEmpty:
		return false
	default:
		return true
	}
}

// isTrue accepts a boolean true or the text "true".
func (a attr) isTrue() bool {
	if !a.ok {
		return false
	}
	if a.v.Type() == pcommon.ValueTypeBool {
		return a.v.Bool()
	}
	return a.v.Type() == pcommon.ValueTypeStr && a.v.Str() == "true"
}

// Attribute key families, recorded while classifying so that later passes
// over the attributes run only when a span has such keys.
const (
	famObsMeta uint32 = 1 << iota
	famTraceMeta
	famLegacyMeta
	famAIMeta
	famGenAIUsage
	famLLMTokens
	famAIUsage
	famGenAIRequest
	famLLMInvParams
	famGenAIPrompt
	famGenAICompletion
	famLLMInMsgs
	famLLMOutMsgs
)

const (
	prefixObsMeta       = "langfuse.observation.metadata."
	prefixTraceMeta     = "langfuse.trace.metadata."
	prefixLegacyMeta    = "langfuse.metadata."
	prefixAIMeta        = "ai.telemetry.metadata."
	prefixGenAIUsage    = "gen_ai.usage."
	prefixLLMTokens     = "llm.token_count."
	prefixAIUsage       = "ai.usage."
	prefixGenAIRequest  = "gen_ai.request."
	prefixLLMInvParams  = "llm.invocation_parameters."
	prefixGenAIPrompt   = "gen_ai.prompt."
	prefixGenAICompl    = "gen_ai.completion."
	prefixLLMInMsgs     = "llm.input_messages."
	prefixLLMOutMsgs    = "llm.output_messages."
	prefixInternal      = "glassbox."
	sampleRateAttribute = "glassbox.sample_rate"
)

// spanAttrs holds every span attribute the rules look at by exact key.
type spanAttrs struct {
	// Trace level.
	traceName, userID, lfUserID, sessionID, lfSessionID, conversationID attr
	traceTags, lfTags, tracePublic, lfPublic, traceMetadata, lfMetadata  attr
	traceInput, traceOutput, asRoot                                      attr
	obsMetaUserID, obsMetaSessionID, obsMetaTags                         attr
	traceMetaUserID, traceMetaSessionID, traceMetaTags                   attr
	aiMetaUserID, aiMetaSessionID, aiMetaTags, aiMetaPrompt, tagTags     attr

	// Observation level, Langfuse keys.
	obsType, obsMetadata, obsLevel, obsStatusMessage, obsInput, obsOutput attr
	obsCompletionStart, obsModel, obsModelParams, obsUsage, obsCost       attr
	obsPromptName, obsPromptVersion, lfPromptName, lfPromptVersion        attr
	environment, deployEnvName, deployEnv, release, version               attr

	// Type, name and model.
	oiKind, genaiOperation, genkitSubtype, genkitName, operationName, aiOperationID attr
	aiModelID, genaiRequestModel, genaiResponseModel, llmModelName, llmResponseModel attr
	model, genaiToolName, genaiToolCallID, flueToolName, flueToolCallID              attr
	flueTaskID, flueTaskAgent, logfireMsg, aiToolCallName, aiFunctionID              attr
	aiMsToFirstChunk, aiStreamMsToFirstChunk                                         attr

	// Input and output.
	aiPromptMessages, aiPrompt, aiToolCallArgs, aiResponseText, aiResultText        attr
	aiToolCallResult, aiResponseObject, aiResultObject, aiResponseToolCalls         attr
	aiResultToolCalls, mlflowInputs, mlflowOutputs, traceloopInput, traceloopOutput attr
	inputValue, outputValue, input, output, toolArguments, toolResponse             attr
	genaiInputMessages, genaiOutputMessages, genaiSystemInstructions                attr
	genaiToolCallArgs, genaiToolCallResult, genaiPrompt, genaiCompletion            attr

	// Model parameters.
	aiMaxSteps, aiToolChoice, aiMaxRetries, aiMode, aiModelProvider                   attr
	genaiMaxTokens, genaiTemperature, genaiServiceTier, genaiFinishReasons            attr
	genaiFinishReasonLegacy, genaiSystem, aiProviderMetadata, llmInvocationParameters attr
	modelConfig                                                                       attr

	// Usage, cost and the rest.
	aiUsageTokens, aiUsageCachedInput, aiUsageReasoning, genaiUsageCost, llmCostTotal attr
	aiPromptTools, sampleRate                                                         attr

	families uint32
}

// set records one attribute. It reports whether the key is consumed as
// input/output (or is internal), in which case it is left out of the
// "attributes" metadata object.
func (a *spanAttrs) set(k string, v pcommon.Value) (hidden bool) {
	at := attr{v: v, ok: true}
	switch k {
	case "langfuse.trace.name":
		a.traceName = at
	case "user.id":
		a.userID = at
	case "langfuse.user.id":
		a.lfUserID = at
	case "session.id":
		a.sessionID = at
	case "langfuse.session.id":
		a.lfSessionID = at
	case "gen_ai.conversation.id":
		a.conversationID = at
	case "langfuse.trace.tags":
		a.traceTags = at
	case "langfuse.tags":
		a.lfTags = at
	case "langfuse.trace.public":
		a.tracePublic = at
	case "langfuse.public":
		a.lfPublic = at
	case "langfuse.trace.metadata":
		a.traceMetadata = at
	case "langfuse.metadata":
		a.lfMetadata = at
	case "langfuse.trace.input":
		a.traceInput, hidden = at, true
	case "langfuse.trace.output":
		a.traceOutput, hidden = at, true
	case "langfuse.internal.as_root":
		a.asRoot = at
	case "langfuse.observation.metadata.langfuse_user_id":
		a.obsMetaUserID = at
	case "langfuse.observation.metadata.langfuse_session_id":
		a.obsMetaSessionID = at
	case "langfuse.observation.metadata.langfuse_tags":
		a.obsMetaTags = at
	case "langfuse.trace.metadata.langfuse_user_id":
		a.traceMetaUserID = at
	case "langfuse.trace.metadata.langfuse_session_id":
		a.traceMetaSessionID = at
	case "langfuse.trace.metadata.langfuse_tags":
		a.traceMetaTags = at
	case "ai.telemetry.metadata.userId":
		a.aiMetaUserID = at
	case "ai.telemetry.metadata.sessionId":
		a.aiMetaSessionID = at
	case "ai.telemetry.metadata.tags":
		a.aiMetaTags = at
	case "ai.telemetry.metadata.langfusePrompt":
		a.aiMetaPrompt = at
	case "tag.tags":
		a.tagTags = at

	case "langfuse.observation.type":
		a.obsType = at
	case "langfuse.observation.metadata":
		a.obsMetadata = at
	case "langfuse.observation.level":
		a.obsLevel = at
	case "langfuse.observation.status_message":
		a.obsStatusMessage = at
	case "langfuse.observation.input":
		a.obsInput, hidden = at, true
	case "langfuse.observation.output":
		a.obsOutput, hidden = at, true
	case "langfuse.observation.completion_start_time":
		a.obsCompletionStart = at
	case "langfuse.observation.model.name":
		a.obsModel = at
	case "langfuse.observation.model.parameters":
		a.obsModelParams = at
	case "langfuse.observation.usage_details":
		a.obsUsage = at
	case "langfuse.observation.cost_details":
		a.obsCost = at
	case "langfuse.observation.prompt.name":
		a.obsPromptName = at
	case "langfuse.observation.prompt.version":
		a.obsPromptVersion = at
	case "langfuse.prompt.name":
		a.lfPromptName = at
	case "langfuse.prompt.version":
		a.lfPromptVersion = at
	case "langfuse.environment":
		a.environment = at
	case "deployment.environment.name":
		a.deployEnvName = at
	case "deployment.environment":
		a.deployEnv = at
	case "langfuse.release":
		a.release = at
	case "langfuse.version":
		a.version = at

	case "openinference.span.kind":
		a.oiKind = at
	case "gen_ai.operation.name":
		a.genaiOperation = at
	case "genkit:metadata:subtype":
		a.genkitSubtype = at
	case "genkit:name":
		a.genkitName = at
	case "operation.name":
		a.operationName = at
	case "ai.operationId":
		a.aiOperationID = at
	case "ai.model.id":
		a.aiModelID = at
	case "gen_ai.request.model":
		a.genaiRequestModel = at
	case "gen_ai.response.model":
		a.genaiResponseModel = at
	case "llm.model_name":
		a.llmModelName = at
	case "llm.response.model":
		a.llmResponseModel = at
	case "model":
		a.model = at
	case "gen_ai.tool.name":
		a.genaiToolName = at
	case "gen_ai.tool.call.id":
		a.genaiToolCallID = at
	case "flue.tool.name":
		a.flueToolName = at
	case "flue.tool.call_id":
		a.flueToolCallID = at
	case "flue.task.id":
		a.flueTaskID = at
	case "flue.task.agent":
		a.flueTaskAgent = at
	case "logfire.msg":
		a.logfireMsg = at
	case "ai.toolCall.name":
		a.aiToolCallName = at
	case "ai.telemetry.functionId":
		a.aiFunctionID = at
	case "ai.response.msToFirstChunk":
		a.aiMsToFirstChunk = at
	case "ai.stream.msToFirstChunk":
		a.aiStreamMsToFirstChunk = at

	case "ai.prompt.messages":
		a.aiPromptMessages, hidden = at, true
	case "ai.prompt":
		a.aiPrompt, hidden = at, true
	case "ai.toolCall.args":
		a.aiToolCallArgs, hidden = at, true
	case "ai.response.text":
		a.aiResponseText, hidden = at, true
	case "ai.result.text":
		a.aiResultText, hidden = at, true
	case "ai.toolCall.result":
		a.aiToolCallResult, hidden = at, true
	case "ai.response.object":
		a.aiResponseObject, hidden = at, true
	case "ai.result.object":
		a.aiResultObject, hidden = at, true
	case "ai.response.toolCalls":
		a.aiResponseToolCalls, hidden = at, true
	case "ai.result.toolCalls":
		a.aiResultToolCalls, hidden = at, true
	case "mlflow.spanInputs":
		a.mlflowInputs, hidden = at, true
	case "mlflow.spanOutputs":
		a.mlflowOutputs, hidden = at, true
	case "traceloop.entity.input":
		a.traceloopInput, hidden = at, true
	case "traceloop.entity.output":
		a.traceloopOutput, hidden = at, true
	case "input.value":
		a.inputValue, hidden = at, true
	case "output.value":
		a.outputValue, hidden = at, true
	case "input":
		a.input, hidden = at, true
	case "output":
		a.output, hidden = at, true
	case "tool_arguments":
		a.toolArguments, hidden = at, true
	case "tool_response":
		a.toolResponse, hidden = at, true
	case "gen_ai.input.messages":
		a.genaiInputMessages, hidden = at, true
	case "gen_ai.output.messages":
		a.genaiOutputMessages, hidden = at, true
	case "gen_ai.system_instructions":
		a.genaiSystemInstructions, hidden = at, true
	case "gen_ai.tool.call.arguments":
		a.genaiToolCallArgs, hidden = at, true
	case "gen_ai.tool.call.result":
		a.genaiToolCallResult, hidden = at, true
	case "gen_ai.prompt":
		a.genaiPrompt, hidden = at, true
	case "gen_ai.completion":
		a.genaiCompletion, hidden = at, true

	case "ai.settings.maxSteps":
		a.aiMaxSteps = at
	case "ai.prompt.toolChoice":
		a.aiToolChoice = at
	case "ai.settings.maxRetries":
		a.aiMaxRetries = at
	case "ai.settings.mode":
		a.aiMode = at
	case "ai.model.provider":
		a.aiModelProvider = at
	case "gen_ai.request.max_tokens":
		a.genaiMaxTokens = at
	case "gen_ai.request.temperature":
		a.genaiTemperature = at
	case "gen_ai.request.service_tier":
		a.genaiServiceTier = at
	case "gen_ai.response.finish_reasons":
		a.genaiFinishReasons = at
	case "gen_ai.finishReason":
		a.genaiFinishReasonLegacy = at
	case "gen_ai.system":
		a.genaiSystem = at
	case "ai.response.providerMetadata":
		a.aiProviderMetadata = at
	case "llm.invocation_parameters":
		a.llmInvocationParameters = at
	case "model_config":
		a.modelConfig = at

	case "ai.usage.tokens":
		a.aiUsageTokens = at
	case "ai.usage.cachedInputTokens":
		a.aiUsageCachedInput = at
	case "ai.usage.reasoningTokens":
		a.aiUsageReasoning = at
	case "gen_ai.usage.cost":
		a.genaiUsageCost = at
	case "llm.cost.total":
		a.llmCostTotal = at
	case "ai.prompt.tools":
		// Shown as metadata "tools"; kept once.
		a.aiPromptTools, hidden = at, true
	case sampleRateAttribute:
		a.sampleRate = at
	}
	return a.family(k) || hidden
}

// family records the prefix family of k and reports whether keys of that
// family are left out of the "attributes" metadata object (they are shown as
// metadata keys or rebuilt into input/output instead).
func (a *spanAttrs) family(k string) (hidden bool) {
	if len(k) < 9 {
		return false
	}
	switch k[0] {
	case 'l':
		switch {
		case strings.HasPrefix(k, prefixObsMeta):
			a.families |= famObsMeta
			return true
		case strings.HasPrefix(k, prefixTraceMeta):
			a.families |= famTraceMeta
			return true
		case strings.HasPrefix(k, prefixLegacyMeta):
			a.families |= famLegacyMeta
		case strings.HasPrefix(k, prefixLLMTokens):
			a.families |= famLLMTokens
		case strings.HasPrefix(k, prefixLLMInvParams):
			a.families |= famLLMInvParams
		case strings.HasPrefix(k, prefixLLMInMsgs):
			a.families |= famLLMInMsgs
			return true
		case strings.HasPrefix(k, prefixLLMOutMsgs):
			a.families |= famLLMOutMsgs
			return true
		}
	case 'a':
		switch {
		case strings.HasPrefix(k, prefixAIMeta):
			a.families |= famAIMeta
			return true
		case strings.HasPrefix(k, prefixAIUsage):
			a.families |= famAIUsage
		}
	case 'g':
		switch {
		case strings.HasPrefix(k, prefixGenAIUsage):
			a.families |= famGenAIUsage
		case strings.HasPrefix(k, prefixGenAIRequest):
			a.families |= famGenAIRequest
		case strings.HasPrefix(k, prefixGenAIPrompt):
			a.families |= famGenAIPrompt
			return true
		case strings.HasPrefix(k, prefixGenAICompl):
			a.families |= famGenAICompletion
			return true
		case strings.HasPrefix(k, prefixInternal):
			return true
		}
	}
	return false
}
