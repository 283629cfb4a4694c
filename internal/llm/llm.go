// Package llm calls chat models for the evaluation workers: the OpenAI chat
// completions API (and every server compatible with it) or its Responses
// API, Anthropic's messages API, Azure OpenAI, the AWS Bedrock Converse
// API, and Gemini through Google AI Studio or Vertex AI. It asks for
// structured output where the provider supports it, falls back to plain
// text where a server refuses it, and tells retryable failures (429, 5xx,
// timeouts) from permanent ones.
package llm // import "github.com/glassbox-dev/glassbox/internal/llm"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Adapters, as the control plane names them.
const (
	AdapterOpenAI         = "openai"
	AdapterAnthropic      = "anthropic"
	AdapterAzure          = "azure"
	AdapterBedrock        = "bedrock"
	AdapterVertexAI       = "google-vertex-ai"
	AdapterGoogleAIStudio = "google-ai-studio"
)

// anthropicVersion is the messages API version the requests are written for.
const anthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is sent when the parameters name no max_tokens,
// which Anthropic requires.
const defaultAnthropicMaxTokens = 1024

// maxResponseBytes bounds a provider's answer.
const maxResponseBytes = 4 << 20

// Endpoint is where and as whom to call.
type Endpoint struct {
	Adapter string
	// BaseURL may be empty where the adapter and config imply it.
	BaseURL string
	// APIKey is the connection's secret: an API key, Bedrock's AWS keys or
	// Vertex AI's service account JSON.
	APIKey  string
	Headers map[string]string
	Config  Config
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Schema asks for an answer that is a JSON object matching Schema.
type Schema struct {
	Name   string
	Schema json.RawMessage
}

// Request is one chat call.
type Request struct {
	Model    string
	Messages []Message
	// Params are model parameters merged into the request body
	// (temperature, max_tokens, top_p, ...).
	Params map[string]any
	// Schema, when set, asks for structured output.
	Schema *Schema
}

// Usage counts tokens.
type Usage struct {
	Input  int64
	Output int64
	Total  int64
}

// Response is the model's answer.
type Response struct {
	// Content is the answer text; for structured output the JSON object.
	Content string
	// Model is the model that answered, as the provider names it.
	Model string
	Usage Usage
	// Structured reports whether the provider honoured the schema.
	Structured bool
}

// StatusError is a provider's non-success answer.
type StatusError struct {
	Status int
	Body   string
	// RetryAfter is the provider's Retry-After, zero when it sent none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	body := e.Body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("provider answered %d: %s", e.Status, strings.TrimSpace(body))
}

// Retryable reports whether a failed call may succeed when repeated, and
// how long the provider asked to wait (zero when it did not say).
func Retryable(err error) (bool, time.Duration) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusTooManyRequests || se.Status == http.StatusRequestTimeout || se.Status >= 500, se.RetryAfter
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true, 0
	}
	return false, 0
}

// Client calls providers. It is safe for concurrent use.
type Client struct {
	HTTP *http.Client

	// tokens caches Vertex AI access tokens by service account.
	tokens tokenCache
}

// CloseIdleConnections releases the client's idle connections.
func (c *Client) CloseIdleConnections() {
	c.HTTP.CloseIdleConnections()
}

// Complete sends one chat request. ctx bounds the call.
func (c *Client) Complete(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	var fn func(context.Context, Endpoint, Request) (Response, error)
	switch ep.Adapter {
	case AdapterOpenAI:
		fn = c.openAI
		if ep.Config.UseResponsesAPI {
			fn = c.responses
		}
	case AdapterAzure:
		fn = c.openAI
	case AdapterAnthropic:
		return c.anthropic(ctx, ep, req)
	case AdapterBedrock:
		fn = c.bedrock
	case AdapterGoogleAIStudio, AdapterVertexAI:
		fn = c.gemini
	default:
		return Response{}, fmt.Errorf("unknown adapter %q", ep.Adapter)
	}
	resp, err := fn(ctx, ep, req)
	var (
		se *StatusError
		te *tokenError
	)
	if req.Schema != nil && errors.As(err, &se) && se.Status == http.StatusBadRequest && !errors.As(err, &te) {
		// Many compatible servers (and some models) refuse a response
		// schema; the prompt asks for JSON anyway, so the answer is
		// parsed from the text.
		plain := req
		plain.Schema = nil
		return fn(ctx, ep, plain)
	}
	return resp, err
}

// openAIBody is the chat completions request body of req.
func openAIBody(req Request) map[string]any {
	body := map[string]any{}
	for k, v := range req.Params {
		body[k] = v
	}
	body["model"], body["messages"] = req.Model, req.Messages
	if req.Schema != nil {
		body["response_format"] = map[string]any{
			"type":        "json_schema",
			"json_schema": map[string]any{"name": req.Schema.Name, "schema": req.Schema.Schema, "strict": true},
		}
	}
	return body
}

// openAICall is the chat completions call of req: at {base}/chat/completions
// with a bearer key, or for Azure at the deployment the model names, with
// its api-key header and api-version.
func openAICall(ep Endpoint, req Request) call {
	body := openAIBody(req)
	if ep.Adapter != AdapterAzure {
		return call{url: ep.baseURL() + "/chat/completions", header: map[string]string{"Authorization": "Bearer " + ep.APIKey}, body: body}
	}
	// The deployment is in the path; Azure takes no model in the body.
	delete(body, "model")
	version := ep.Config.APIVersion
	if version == "" {
		version = DefaultAzureAPIVersion
	}
	base := ep.baseURL()
	// Langfuse's Azure base URLs end in /openai/deployments; plain resource
	// URLs (https://name.openai.azure.com) take it appended.
	switch {
	case strings.HasSuffix(base, "/openai/deployments"):
	case strings.HasSuffix(base, "/openai"):
		base += "/deployments"
	default:
		base += "/openai/deployments"
	}
	return call{url: base + "/" + url.PathEscape(req.Model) + "/chat/completions?api-version=" + url.QueryEscape(version),
		header: map[string]string{"api-key": ep.APIKey}, body: body}
}

func (c *Client) openAI(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Total      int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := c.post(ctx, ep, openAICall(ep, req), &out); err != nil {
		return Response{}, err
	}
	if len(out.Choices) == 0 {
		return Response{}, errors.New("provider answered without choices")
	}
	if out.Model == "" {
		out.Model = req.Model
	}
	return Response{
		Content: out.Choices[0].Message.Content, Model: out.Model, Structured: req.Schema != nil,
		Usage: Usage{Input: out.Usage.Prompt, Output: out.Usage.Completion, Total: out.Usage.Total},
	}, nil
}

// anthropicTool is the tool whose input is the structured answer: forcing
// the model to call it is how the messages API returns a schema'd object.
const anthropicTool = "record_answer"

// anthropicBody is the messages request body of req: system messages go
// to the system field, structured output is a forced tool call.
func anthropicBody(req Request) map[string]any {
	body := map[string]any{"max_tokens": defaultAnthropicMaxTokens}
	for k, v := range req.Params {
		body[k] = v
	}
	var system []string
	messages := make([]Message, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			system = append(system, m.Content)
			continue
		}
		messages = append(messages, m)
	}
	body["model"], body["messages"] = req.Model, messages
	if len(system) > 0 {
		body["system"] = strings.Join(system, "\n\n")
	}
	if req.Schema != nil {
		body["tools"] = []any{map[string]any{"name": anthropicTool, "description": "Record the answer.", "input_schema": req.Schema.Schema}}
		body["tool_choice"] = map[string]any{"type": "tool", "name": anthropicTool}
	}
	return body
}

func anthropicCall(ep Endpoint, req Request) call {
	return call{url: ep.baseURL() + "/messages", body: anthropicBody(req),
		header: map[string]string{"x-api-key": ep.APIKey, "anthropic-version": anthropicVersion}}
}

func (c *Client) anthropic(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	var out struct {
		Model   string `json:"model"`
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := c.post(ctx, ep, anthropicCall(ep, req), &out); err != nil {
		return Response{}, err
	}
	resp := Response{Model: out.Model, Usage: Usage{Input: out.Usage.Input, Output: out.Usage.Output, Total: out.Usage.Input + out.Usage.Output}}
	var text []string
	for _, block := range out.Content {
		switch {
		case block.Type == "tool_use" && block.Name == anthropicTool:
			resp.Content, resp.Structured = string(block.Input), true
			return resp, nil
		case block.Type == "text":
			text = append(text, block.Text)
		}
	}
	resp.Content = strings.Join(text, "")
	return resp, nil
}

// call is one HTTP request to a provider.
type call struct {
	url    string
	header map[string]string
	body   any
	// sign, when set, authenticates the finished request (Bedrock's
	// SigV4, which covers the headers and the body).
	sign func(req *http.Request, body []byte) error
}

// send posts the call's body and returns the provider's answer once its
// status is a success; any other status is a *StatusError.
func (c *Client) send(ctx context.Context, ep Endpoint, cl call) (*http.Response, error) {
	buf, err := json.Marshal(cl.body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range ep.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	if cl.sign != nil {
		if err := cl.sign(req, buf); err != nil {
			return nil, err
		}
	}
	return c.do(req)
}

// do sends req; a non-success status is a *StatusError.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("call provider: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return nil, &StatusError{Status: resp.StatusCode, Body: string(data), RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return resp, nil
}

func (c *Client) post(ctx context.Context, ep Endpoint, cl call, out any) error {
	resp, err := c.send(ctx, ep, cl)
	if err != nil {
		return err
	}
	return decodeAnswer(resp, out)
}

// decodeAnswer reads a JSON answer into out and closes it.
func decodeAnswer(resp *http.Response, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read provider answer: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode provider answer: %w", err)
	}
	return nil
}

// retryAfter reads Retry-After in seconds or as an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
