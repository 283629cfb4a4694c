package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderIOChatFormats(t *testing.T) {
	openai := RenderIO(`[{"role":"system","content":"Be brief."},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}]`)
	require.Len(t, openai.Chat, 3)
	assert.Equal(t, "system", openai.Chat[0].Role)
	assert.Equal(t, "Be brief.", openai.Chat[0].Content.Text)
	assert.Equal(t, ToolCall{ID: "c1", Name: "weather", Arguments: "{\n  \"city\": \"Paris\"\n}"}, openai.Chat[1].ToolCalls[0])
	assert.Equal(t, "c1", openai.Chat[2].ToolCallID)

	anthropic := RenderIO(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"t1","name":"search","input":{"q":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"found"}]}]}`)
	require.Len(t, anthropic.Chat, 2)
	assert.Equal(t, "search", anthropic.Chat[0].ToolCalls[0].Name)
	assert.Equal(t, "t1", anthropic.Chat[1].ToolCallID)
	assert.Equal(t, "found", anthropic.Chat[1].Content.Text)

	gemini := RenderIO(`{"contents":[{"role":"model","parts":[{"text":"Hi"},{"functionCall":{"name":"f","args":{"a":1}}}]}]}`)
	require.Len(t, gemini.Chat, 1)
	assert.Equal(t, "model", gemini.Chat[0].Role)
	assert.Equal(t, "f", gemini.Chat[0].ToolCalls[0].Name)

	langchain := RenderIO(`[{"type":"human","content":"hello"},{"type":"ai","content":"hi"}]`)
	require.Len(t, langchain.Chat, 2)
	assert.Equal(t, "ai", langchain.Chat[1].Role)

	notChat := RenderIO(`[{"a":1},{"role":"user"}]`)
	assert.Nil(t, notChat.Chat)
	require.NotNil(t, notChat.Tree)
	assert.Equal(t, "array", notChat.Tree.Kind)
}

func TestRenderIOValues(t *testing.T) {
	assert.True(t, RenderIO("").Empty)
	assert.True(t, RenderIO("null").Empty)
	text := RenderIO("plain **bold** text")
	require.NotNil(t, text.Text)
	assert.Contains(t, string(text.Text.Markdown), "<strong>bold</strong>")
	quoted := RenderIO(`"a JSON string"`)
	assert.Equal(t, "a JSON string", quoted.Text.Text)

	html := RenderIO(`<script>alert(1)</script> [x](javascript:alert(2))`)
	assert.NotContains(t, string(html.Text.Markdown), "<script>")
	assert.NotContains(t, string(html.Text.Markdown), "javascript:")

	huge := RenderIO(strings.Repeat("word ", 20_000))
	assert.Empty(t, huge.Text.Markdown, "too long to render as markdown")
	deep := RenderIO(strings.Repeat(">", 100) + " quote")
	assert.Empty(t, deep.Text.Markdown, "too deep to render as markdown")

	var big strings.Builder
	big.WriteString(`{"items":[`)
	for i := range 5000 {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`{"n":1}`)
	}
	big.WriteString(`]}`)
	tree := RenderIO(big.String())
	count := 0
	var walk func(n JSONNode)
	walk = func(n JSONNode) {
		count++
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(*tree.Tree)
	assert.Less(t, count, maxTreeNodes+100, "the tree is cut; the raw view has the rest")
}

func TestRenderIOMedia(t *testing.T) {
	ref := "@@@langfuseMedia:type=image/png|id=abc_123|source=base64_data_uri@@@"
	io := RenderIO(ref)
	require.NotNil(t, io.Media)
	assert.Equal(t, Part{Kind: "image", MediaID: "abc_123", MediaType: "image/png"}, *io.Media)
	chat := RenderIO(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + ref + `"}}]}]`)
	assert.Equal(t, "abc_123", chat.Chat[0].Parts[0].MediaID)

	inline := RenderIO(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"data:text/html;base64,PHNjcmlwdD4="}},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]`)
	parts := inline.Chat[0].Parts
	assert.Equal(t, "data:image/png;base64,iVBORw0KGgo=", string(parts[0].URL))
	assert.Empty(t, parts[1].URL, "only image types inline")
	assert.Empty(t, parts[2].URL, "remote images are not loaded")
	assert.Equal(t, "https://example.com/cat.png", parts[2].Link)

	_, ok := mediaPart("@@@langfuseMedia:type=image/png|id=../../etc|source=x@@@")
	assert.False(t, ok, "ids are plain")
}
