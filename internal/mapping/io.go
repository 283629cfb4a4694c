package mapping

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// inputOutput extracts the span's input and output. Conventions are tried in
// Langfuse's order and the first one that yields either side wins, so that
// the two sides always come from the same convention.
func (m *mapper) inputOutput() (in, out string) {
	a := &m.a
	if a.obsInput.ok || a.obsOutput.ok {
		return a.obsInput.text(), a.obsOutput.text()
	}
	if m.scope.name == "ai" {
		if in, out = m.vercelIO(); in != "" || out != "" {
			return in, out
		}
	}
	if evs := m.span.Events(); evs.Len() > 0 {
		if in, out, ok := m.eventIO(evs); ok {
			return in, out
		}
	}
	if m.pydanticAgent() {
		return a.pydAllMessages.text(), a.pydFinalResult.text()
	}
	if a.pydEvents.ok {
		if in, out, ok := eventsAttributeIO(a.pydEvents.str()); ok {
			return in, out
		}
	}
	// OpenInference retrievers and embedders list their documents and texts
	// as flattened attributes beside the query.
	if a.families&famRetrievalDocs != 0 && !a.outputValue.truthy() {
		return a.inputValue.text(), m.nested(m.span.Attributes(), attr{}, prefixRetrievalDoc, famRetrievalDocs)
	}
	if a.families&famEmbeddings != 0 && !a.inputValue.truthy() {
		return m.nested(m.span.Attributes(), attr{}, prefixEmbeddings, famEmbeddings), ""
	}
	for _, p := range [...][2]attr{
		{a.mlflowInputs, a.mlflowOutputs},
		{a.traceloopInput, a.traceloopOutput},
		{a.inputValue, a.outputValue}, // OpenInference
		{a.input, a.output},
		{a.toolArguments, a.toolResponse},
	} {
		if p[0].truthy() || p[1].truthy() {
			return p[0].text(), p[1].text()
		}
	}
	attrs := m.span.Attributes()
	if a.genaiPrompt.truthy() || a.genaiCompletion.truthy() || a.families&(famGenAIPrompt|famGenAICompletion) != 0 {
		return m.nested(attrs, a.genaiPrompt, prefixGenAIPrompt, famGenAIPrompt),
			m.nested(attrs, a.genaiCompletion, prefixGenAICompl, famGenAICompletion)
	}
	if a.families&(famLLMInMsgs|famLLMOutMsgs) != 0 {
		return m.nested(attrs, attr{}, prefixLLMInMsgs, famLLMInMsgs),
			m.nested(attrs, attr{}, prefixLLMOutMsgs, famLLMOutMsgs)
	}
	if a.genaiInputMessages.truthy() || a.genaiOutputMessages.truthy() || a.genaiSystemInstructions.truthy() {
		return m.withSystemInstructions(a.genaiInputMessages, a.genaiSystemInstructions), a.genaiOutputMessages.text()
	}
	if a.genaiToolCallArgs.truthy() || a.genaiToolCallResult.truthy() {
		return a.genaiToolCallArgs.text(), a.genaiToolCallResult.text()
	}
	return "", ""
}

// vercelIO reads the Vercel AI SDK keys.
func (m *mapper) vercelIO() (in, out string) {
	a := &m.a
	in = pick(a.aiPromptMessages, a.aiPrompt, a.aiToolCallArgs, a.aiValues).text()
	switch {
	case a.aiResponseText.ok && a.aiResponseToolCalls.ok:
		b := append(m.buf[:0], `{"role":"assistant","content":`...)
		b = appendValue(b, a.aiResponseText.v)
		b = append(b, `,"tool_calls":`...)
		b = appendEmbeddedValue(b, a.aiResponseToolCalls.v)
		m.buf = append(b, '}')
		out = string(m.buf)
	case a.aiResponseText.truthy():
		out = a.aiResponseText.text()
	default:
		out = pick(a.aiResultText, a.aiToolCallResult, a.aiResponseObject, a.aiResultObject,
			a.aiResponseToolCalls, a.aiResultToolCalls).text()
	}
	return in, out
}

const (
	eventOperationDetails = "gen_ai.client.inference.operation.details"
	eventChoice           = "gen_ai.choice"
	eventContentPrompt    = "gen_ai.content.prompt"
	eventContentResult    = "gen_ai.content.completion"
)

// messageRole returns the role of an OpenTelemetry GenAI message event.
func messageRole(event string) string {
	switch event {
	case "gen_ai.system.message":
		return "system"
	case "gen_ai.user.message":
		return "user"
	case "gen_ai.assistant.message":
		return "assistant"
	case "gen_ai.tool.message":
		return "tool"
	}
	return ""
}

// eventIO reads the GenAI span events: the operation-details event of newer
// semantic conventions, the per-message events of older ones, and the
// Semantic Kernel content events.
func (m *mapper) eventIO(evs ptrace.SpanEventSlice) (in, out string, ok bool) {
	var nIn, nOut int
	var prompt, completion ptrace.SpanEvent
	var hasPrompt, hasCompletion bool
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		switch name := ev.Name(); {
		case name == eventOperationDetails:
			attrs := ev.Attributes()
			in = m.withSystemInstructions(get(attrs, "gen_ai.input.messages"), get(attrs, "gen_ai.system_instructions"))
			out = get(attrs, "gen_ai.output.messages").text()
			if in != "" || out != "" {
				return in, out, true
			}
		case name == eventChoice:
			nOut++
		case name == eventContentPrompt && !hasPrompt:
			prompt, hasPrompt = ev, true
		case name == eventContentResult && !hasCompletion:
			completion, hasCompletion = ev, true
		case messageRole(name) != "":
			nIn++
		}
	}
	if nIn > 0 || nOut > 0 {
		return m.messageEvents(evs, nIn), m.choiceEvents(evs, nOut), true
	}
	if hasPrompt || hasCompletion {
		if hasPrompt {
			in = m.contentEvent(prompt.Attributes(), "gen_ai.prompt")
		}
		if hasCompletion {
			out = m.contentEvent(completion.Attributes(), "gen_ai.completion")
		}
		return in, out, true
	}
	return "", "", false
}

// messageEvents renders message events as [{role, ...attributes}].
func (m *mapper) messageEvents(evs ptrace.SpanEventSlice, n int) string {
	if n == 0 {
		return ""
	}
	b := append(m.buf[:0], '[')
	first := true
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		role := messageRole(ev.Name())
		if role == "" {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		item := &m.objItem
		item.reset()
		item.addString("role", role)
		for k, v := range ev.Attributes().All() {
			item.addValue(k, v)
		}
		b = item.appendTo(b)
	}
	m.buf = append(b, ']')
	return string(m.buf)
}

// choiceEvents renders gen_ai.choice events: one object, or an array of them.
func (m *mapper) choiceEvents(evs ptrace.SpanEventSlice, n int) string {
	if n == 0 {
		return ""
	}
	b := m.buf[:0]
	if n > 1 {
		b = append(b, '[')
	}
	first := true
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if ev.Name() != eventChoice {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		item := &m.objItem
		item.reset()
		for k, v := range ev.Attributes().All() {
			item.addValue(k, v)
		}
		b = item.appendTo(b)
	}
	if n > 1 {
		b = append(b, ']')
	}
	m.buf = b
	return string(b)
}

// contentEvent reads a Semantic Kernel content event: its prompt or
// completion attribute, else all its attributes.
func (m *mapper) contentEvent(attrs pcommon.Map, key string) string {
	if v := get(attrs, key); v.truthy() {
		return v.text()
	}
	m.buf = appendMap(m.buf[:0], attrs)
	return string(m.buf)
}

func get(attrs pcommon.Map, key string) attr {
	v, ok := attrs.Get(key)
	return attr{v: v, ok: ok}
}

// withSystemInstructions returns the GenAI input messages with the system
// instructions, which newer conventions keep apart, put first as a system
// message unless the messages already have one.
func (m *mapper) withSystemInstructions(msgs, sys attr) string {
	if !sys.truthy() {
		return msgs.text()
	}
	var rest string // the messages array after its '['
	if msgs.truthy() {
		s := msgs.str()
		if !isJSONArray(s) || hasSystemMessage(s) {
			return msgs.text()
		}
		rest = strings.TrimSpace(s[strings.IndexByte(s, '[')+1:])
	}
	b := append(m.buf[:0], `[{"role":"system","content":`...)
	b = appendEmbeddedValue(b, sys.v)
	b = append(b, '}')
	if rest != "" && rest[0] != ']' {
		b = append(b, ',')
		b = append(b, rest...)
	} else {
		b = append(b, ']')
	}
	m.buf = b
	return string(b)
}

func hasSystemMessage(arr string) bool {
	found := false
	eachElement(arr, func(el string) {
		eachMember(el, func(k, raw string) {
			if k == "role" && rawString(raw) == "system" {
				found = true
			}
		})
	})
	return found
}

// nested returns the exact-key value when set, else rebuilds the flattened
// keys under prefix into JSON.
func (m *mapper) nested(attrs pcommon.Map, exact attr, prefix string, fam uint32) string {
	if exact.truthy() {
		return exact.text()
	}
	if m.a.families&fam == 0 {
		return ""
	}
	m.buf = unflatten(m.buf[:0], attrs, prefix)
	return string(m.buf)
}

// eventsAttributeIO reads GenAI events serialised into one JSON array
// attribute (Pydantic AI's default event mode): the message events are the
// input, the gen_ai.choice events' messages the output. ok is false when the
// text is not such an array.
func eventsAttributeIO(text string) (in, out string, ok bool) {
	var events []map[string]any
	if json.Unmarshal([]byte(text), &events) != nil || len(events) == 0 {
		return "", "", false
	}
	var inputs, choices []any
	for _, ev := range events {
		name, _ := ev["event.name"].(string)
		if !strings.HasPrefix(name, "gen_ai.") {
			return "", "", false
		}
		delete(ev, "event.name")
		delete(ev, "gen_ai.system")
		if name == eventChoice {
			if msg, isMsg := ev["message"]; isMsg {
				choices = append(choices, msg)
			} else {
				choices = append(choices, ev)
			}
			continue
		}
		if _, has := ev["role"]; !has {
			if role := messageRole(name); role != "" {
				ev["role"] = role
			}
		}
		inputs = append(inputs, ev)
	}
	if len(inputs) > 0 {
		b, _ := json.Marshal(inputs)
		in = string(b)
	}
	// One choice is the answer; several stay a list.
	switch len(choices) {
	case 0:
	case 1:
		b, _ := json.Marshal(choices[0])
		out = string(b)
	default:
		b, _ := json.Marshal(choices)
		out = string(b)
	}
	return in, out, true
}
