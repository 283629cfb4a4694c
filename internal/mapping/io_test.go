package mapping

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestInputOutputPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		scope   string
		attrs   map[string]any
		in, out string
	}{
		{"langfuse beats OpenInference", "", map[string]any{
			"langfuse.observation.input": "lf-in", "input.value": "oi-in", "output.value": "oi-out"}, "lf-in", ""},
		{"langfuse empty string still counts", "", map[string]any{
			"langfuse.observation.output": "", "input.value": "oi-in"}, "", ""},
		{"non-string values become JSON", "", map[string]any{
			"langfuse.observation.input": []any{"a", int64(1)}}, `["a",1]`, ""},
		{"MLflow", "", map[string]any{"mlflow.spanInputs": `{"x":1}`, "traceloop.entity.input": "tl"}, `{"x":1}`, ""},
		{"Traceloop entity", "", map[string]any{"traceloop.entity.input": "tl-in", "traceloop.entity.output": "tl-out",
			"input.value": "oi"}, "tl-in", "tl-out"},
		{"empty values are skipped", "", map[string]any{"traceloop.entity.input": "", "input.value": "oi"}, "oi", ""},
		{"OpenInference", "", map[string]any{"input.value": "q", "output.value": "a",
			"llm.input_messages.0.message.role": "user"}, "q", "a"},
		{"plain input and output", "", map[string]any{"input": "i", "output": "o"}, "i", "o"},
		{"tool arguments", "", map[string]any{"tool_arguments": `{"a":1}`, "tool_response": "r"}, `{"a":1}`, "r"},
		{"GenAI tool call", "", map[string]any{
			"gen_ai.tool.call.arguments": `{"city":"Paris"}`, "gen_ai.tool.call.result": "18C"}, `{"city":"Paris"}`, "18C"},
		{"GenAI messages beat tool call", "", map[string]any{
			"gen_ai.output.messages": `[]`, "gen_ai.tool.call.arguments": "args"}, "", `[]`},
		{"Vercel text and tool calls", "ai", map[string]any{
			"ai.prompt.messages": `[{"role":"user","content":"hi"}]`, "ai.prompt": "ignored",
			"ai.response.text": "ok", "ai.response.toolCalls": `[{"toolName":"t"}]`,
		}, `[{"role":"user","content":"hi"}]`, `{"role":"assistant","content":"ok","tool_calls":[{"toolName":"t"}]}`},
		{"Vercel empty text falls back", "ai", map[string]any{
			"ai.prompt": `{"prompt":"p"}`, "ai.response.text": "", "ai.response.object": `{"o":1}`,
		}, `{"prompt":"p"}`, `{"o":1}`},
		{"Vercel tool call", "ai", map[string]any{"ai.toolCall.args": `{"a":1}`, "ai.toolCall.result": "r"}, `{"a":1}`, "r"},
		{"Vercel keys outside the ai scope are ignored", "", map[string]any{"ai.prompt": "p"}, "", ""},
		{"Vercel without I/O falls back to GenAI", "ai", map[string]any{"gen_ai.input.messages": `[1]`}, `[1]`, ""},
		{"Traceloop exact prompt key", "", map[string]any{"gen_ai.prompt": `[{"role":"user"}]`,
			"gen_ai.prompt.0.role": "ignored"}, `[{"role":"user"}]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture().withAttrs(t, tt.attrs)
			if tt.scope != "" {
				f = f.inScope(tt.scope, "")
			}
			o := f.mapped()
			assert.Equal(t, tt.in, o.Input, "input")
			assert.Equal(t, tt.out, o.Output, "output")
		})
	}
}

func TestSystemInstructions(t *testing.T) {
	tests := []struct {
		name   string
		attrs  map[string]any
		expect string
	}{
		{"prepended", map[string]any{
			"gen_ai.system_instructions": `[{"type":"text","content":"Be brief."}]`,
			"gen_ai.input.messages":      `[{"role":"user","parts":[]}]`,
		}, `[{"role":"system","content":[{"type":"text","content":"Be brief."}]},{"role":"user","parts":[]}]`},
		{"plain text instructions", map[string]any{
			"gen_ai.system_instructions": "Be brief.", "gen_ai.input.messages": `[ ]`,
		}, `[{"role":"system","content":"Be brief."}]`},
		{"instructions alone", map[string]any{"gen_ai.system_instructions": "Be brief."},
			`[{"role":"system","content":"Be brief."}]`},
		{"existing system message wins", map[string]any{
			"gen_ai.system_instructions": "Be brief.",
			"gen_ai.input.messages":      `[{"role":"system","parts":[]},{"role":"user"}]`,
		}, `[{"role":"system","parts":[]},{"role":"user"}]`},
		{"messages that are not a JSON array are kept", map[string]any{
			"gen_ai.system_instructions": "Be brief.", "gen_ai.input.messages": "hello",
		}, "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.expect, mapAttrs(t, tt.attrs).Input)
		})
	}
}

func addEvent(sp ptrace.Span, name string, attrs map[string]any) {
	ev := sp.Events().AppendEmpty()
	ev.SetName(name)
	_ = ev.Attributes().FromRaw(attrs)
}

func TestEventInputOutput(t *testing.T) {
	t.Run("message and choice events", func(t *testing.T) {
		f := newFixture().withAttrs(t, map[string]any{"input.value": "not used"})
		addEvent(f.span, "gen_ai.system.message", map[string]any{"content": "sys"})
		addEvent(f.span, "exception", map[string]any{"exception.message": "ignored"})
		addEvent(f.span, "gen_ai.user.message", map[string]any{"role": "human", "content": "hi"})
		addEvent(f.span, "gen_ai.choice", map[string]any{"index": int64(0), "finish_reason": "stop"})
		o := f.mapped()
		assert.Equal(t, `[{"role":"system","content":"sys"},{"role":"human","content":"hi"}]`, o.Input)
		assert.JSONEq(t, `{"index":0,"finish_reason":"stop"}`, o.Output)
	})
	t.Run("several choices form an array", func(t *testing.T) {
		f := newFixture()
		addEvent(f.span, "gen_ai.choice", map[string]any{"index": int64(0)})
		addEvent(f.span, "gen_ai.choice", map[string]any{"index": int64(1)})
		o := f.mapped()
		assert.Empty(t, o.Input)
		assert.Equal(t, `[{"index":0},{"index":1}]`, o.Output)
	})
	t.Run("operation details event", func(t *testing.T) {
		f := newFixture()
		addEvent(f.span, "gen_ai.client.inference.operation.details", map[string]any{
			"gen_ai.system_instructions": "Be brief.",
			"gen_ai.input.messages":      `[{"role":"user"}]`,
			"gen_ai.output.messages":     `[{"role":"assistant"}]`,
		})
		addEvent(f.span, "gen_ai.choice", map[string]any{"index": int64(0)})
		o := f.mapped()
		assert.Equal(t, `[{"role":"system","content":"Be brief."},{"role":"user"}]`, o.Input)
		assert.Equal(t, `[{"role":"assistant"}]`, o.Output)
	})
	t.Run("Semantic Kernel content events", func(t *testing.T) {
		f := newFixture()
		addEvent(f.span, "gen_ai.content.prompt", map[string]any{"gen_ai.prompt": `[{"role":"user","content":"q"}]`})
		addEvent(f.span, "gen_ai.content.completion", map[string]any{"other": "x"})
		o := f.mapped()
		assert.Equal(t, `[{"role":"user","content":"q"}]`, o.Input)
		assert.Equal(t, `{"other":"x"}`, o.Output)
	})
	t.Run("unrelated events change nothing", func(t *testing.T) {
		f := newFixture().withAttrs(t, map[string]any{"input.value": "q"})
		addEvent(f.span, "exception", nil)
		assert.Equal(t, "q", f.mapped().Input)
	})
}

func TestFlattenedMessages(t *testing.T) {
	t.Run("Traceloop prompt and completion", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("gen_ai.prompt.0.role", "system")
		a.PutStr("gen_ai.prompt.0.content", "sys")
		a.PutStr("gen_ai.prompt.2.role", "user")
		a.PutStr("gen_ai.completion.0.content", "answer")
		a.PutStr("gen_ai.completion.0.tool_calls.0.name", "search")
		o := f.mapped()
		assert.Equal(t, `[{"role":"system","content":"sys"},null,{"role":"user"}]`, o.Input)
		assert.Equal(t, `[{"content":"answer","tool_calls":[{"name":"search"}]}]`, o.Output)
	})
	t.Run("OpenInference messages, Traceloop first", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("llm.input_messages.0.message.role", "user")
		a.PutStr("llm.input_messages.0.message.contents.0.message_content.text", "hi")
		a.PutInt("llm.output_messages.0.message.index", 0)
		o := f.mapped()
		assert.Equal(t, `[{"message":{"role":"user","contents":[{"message_content":{"text":"hi"}}]}}]`, o.Input)
		assert.Equal(t, `[{"message":{"index":0}}]`, o.Output)

		a.PutStr("gen_ai.completion.0.content", "tl")
		o = f.mapped()
		assert.Empty(t, o.Input, "the Traceloop keys win as a pair")
		assert.Equal(t, `[{"content":"tl"}]`, o.Output)
	})
	t.Run("object root and unsafe segments", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("gen_ai.prompt.text", "t")
		a.PutStr("gen_ai.prompt.__proto__.polluted", "x")
		a.PutStr("gen_ai.prompt.meta.constructor", "x")
		a.PutStr("gen_ai.prompt.meta.lang", "en")
		a.PutStr("gen_ai.prompt.0", "index into an object is a name")
		assert.Equal(t, `{"text":"t","meta":{"lang":"en"},"0":"index into an object is a name"}`, f.mapped().Input)
	})
	t.Run("later keys replace earlier shapes", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("gen_ai.prompt.0.content", "leaf")
		a.PutStr("gen_ai.prompt.0.content.text", "now an object")
		a.PutStr("gen_ai.prompt.0.role", "user")
		a.PutStr("gen_ai.prompt.0.role", "user")
		a.PutStr("gen_ai.prompt.name", "names do not fit an array")
		assert.Equal(t, `[{"content":{"text":"now an object"},"role":"user"}]`, f.mapped().Input)
	})
	t.Run("array slots are bounded", func(t *testing.T) {
		f := newFixture()
		a := f.span.Attributes()
		a.PutStr("gen_ai.prompt.0.role", "user")
		a.PutStr("gen_ai.prompt.999999.role", "too far")
		a.PutStr("gen_ai.prompt.99999999999.role", "not an index")
		assert.Equal(t, `[{"role":"user"}]`, f.mapped().Input)
	})
}

func TestUnflattenBudget(t *testing.T) {
	attrs := pcommon.NewMap()
	for _, i := range []int{0, 6000, 12000} {
		attrs.PutStr("p."+strconv.Itoa(i)+".x", "v")
	}
	var got []any
	require.NoError(t, json.Unmarshal(unflatten(nil, attrs, "p."), &got))
	// Index 6000 fits the budget of 10001 slots; index 12000 would exceed it.
	require.Len(t, got, 6001)
	assert.Equal(t, map[string]any{"x": "v"}, got[6000])
	assert.Nil(t, got[1])
}
