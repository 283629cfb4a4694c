package tokenize

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/glassbox-dev/glassbox/internal/pricing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var gpt4o = &pricing.TokenizerConfig{TokenizerModel: "gpt-4o"}

func TestEstimatePlainText(t *testing.T) {
	// "Hello world" is two tokens in both o200k_base and cl100k_base.
	for _, model := range []string{"gpt-4o", "gpt-4", "text-embedding-ada-002", "gpt-4o-mini"} {
		got, err := Estimate(&pricing.TokenizerConfig{TokenizerModel: model}, "Hello world", `"Hello world"`)
		require.NoError(t, err, model)
		assert.Equal(t, map[string]int64{"input": 2, "output": 2, "total": 4}, got, model)
	}
}

func TestEstimateChatMessages(t *testing.T) {
	input := `[{"role":"system","content":"Hello world"},{"role":"user","name":"bob","content":"Hello world"}]`
	got, err := Estimate(gpt4o, input, `{"role":"assistant","content":"Hello world"}`)
	require.NoError(t, err)
	// Per message: 3 + role (1) + content (2); the named one adds 1 + name (1); 3 to prime the reply.
	assert.Equal(t, int64(3+(3+1+2)+(3+1+2+1+1)), got["input"])
	assert.Equal(t, int64(2), got["output"], "a message output counts its content")
	assert.Equal(t, got["input"]+got["output"], got["total"])

	custom := &pricing.TokenizerConfig{TokenizerModel: "gpt-4o", TokensPerMessage: 4, TokensPerName: -1}
	got, err = Estimate(custom, input, "")
	require.NoError(t, err)
	assert.Equal(t, int64(3+(4+1+2)+(4+1+2-1+1)), got["input"])
	assert.Zero(t, got["output"])
}

func TestEstimateNonChatJSON(t *testing.T) {
	// An array that is not a message list is counted as its JSON text.
	text := `[1,2,3]`
	got, err := Estimate(gpt4o, text, "")
	require.NoError(t, err)
	c, err := codecFor("gpt-4o")
	require.NoError(t, err)
	want, err := c.Count(text)
	require.NoError(t, err)
	assert.Equal(t, int64(want), got["input"])
}

func TestEstimateGrowsWithText(t *testing.T) {
	short, err := Estimate(gpt4o, "word", "")
	require.NoError(t, err)
	long, err := Estimate(gpt4o, strings.Repeat("word ", 100), "")
	require.NoError(t, err)
	assert.Greater(t, long["input"], 50*short["input"])
}

func TestEstimateUnknownTokenizer(t *testing.T) {
	_, err := Estimate(&pricing.TokenizerConfig{TokenizerModel: "claude-3"}, "x", "y")
	assert.ErrorIs(t, err, ErrUnknownTokenizer)
	_, err = Estimate(nil, "x", "y")
	assert.ErrorIs(t, err, ErrUnknownTokenizer)
}
