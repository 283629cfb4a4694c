package mapping

import (
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/glassbox-dev/glassbox/internal/model"
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
	famRetrievalDocs
	famEmbeddings
)

const (
	prefixObsMeta      = "langfuse.observation.metadata."
	prefixTraceMeta    = "langfuse.trace.metadata."
	prefixLegacyMeta   = "langfuse.metadata."
	prefixAIMeta       = "ai.telemetry.metadata."
	prefixGenAIUsage   = "gen_ai.usage."
	prefixLLMTokens    = "llm.token_count."
	prefixAIUsage      = "ai.usage."
	prefixGenAIRequest = "gen_ai.request."
	prefixLLMInvParams = "llm.invocation_parameters."
	prefixGenAIPrompt  = "gen_ai.prompt."
	prefixGenAICompl   = "gen_ai.completion."
	prefixLLMInMsgs    = "llm.input_messages."
	prefixLLMOutMsgs   = "llm.output_messages."
	prefixRetrievalDoc = "retrieval.documents."
	prefixEmbeddings   = "embedding.embeddings."
	prefixInternal     = "glassbox."
)

// spanAttrs holds every span attribute the rules look at by exact key.
type spanAttrs struct {
	// Trace level.
	traceName, userID, lfUserID, sessionID, lfSessionID, conversationID attr
	traceTags, lfTags, tracePublic, lfPublic, traceMetadata, lfMetadata attr
	traceInput, traceOutput, asRoot, appRoot                            attr
	obsMetaUserID, obsMetaSessionID, obsMetaTags                        attr
	traceMetaUserID, traceMetaSessionID, traceMetaTags                  attr
	aiMetaUserID, aiMetaSessionID, aiMetaTags, aiMetaPrompt, tagTags    attr

	// Observation level, Langfuse keys.
	obsType, obsMetadata, obsLevel, obsStatusMessage, obsInput, obsOutput attr
	obsCompletionStart, obsModel, obsModelParams, obsUsage, obsCost       attr
	obsPromptName, obsPromptVersion, lfPromptName, lfPromptVersion        attr
	environment, deployEnvName, deployEnv, release, version               attr

	// Experiment runner (langfuse.experiment.*).
	expID, expName, expDescription, expMetadata, expDatasetID attr
	expItemID, expItemExpected, expItemMetadata, expItemRoot  attr

	// Type, name and model.
	oiKind, genaiOperation, genkitSubtype, genkitName, operationName, aiOperationID  attr
	aiModelID, genaiRequestModel, genaiResponseModel, llmModelName, llmResponseModel attr
	embeddingModelName, errorType, traceloopKind                                     attr
	// Pydantic AI: the agent run's name, result and history, and the chat
	// span's messages as one JSON array of GenAI events.
	pydAgentName, pydFinalResult, pydAllMessages, pydEvents             attr
	litellmGenerationName                                               attr
	model, genaiToolName, genaiToolCallID, flueToolName, flueToolCallID attr
	flueTaskID, flueTaskAgent, logfireMsg, aiToolCallName, aiFunctionID attr
	aiMsToFirstChunk, aiStreamMsToFirstChunk, genaiTimeToFirstChunk     attr

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
	aiValues                                                                          attr
	aiPromptTools, sampleRate, usageEstimated                                         attr

	families uint32
	touched  []*attr // fields set for the current span, cleared by reset
}

// reset clears what the previous span set. Clearing only those fields keeps
// the cost independent of how many keys the mapping knows.
func (a *spanAttrs) reset() {
	for _, p := range a.touched {
		*p = attr{}
	}
	a.touched = a.touched[:0]
	a.families = 0
}

// set records one attribute and returns its key family. It reports whether
// the key is consumed as input/output (or is internal), in which case it is
// left out of the "attributes" metadata object.
func (a *spanAttrs) set(k string, v pcommon.Value) (fam uint32, hidden bool) {
	var p *attr
	switch k {
	case "langfuse.trace.name":
		p = &a.traceName
	case "user.id":
		p = &a.userID
	case "langfuse.user.id":
		p = &a.lfUserID
	case "session.id":
		p = &a.sessionID
	case "langfuse.session.id":
		p = &a.lfSessionID
	case "gen_ai.conversation.id":
		p = &a.conversationID
	case "langfuse.trace.tags":
		p = &a.traceTags
	case "langfuse.tags":
		p = &a.lfTags
	case "langfuse.trace.public":
		p = &a.tracePublic
	case "langfuse.public":
		p = &a.lfPublic
	case "langfuse.trace.metadata":
		p = &a.traceMetadata
	case "langfuse.metadata":
		p = &a.lfMetadata
	case "langfuse.trace.input":
		p, hidden = &a.traceInput, true
	case "langfuse.trace.output":
		p, hidden = &a.traceOutput, true
	case "langfuse.internal.as_root":
		p = &a.asRoot
	case "langfuse.internal.is_app_root":
		p = &a.appRoot
	case "langfuse.observation.metadata.langfuse_user_id":
		p = &a.obsMetaUserID
	case "langfuse.observation.metadata.langfuse_session_id":
		p = &a.obsMetaSessionID
	case "langfuse.observation.metadata.langfuse_tags":
		p = &a.obsMetaTags
	case "langfuse.trace.metadata.langfuse_user_id":
		p = &a.traceMetaUserID
	case "langfuse.trace.metadata.langfuse_session_id":
		p = &a.traceMetaSessionID
	case "langfuse.trace.metadata.langfuse_tags":
		p = &a.traceMetaTags
	case "ai.telemetry.metadata.userId":
		p = &a.aiMetaUserID
	case "ai.telemetry.metadata.sessionId":
		p = &a.aiMetaSessionID
	case "ai.telemetry.metadata.tags":
		p = &a.aiMetaTags
	case "ai.telemetry.metadata.langfusePrompt":
		p = &a.aiMetaPrompt
	case "tag.tags":
		p = &a.tagTags

	case "langfuse.observation.type":
		p = &a.obsType
	case "langfuse.observation.metadata":
		p = &a.obsMetadata
	case "langfuse.observation.level":
		p = &a.obsLevel
	case "langfuse.observation.status_message":
		p = &a.obsStatusMessage
	case "langfuse.observation.input":
		p, hidden = &a.obsInput, true
	case "langfuse.observation.output":
		p, hidden = &a.obsOutput, true
	case "langfuse.observation.completion_start_time":
		p = &a.obsCompletionStart
	case "langfuse.observation.model.name":
		p = &a.obsModel
	case "langfuse.observation.model.parameters":
		p = &a.obsModelParams
	case model.UsageDetailsAttribute:
		p = &a.obsUsage
	case model.CostDetailsAttribute:
		p = &a.obsCost
	case "langfuse.observation.prompt.name":
		p = &a.obsPromptName
	case "langfuse.observation.prompt.version":
		p = &a.obsPromptVersion
	case "langfuse.prompt.name":
		p = &a.lfPromptName
	case "langfuse.prompt.version":
		p = &a.lfPromptVersion
	case "langfuse.experiment.id":
		p, hidden = &a.expID, true
	case "langfuse.experiment.name":
		p, hidden = &a.expName, true
	case "langfuse.experiment.description":
		p, hidden = &a.expDescription, true
	case "langfuse.experiment.metadata":
		p, hidden = &a.expMetadata, true
	case "langfuse.experiment.dataset.id":
		p, hidden = &a.expDatasetID, true
	case "langfuse.experiment.item.id":
		p, hidden = &a.expItemID, true
	case "langfuse.experiment.item.expected_output":
		p, hidden = &a.expItemExpected, true
	case "langfuse.experiment.item.metadata":
		p, hidden = &a.expItemMetadata, true
	case "langfuse.experiment.item.root_observation_id":
		p, hidden = &a.expItemRoot, true
	case "langfuse.environment":
		p = &a.environment
	case "deployment.environment.name":
		p = &a.deployEnvName
	case "deployment.environment":
		p = &a.deployEnv
	case "langfuse.release":
		p = &a.release
	case "langfuse.version":
		p = &a.version

	case "openinference.span.kind":
		p = &a.oiKind
	case "gen_ai.operation.name":
		p = &a.genaiOperation
	case "genkit:metadata:subtype":
		p = &a.genkitSubtype
	case "genkit:name":
		p = &a.genkitName
	case "operation.name":
		p = &a.operationName
	case "ai.operationId":
		p = &a.aiOperationID
	case "ai.model.id":
		p = &a.aiModelID
	case "gen_ai.request.model":
		p = &a.genaiRequestModel
	case "gen_ai.response.model":
		p = &a.genaiResponseModel
	case "llm.model_name":
		p = &a.llmModelName
	case "embedding.model_name":
		p = &a.embeddingModelName
	case "error.type":
		p = &a.errorType
	case "traceloop.span.kind":
		p = &a.traceloopKind
	case "llm.response.model":
		p = &a.llmResponseModel
	case "model":
		p = &a.model
	case "gen_ai.tool.name":
		p = &a.genaiToolName
	case "gen_ai.tool.call.id":
		p = &a.genaiToolCallID
	case "flue.tool.name":
		p = &a.flueToolName
	case "flue.tool.call_id":
		p = &a.flueToolCallID
	case "flue.task.id":
		p = &a.flueTaskID
	case "flue.task.agent":
		p = &a.flueTaskAgent
	case "logfire.msg":
		p = &a.logfireMsg
	case "ai.toolCall.name":
		p = &a.aiToolCallName
	case "ai.telemetry.functionId":
		p = &a.aiFunctionID
	case "ai.response.msToFirstChunk":
		p = &a.aiMsToFirstChunk
	case "ai.stream.msToFirstChunk":
		p = &a.aiStreamMsToFirstChunk
	case "gen_ai.client.operation.time_to_first_chunk":
		p = &a.genaiTimeToFirstChunk

	case "ai.prompt.messages":
		p, hidden = &a.aiPromptMessages, true
	case "ai.prompt":
		p, hidden = &a.aiPrompt, true
	case "ai.toolCall.args":
		p, hidden = &a.aiToolCallArgs, true
	case "ai.response.text":
		p, hidden = &a.aiResponseText, true
	case "ai.result.text":
		p, hidden = &a.aiResultText, true
	case "ai.toolCall.result":
		p, hidden = &a.aiToolCallResult, true
	case "ai.response.object":
		p, hidden = &a.aiResponseObject, true
	case "ai.result.object":
		p, hidden = &a.aiResultObject, true
	case "ai.response.toolCalls":
		p, hidden = &a.aiResponseToolCalls, true
	case "ai.result.toolCalls":
		p, hidden = &a.aiResultToolCalls, true
	case "mlflow.spanInputs":
		p, hidden = &a.mlflowInputs, true
	case "mlflow.spanOutputs":
		p, hidden = &a.mlflowOutputs, true
	case "traceloop.entity.input":
		p, hidden = &a.traceloopInput, true
	case "traceloop.entity.output":
		p, hidden = &a.traceloopOutput, true
	case "input.value":
		p, hidden = &a.inputValue, true
	case "output.value":
		p, hidden = &a.outputValue, true
	case "input":
		p, hidden = &a.input, true
	case "output":
		p, hidden = &a.output, true
	case "agent_name":
		p = &a.pydAgentName
	case "langfuse.generation.name":
		p, hidden = &a.litellmGenerationName, true
	case "final_result":
		p, hidden = &a.pydFinalResult, true
	case "pydantic_ai.all_messages", "all_messages_events":
		p, hidden = &a.pydAllMessages, true
	case "events": // a common word, so it stays in the metadata too
		p = &a.pydEvents
	case "tool_arguments":
		p, hidden = &a.toolArguments, true
	case "tool_response":
		p, hidden = &a.toolResponse, true
	case "gen_ai.input.messages":
		p, hidden = &a.genaiInputMessages, true
	case "gen_ai.output.messages":
		p, hidden = &a.genaiOutputMessages, true
	case "gen_ai.system_instructions":
		p, hidden = &a.genaiSystemInstructions, true
	case "gen_ai.tool.call.arguments":
		p, hidden = &a.genaiToolCallArgs, true
	case "gen_ai.tool.call.result":
		p, hidden = &a.genaiToolCallResult, true
	case "gen_ai.prompt":
		p, hidden = &a.genaiPrompt, true
	case "gen_ai.completion":
		p, hidden = &a.genaiCompletion, true

	case "ai.settings.maxSteps":
		p = &a.aiMaxSteps
	case "ai.prompt.toolChoice":
		p = &a.aiToolChoice
	case "ai.settings.maxRetries":
		p = &a.aiMaxRetries
	case "ai.settings.mode":
		p = &a.aiMode
	case "ai.model.provider":
		p = &a.aiModelProvider
	case "gen_ai.request.max_tokens":
		p = &a.genaiMaxTokens
	case "gen_ai.request.temperature":
		p = &a.genaiTemperature
	case "gen_ai.request.service_tier":
		p = &a.genaiServiceTier
	case "gen_ai.response.finish_reasons":
		p = &a.genaiFinishReasons
	case "gen_ai.finishReason":
		p = &a.genaiFinishReasonLegacy
	case "gen_ai.system":
		p = &a.genaiSystem
	case "ai.response.providerMetadata":
		p = &a.aiProviderMetadata
	case "llm.invocation_parameters":
		p = &a.llmInvocationParameters
	case "model_config":
		p = &a.modelConfig

	case "ai.usage.tokens":
		p = &a.aiUsageTokens
	case "ai.values", "ai.value":
		p, hidden = &a.aiValues, true
	case "ai.usage.cachedInputTokens":
		p = &a.aiUsageCachedInput
	case "ai.usage.reasoningTokens":
		p = &a.aiUsageReasoning
	case "gen_ai.usage.cost":
		p = &a.genaiUsageCost
	case "llm.cost.total":
		p = &a.llmCostTotal
	case "ai.prompt.tools":
		// Shown as metadata "tools"; kept once.
		p, hidden = &a.aiPromptTools, true
	case model.SampleRateAttribute:
		p = &a.sampleRate
	case model.UsageEstimatedAttribute:
		p = &a.usageEstimated
	}
	if p != nil {
		*p = attr{v: v, ok: true}
		a.touched = append(a.touched, p)
	}
	fam, famHidden := family(k)
	a.families |= fam
	return fam, hidden || famHidden
}

// family returns the prefix family of k and whether keys of that family are
// left out of the "attributes" metadata object (they are shown as metadata
// keys or rebuilt into input/output instead).
func family(k string) (fam uint32, hidden bool) {
	if len(k) < 9 {
		return 0, false
	}
	switch k[0] {
	case 'l':
		switch {
		case strings.HasPrefix(k, prefixObsMeta):
			return famObsMeta, true
		case strings.HasPrefix(k, prefixTraceMeta):
			return famTraceMeta, true
		case strings.HasPrefix(k, prefixLegacyMeta):
			return famLegacyMeta, false
		case strings.HasPrefix(k, prefixLLMTokens):
			return famLLMTokens, false
		case strings.HasPrefix(k, prefixLLMInvParams):
			return famLLMInvParams, false
		case strings.HasPrefix(k, prefixLLMInMsgs):
			return famLLMInMsgs, true
		case strings.HasPrefix(k, prefixLLMOutMsgs):
			return famLLMOutMsgs, true
		}
	case 'r':
		if strings.HasPrefix(k, prefixRetrievalDoc) {
			return famRetrievalDocs, true
		}
	case 'e':
		if strings.HasPrefix(k, prefixEmbeddings) {
			return famEmbeddings, true
		}
	case 'a':
		switch {
		case strings.HasPrefix(k, prefixAIMeta):
			return famAIMeta, true
		case strings.HasPrefix(k, prefixAIUsage):
			return famAIUsage, false
		}
	case 'g':
		switch {
		case strings.HasPrefix(k, prefixGenAIUsage):
			return famGenAIUsage, false
		case strings.HasPrefix(k, prefixGenAIRequest):
			return famGenAIRequest, false
		case strings.HasPrefix(k, prefixGenAIPrompt):
			return famGenAIPrompt, true
		case strings.HasPrefix(k, prefixGenAICompl):
			return famGenAICompletion, true
		case strings.HasPrefix(k, prefixInternal):
			return 0, true
		}
	}
	return 0, false
}
