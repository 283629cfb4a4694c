package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// responsesUsage is the Responses API's token count.
type responsesUsage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

// responsesCall is req for OpenAI's Responses API: the messages as input,
// max_tokens as max_output_tokens, the schema as the text format.
func responsesCall(ep Endpoint, req Request) call {
	body := map[string]any{}
	for k, v := range req.Params {
		if k == "max_tokens" {
			k = "max_output_tokens"
		}
		body[k] = v
	}
	body["model"], body["input"] = req.Model, req.Messages
	if req.Schema != nil {
		body["text"] = map[string]any{"format": map[string]any{
			"type": "json_schema", "name": req.Schema.Name, "schema": req.Schema.Schema, "strict": true,
		}}
	}
	return call{url: ep.baseURL() + "/responses", header: map[string]string{"Authorization": "Bearer " + ep.APIKey}, body: body}
}

func (c *Client) responses(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	var out struct {
		Model  string `json:"model"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage responsesUsage `json:"usage"`
	}
	if err := c.post(ctx, ep, responsesCall(ep, req), &out); err != nil {
		return Response{}, err
	}
	var text strings.Builder
	for _, item := range out.Output {
		if item.Type != "message" {
			continue // reasoning summaries and tool calls
		}
		for _, part := range item.Content {
			if part.Type == "output_text" {
				text.WriteString(part.Text)
			}
		}
	}
	return Response{Content: text.String(), Model: out.Model, Structured: req.Schema != nil,
		Usage: Usage{Input: out.Usage.Input, Output: out.Usage.Output, Total: out.Usage.Input + out.Usage.Output}}, nil
}

// responsesEvent reads one Responses API stream event: text deltas, the
// model and usage of the completed response, and failures.
func responsesEvent(data []byte, resp *Response) (string, error) {
	var ev struct {
		Type     string `json:"type"`
		Delta    string `json:"delta"`
		Message  string `json:"message"`
		Response struct {
			Model string          `json:"model"`
			Usage *responsesUsage `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", fmt.Errorf("decode provider stream: %w", err)
	}
	if ev.Response.Model != "" {
		resp.Model = ev.Response.Model
	}
	switch ev.Type {
	case "response.output_text.delta":
		return ev.Delta, nil
	case "response.completed", "response.incomplete":
		if u := ev.Response.Usage; u != nil {
			resp.Usage.Input, resp.Usage.Output = u.Input, u.Output
		}
	case "response.failed":
		msg := "no reason given"
		if ev.Response.Error != nil {
			msg = ev.Response.Error.Message
		}
		return "", fmt.Errorf("provider stream failed: %s", msg)
	case "error":
		return "", fmt.Errorf("provider stream failed: %s", ev.Message)
	}
	return "", nil
}
