package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
)

var schema = &llm.Schema{Name: "score", Schema: json.RawMessage(`{"type":"object","properties":{"score":{"type":"number"}}}`)}

func client(t *testing.T) *llm.Client {
	c := &llm.Client{HTTP: &http.Client{}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestOpenAIStructuredOutput(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) string { return `{"score":0.5}` })
	ep := llm.Endpoint{Adapter: llm.AdapterOpenAI, BaseURL: srv.URL(), APIKey: "sk-test", Headers: map[string]string{"X-Org": "o"}}
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{
		Model: "gpt-4o-mini", Messages: []llm.Message{{Role: "system", Content: "judge"}, {Role: "user", Content: "rate this answer"}},
		Params: map[string]any{"temperature": 0}, Schema: schema,
	})
	require.NoError(t, err)
	assert.Equal(t, `{"score":0.5}`, resp.Content)
	assert.True(t, resp.Structured)
	assert.Equal(t, "gpt-4o-mini", resp.Model)
	assert.Equal(t, llm.Usage{Input: 3, Output: 1, Total: 4}, resp.Usage)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "o", reqs[0].Header.Get("X-Org"))
	assert.Equal(t, 0.0, reqs[0].Body["temperature"])
	format := reqs[0].Body["response_format"].(map[string]any)
	assert.Equal(t, "json_schema", format["type"])
}

func TestOpenAIFallsBackWithoutSchema(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) string { return "Score: 1" })
	srv.RefuseSchema()
	resp, err := client(t).Complete(context.Background(), llm.Endpoint{Adapter: llm.AdapterOpenAI, BaseURL: srv.URL()},
		llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}, Schema: schema})
	require.NoError(t, err)
	assert.False(t, resp.Structured)
	assert.Equal(t, "Score: 1", resp.Content)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.True(t, reqs[0].Schema)
	assert.False(t, reqs[1].Schema)
}

func TestAnthropic(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) string { return `{"score":1}` })
	ep := llm.Endpoint{Adapter: llm.AdapterAnthropic, BaseURL: srv.URL(), APIKey: "sk-ant"}
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{
		Model:    "claude-3-5-haiku",
		Messages: []llm.Message{{Role: "system", Content: "you judge"}, {Role: "user", Content: "rate it"}},
		Schema:   schema,
	})
	require.NoError(t, err)
	assert.True(t, resp.Structured)
	assert.JSONEq(t, `{"score":1}`, resp.Content)
	assert.Equal(t, llm.Usage{Input: 2, Output: 1, Total: 3}, resp.Usage)
	req := srv.Requests()[0]
	assert.Equal(t, "/v1/messages", req.Path)
	assert.Equal(t, "sk-ant", req.Header.Get("x-api-key"))
	assert.NotEmpty(t, req.Header.Get("anthropic-version"))
	assert.Equal(t, "you judge", req.Body["system"])
	assert.EqualValues(t, 1024, req.Body["max_tokens"])

	resp, err = client(t).Complete(context.Background(), ep, llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x"}},
		Params: map[string]any{"max_tokens": 10}})
	require.NoError(t, err)
	assert.False(t, resp.Structured)
	assert.Equal(t, `{"score":1}`, resp.Content, "text blocks are the answer without a schema")
	assert.EqualValues(t, 10, srv.Requests()[1].Body["max_tokens"])
}

func TestRetryableFailures(t *testing.T) {
	srv := llmtest.New(t, nil)
	srv.Fail(llmtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 7}, llmtest.Fault{Status: http.StatusBadGateway},
		llmtest.Fault{Status: http.StatusUnauthorized}, llmtest.Fault{Delay: time.Second})
	ep := llm.Endpoint{Adapter: llm.AdapterOpenAI, BaseURL: srv.URL()}
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}}
	c := client(t)

	_, err := c.Complete(context.Background(), ep, req)
	var se *llm.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.Status)
	retry, wait := llm.Retryable(err)
	assert.True(t, retry)
	assert.Equal(t, 7*time.Second, wait)

	_, err = c.Complete(context.Background(), ep, req)
	retry, _ = llm.Retryable(err)
	assert.True(t, retry, "5xx")

	_, err = c.Complete(context.Background(), ep, req)
	retry, _ = llm.Retryable(err)
	assert.False(t, retry, "401 is permanent")
	assert.ErrorContains(t, err, "401")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Complete(ctx, ep, req)
	retry, _ = llm.Retryable(err)
	assert.True(t, retry, "timeouts: %v", err)

	retry, _ = llm.Retryable(errors.New("bad answer"))
	assert.False(t, retry)
	_, err = c.Complete(context.Background(), llm.Endpoint{Adapter: "cohere"}, req)
	assert.ErrorContains(t, err, "unknown adapter")
}

// Both adapters stream the answer in pieces, in order, with the usage.
func TestStream(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return "It ships on Monday morning." })
	for _, adapter := range []string{llm.AdapterOpenAI, llm.AdapterAnthropic} {
		t.Run(adapter, func(t *testing.T) {
			ep := llm.Endpoint{Adapter: adapter, BaseURL: srv.URL(), APIKey: "sk-test"}
			var pieces []string
			resp, err := client(t).Stream(context.Background(), ep, llm.Request{Model: "m", Messages: []llm.Message{
				{Role: "system", Content: "be brief"}, {Role: "user", Content: "when does it ship"}},
				Params: map[string]any{"temperature": 0.1}}, func(p string) { pieces = append(pieces, p) })
			require.NoError(t, err)
			assert.Equal(t, []string{"It ", "ships ", "on ", "Monday ", "morning."}, pieces)
			assert.Equal(t, "It ships on Monday morning.", resp.Content)
			assert.Equal(t, "m", resp.Model)
			assert.Equal(t, llm.Usage{Input: 4, Output: 5, Total: 9}, resp.Usage)
			last := srv.Requests()[len(srv.Requests())-1]
			assert.Equal(t, true, last.Body["stream"])
			assert.Equal(t, 0.1, last.Body["temperature"])
		})
	}
	srv.Fail(llmtest.Fault{Status: http.StatusTooManyRequests})
	_, err := client(t).Stream(context.Background(), llm.Endpoint{Adapter: llm.AdapterOpenAI, BaseURL: srv.URL()},
		llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}}, func(string) { t.Fatal("no text from a refusal") })
	var se *llm.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.Status)
}
