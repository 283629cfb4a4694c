package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
)

const bedrockModel = "anthropic.claude-3-haiku-20240307-v1:0"

// endpoints are connections of every adapter to srv.
func endpoints(t *testing.T, srv *llmtest.Server) map[string]llm.Endpoint {
	return map[string]llm.Endpoint{
		"openai":           {Adapter: llm.AdapterOpenAI, BaseURL: srv.URL(), APIKey: "sk-test"},
		"openai-responses": {Adapter: llm.AdapterOpenAI, BaseURL: srv.URL(), APIKey: "sk-test", Config: llm.Config{UseResponsesAPI: true}},
		"anthropic":        {Adapter: llm.AdapterAnthropic, BaseURL: srv.URL(), APIKey: "sk-ant"},
		"azure":            {Adapter: llm.AdapterAzure, BaseURL: srv.Root(), APIKey: "azure-key"},
		"bedrock": {Adapter: llm.AdapterBedrock, BaseURL: srv.Root(), Config: llm.Config{Region: "eu-west-1"},
			APIKey: srv.AWS("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", "eu-west-1")},
		"google-ai-studio": {Adapter: llm.AdapterGoogleAIStudio, BaseURL: srv.Root(), APIKey: "goog-key"},
		"google-vertex-ai": {Adapter: llm.AdapterVertexAI, BaseURL: srv.Root(), APIKey: srv.ServiceAccount(t, "proj-1"),
			Config: llm.Config{Location: "europe-west4"}},
	}
}

func last(srv *llmtest.Server) llmtest.Request {
	reqs := srv.Requests()
	return reqs[len(reqs)-1]
}

var judgeMessages = []llm.Message{{Role: "system", Content: "you judge"}, {Role: "user", Content: "rate this answer"}}

func TestAzure(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return `{"score":0.5}` })
	ep := endpoints(t, srv)["azure"]
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{Model: "gpt-4o-judge", Messages: judgeMessages,
		Params: map[string]any{"temperature": 0}, Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, llm.Response{Content: `{"score":0.5}`, Model: "gpt-4o-judge", Structured: true, Usage: llm.Usage{Input: 3, Output: 1, Total: 4}}, resp)
	req := last(srv)
	assert.Equal(t, llmtest.KindAzure, req.Kind)
	assert.Equal(t, "/openai/deployments/gpt-4o-judge/chat/completions", req.Path)
	assert.Equal(t, llm.DefaultAzureAPIVersion, req.Query.Get("api-version"))
	assert.Equal(t, "azure-key", req.Header.Get("api-key"))
	assert.Empty(t, req.Header.Get("Authorization"), "Azure keys go in api-key only")
	assert.NotContains(t, req.Body, "model", "the deployment is in the path")
	assert.Equal(t, "json_schema", req.Body["response_format"].(map[string]any)["type"])

	// Langfuse's form of the base URL, and a chosen API version.
	ep.BaseURL, ep.Config.APIVersion = srv.Root()+"/openai/deployments/", "2025-01-01-preview"
	_, err = client(t).Complete(context.Background(), ep, llm.Request{Model: "judge", Messages: judgeMessages})
	require.NoError(t, err)
	assert.Equal(t, "/openai/deployments/judge/chat/completions", last(srv).Path)
	assert.Equal(t, "2025-01-01-preview", last(srv).Query.Get("api-version"))
}

func TestOpenAIResponsesAPI(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return `{"score":1}` })
	ep := endpoints(t, srv)["openai-responses"]
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{Model: "gpt-5-mini", Messages: judgeMessages,
		Params: map[string]any{"max_tokens": 50}, Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, llm.Response{Content: `{"score":1}`, Model: "gpt-5-mini", Structured: true, Usage: llm.Usage{Input: 3, Output: 1, Total: 4}}, resp)
	req := last(srv)
	assert.Equal(t, "/v1/responses", req.Path)
	assert.Equal(t, "Bearer sk-test", req.Header.Get("Authorization"))
	assert.EqualValues(t, 50, req.Body["max_output_tokens"])
	assert.NotContains(t, req.Body, "max_tokens")
	assert.Len(t, req.Body["input"], 2, "system and user messages are the input")
	format := req.Body["text"].(map[string]any)["format"].(map[string]any)
	assert.Equal(t, "json_schema", format["type"])
	assert.Equal(t, "score", format["name"])
}

func TestBedrock(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return `{"score":1}` })
	ep := endpoints(t, srv)["bedrock"]
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{Model: bedrockModel, Messages: judgeMessages,
		Params: map[string]any{"max_tokens": 100, "temperature": 0.2, "top_k": 5, "stop": "END"}, Schema: schema})
	require.NoError(t, err, "the fake verifies the SigV4 signature")
	assert.Equal(t, llm.Response{Content: `{"score":1}`, Model: bedrockModel, Structured: true, Usage: llm.Usage{Input: 3, Output: 1, Total: 4}}, resp)
	req := last(srv)
	assert.Equal(t, "/model/"+bedrockModel+"/converse", req.Path)
	assert.Equal(t, "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", req.RawPath, "the model id is escaped in the path")
	assert.Equal(t, bedrockModel, req.Model)
	assert.Contains(t, req.Header.Get("Authorization"), "Credential=AKIDEXAMPLE/")
	assert.Contains(t, req.Header.Get("Authorization"), "/eu-west-1/bedrock/aws4_request")
	assert.Equal(t, []any{map[string]any{"text": "you judge"}}, req.Body["system"])
	assert.Equal(t, []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": "rate this answer"}}}}, req.Body["messages"])
	assert.Equal(t, map[string]any{"maxTokens": 100.0, "temperature": 0.2, "stopSequences": []any{"END"}}, req.Body["inferenceConfig"])
	assert.Equal(t, map[string]any{"top_k": 5.0}, req.Body["additionalModelRequestFields"])
	tools := req.Body["toolConfig"].(map[string]any)
	assert.Equal(t, map[string]any{"tool": map[string]any{"name": "record_answer"}}, tools["toolChoice"])

	resp, err = client(t).Complete(context.Background(), ep, llm.Request{Model: bedrockModel, Messages: judgeMessages})
	require.NoError(t, err)
	assert.False(t, resp.Structured)
	assert.Equal(t, `{"score":1}`, resp.Content)

	// Temporary credentials carry their session token, signed.
	ep.APIKey = srv.AWS("ASIATEMP", "temp-secret", "session-token-1", "eu-west-1")
	_, err = client(t).Complete(context.Background(), ep, llm.Request{Model: bedrockModel, Messages: judgeMessages})
	require.NoError(t, err)
	assert.Equal(t, "session-token-1", last(srv).Header.Get("X-Amz-Security-Token"))

	// A wrong secret, or a signature for another region, is refused.
	for name, bad := range map[string]llm.Endpoint{
		"secret": {Adapter: llm.AdapterBedrock, BaseURL: srv.Root(), Config: ep.Config,
			APIKey: `{"accessKeyId":"ASIATEMP","secretAccessKey":"wrong","sessionToken":"session-token-1"}`},
		"region": {Adapter: llm.AdapterBedrock, BaseURL: srv.Root(), Config: llm.Config{Region: "us-east-1"}, APIKey: ep.APIKey},
	} {
		_, err = client(t).Complete(context.Background(), bad, llm.Request{Model: bedrockModel, Messages: judgeMessages})
		var se *llm.StatusError
		require.ErrorAs(t, err, &se, name)
		assert.Equal(t, http.StatusForbidden, se.Status, name)
	}
	_, err = client(t).Complete(context.Background(), llm.Endpoint{Adapter: llm.AdapterBedrock, BaseURL: srv.Root(), APIKey: "not json"},
		llm.Request{Model: bedrockModel, Messages: judgeMessages})
	assert.ErrorContains(t, err, "accessKeyId")
}

// A throttled Bedrock stream fails as a throttled call does: retryable.
func TestBedrockStreamException(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return "one two three" })
	srv.Fail(llmtest.Fault{Exception: "throttlingException"})
	var pieces []string
	_, err := client(t).Stream(context.Background(), endpoints(t, srv)["bedrock"], llm.Request{Model: bedrockModel, Messages: judgeMessages},
		func(p string) { pieces = append(pieces, p) })
	var se *llm.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusTooManyRequests, se.Status)
	assert.Contains(t, se.Body, "injected exception")
	retry, _ := llm.Retryable(err)
	assert.True(t, retry)
	assert.Equal(t, []string{"one "}, pieces)
}

func TestGoogleAIStudio(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return `{"score":1}` })
	ep := endpoints(t, srv)["google-ai-studio"]
	messages := append(append([]llm.Message{}, judgeMessages...), llm.Message{Role: "assistant", Content: "which answer?"},
		llm.Message{Role: "user", Content: "the first one"})
	resp, err := client(t).Complete(context.Background(), ep, llm.Request{Model: "models/gemini-2.0-flash", Messages: messages,
		Params: map[string]any{"max_tokens": 64, "top_p": 0.9, "temperature": 0}, Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, llm.Response{Content: `{"score":1}`, Model: "gemini-2.0-flash-001", Structured: true, Usage: llm.Usage{Input: 3, Output: 1, Total: 4}}, resp)
	req := last(srv)
	assert.Equal(t, "/v1beta/models/gemini-2.0-flash:generateContent", req.Path)
	assert.Equal(t, "goog-key", req.Header.Get("x-goog-api-key"))
	assert.Empty(t, req.Header.Get("Authorization"))
	assert.Equal(t, map[string]any{"parts": []any{map[string]any{"text": "you judge"}}}, req.Body["systemInstruction"])
	contents := req.Body["contents"].([]any)
	require.Len(t, contents, 3)
	assert.Equal(t, "model", contents[1].(map[string]any)["role"])
	gen := req.Body["generationConfig"].(map[string]any)
	assert.Equal(t, 64.0, gen["maxOutputTokens"])
	assert.Equal(t, 0.9, gen["topP"])
	assert.Equal(t, "application/json", gen["responseMimeType"])
	assert.NotNil(t, gen["responseJsonSchema"])
}

func TestVertexAI(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return `{"score":1}` })
	ep := endpoints(t, srv)["google-vertex-ai"]
	c := client(t)
	for range 2 {
		resp, err := c.Complete(context.Background(), ep, llm.Request{Model: "gemini-2.0-flash", Messages: judgeMessages, Schema: schema})
		require.NoError(t, err)
		assert.True(t, resp.Structured)
		assert.Equal(t, llm.Usage{Input: 3, Output: 1, Total: 4}, resp.Usage)
	}
	assert.Equal(t, 1, srv.TokenCalls(), "the access token is reused until it expires")
	req := last(srv)
	assert.Equal(t, "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.0-flash:generateContent", req.Path)
	assert.Equal(t, "Bearer ya29.fake-1", req.Header.Get("Authorization"))

	// A key the token endpoint does not know gets no token, and no call.
	other := llmtest.New(t, nil)
	ep.APIKey = other.ServiceAccount(t, "proj-1")
	ep.APIKey = strings.Replace(ep.APIKey, other.Root(), srv.Root(), 1)
	_, err := c.Complete(context.Background(), ep, llm.Request{Model: "gemini-2.0-flash", Messages: judgeMessages, Schema: schema})
	assert.Equal(t, 2, srv.TokenCalls(), "a refused token is not asked for again without the schema")
	var se *llm.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusBadRequest, se.Status)
	assert.ErrorContains(t, err, "service account token")
	assert.Len(t, srv.Requests(), 2)

	ep.APIKey = `{"type":"service_account","project_id":"p","client_email":"e","private_key":"nope"}`
	_, err = c.Complete(context.Background(), ep, llm.Request{Model: "gemini-2.0-flash", Messages: judgeMessages})
	assert.ErrorContains(t, err, "not PEM")
	assert.NotContains(t, err.Error(), "nope", "the key is never quoted")
}

// Every adapter streams the answer in pieces, in order, with the usage,
// at its streaming endpoint.
func TestStreamAllAdapters(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) string { return "It ships on Monday morning." })
	paths := map[string]string{
		"openai": "/v1/chat/completions", "openai-responses": "/v1/responses", "anthropic": "/v1/messages",
		"azure":            "/openai/deployments/m/chat/completions",
		"bedrock":          "/model/m/converse-stream",
		"google-ai-studio": "/v1beta/models/m:streamGenerateContent",
		"google-vertex-ai": "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/m:streamGenerateContent",
	}
	for name, ep := range endpoints(t, srv) {
		t.Run(name, func(t *testing.T) {
			var pieces []string
			resp, err := client(t).Stream(context.Background(), ep, llm.Request{Model: "m", Messages: []llm.Message{
				{Role: "system", Content: "be brief"}, {Role: "user", Content: "when does it ship"}},
				Params: map[string]any{"temperature": 0.1}}, func(p string) { pieces = append(pieces, p) })
			require.NoError(t, err)
			assert.Equal(t, []string{"It ", "ships ", "on ", "Monday ", "morning."}, pieces)
			assert.Equal(t, "It ships on Monday morning.", resp.Content)
			assert.Contains(t, resp.Model, "m")
			assert.Equal(t, llm.Usage{Input: 4, Output: 5, Total: 9}, resp.Usage)
			req := last(srv)
			assert.Equal(t, paths[name], req.Path)
			assert.True(t, req.Stream)
			switch ep.Adapter {
			case llm.AdapterGoogleAIStudio, llm.AdapterVertexAI:
				assert.Equal(t, "sse", req.Query.Get("alt"))
				assert.Equal(t, 0.1, req.Body["generationConfig"].(map[string]any)["temperature"])
			case llm.AdapterBedrock:
				assert.Equal(t, 0.1, req.Body["inferenceConfig"].(map[string]any)["temperature"])
			default:
				assert.Equal(t, true, req.Body["stream"])
				assert.Equal(t, 0.1, req.Body["temperature"])
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		adapter, raw, err string
		want              llm.Config
	}{
		{adapter: "openai", raw: `{"useResponsesApi":true}`, want: llm.Config{UseResponsesAPI: true}},
		{adapter: "openai", raw: `null`},
		{adapter: "openai", raw: `{"region":"us-east-1"}`, err: `unknown key "region" for the openai adapter (allowed: useResponsesApi)`},
		{adapter: "openai", raw: `{"useResponsesApi":"yes"}`, err: "useResponsesApi must be a non-empty boolean"},
		{adapter: "anthropic", raw: `{}`},
		{adapter: "anthropic", raw: `{"x":1}`, err: `takes no settings, got "x"`},
		{adapter: "bedrock", raw: `{"region":"eu-central-1"}`, want: llm.Config{Region: "eu-central-1"}},
		{adapter: "bedrock", raw: `{}`, err: "requires"},
		{adapter: "bedrock", raw: `{"region":"evil.com/x"}`, err: "not an AWS region"},
		{adapter: "google-vertex-ai", raw: `{"location":"global"}`, want: llm.Config{Location: "global"}},
		{adapter: "google-vertex-ai", raw: `{"location":"a@b"}`, err: "not a Google Cloud location"},
		{adapter: "azure", raw: `{"apiVersion":"2024-10-21"}`, want: llm.Config{APIVersion: "2024-10-21"}},
		{adapter: "azure", raw: `[1]`, err: "must be a JSON object"},
		{adapter: "cohere", raw: `{}`, err: "unknown adapter"},
	} {
		got, err := llm.ParseConfig(tc.adapter, json.RawMessage(tc.raw))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%s %s", tc.adapter, tc.raw)
			continue
		}
		require.NoError(t, err, "%s %s", tc.adapter, tc.raw)
		assert.Equal(t, tc.want, got)
	}
}

// The hosts an endpoint calls, which the host policy checks.
func TestEndpointURLs(t *testing.T) {
	srv := llmtest.New(t, nil)
	sa := srv.ServiceAccount(t, "p")
	for _, tc := range []struct {
		ep   llm.Endpoint
		want []string
	}{
		{llm.Endpoint{Adapter: llm.AdapterBedrock, Config: llm.Config{Region: "eu-west-1"}}, []string{"https://bedrock-runtime.eu-west-1.amazonaws.com"}},
		{llm.Endpoint{Adapter: llm.AdapterVertexAI, APIKey: sa}, []string{"https://us-central1-aiplatform.googleapis.com", srv.Root() + "/token"}},
		{llm.Endpoint{Adapter: llm.AdapterVertexAI, APIKey: sa, Config: llm.Config{Location: "global"}}, []string{"https://aiplatform.googleapis.com", srv.Root() + "/token"}},
		{llm.Endpoint{Adapter: llm.AdapterGoogleAIStudio}, []string{"https://generativelanguage.googleapis.com"}},
		{llm.Endpoint{Adapter: llm.AdapterAzure, BaseURL: "https://r.openai.azure.com/"}, []string{"https://r.openai.azure.com"}},
	} {
		got, err := tc.ep.URLs()
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	_, err := llm.Endpoint{Adapter: llm.AdapterAzure}.URLs()
	assert.ErrorContains(t, err, "requires a baseURL")
}
