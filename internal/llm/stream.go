package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// maxStreamLine bounds one server-sent event line.
const maxStreamLine = 1 << 20

// Stream sends one chat request asking the provider to stream its answer,
// and calls onText with each piece as it arrives. It returns the whole
// answer with its usage, as Complete does. Structured output is not
// streamed: Complete serves it.
func (c *Client) Stream(ctx context.Context, ep Endpoint, req Request, onText func(string)) (Response, error) {
	if req.Schema != nil {
		return Response{}, errors.New("structured output is not streamed")
	}
	var (
		cl    call
		parse func(data []byte, resp *Response) (string, error)
	)
	switch ep.Adapter {
	case AdapterOpenAI, AdapterAzure:
		if ep.Config.UseResponsesAPI && ep.Adapter == AdapterOpenAI {
			cl, parse = responsesCall(ep, req), responsesEvent
			break
		}
		cl, parse = openAICall(ep, req), openAIChunk
		cl.body.(map[string]any)["stream_options"] = map[string]any{"include_usage": true}
	case AdapterAnthropic:
		cl, parse = anthropicCall(ep, req), anthropicEvent
	case AdapterGoogleAIStudio, AdapterVertexAI:
		var err error
		if cl, err = c.geminiCall(ctx, ep, req, true); err != nil {
			return Response{}, err
		}
		parse = geminiChunk
	case AdapterBedrock:
		return c.bedrockStream(ctx, ep, req, onText)
	default:
		return Response{}, fmt.Errorf("unknown adapter %q", ep.Adapter)
	}
	if body, ok := cl.body.(map[string]any); ok && ep.Adapter != AdapterGoogleAIStudio && ep.Adapter != AdapterVertexAI {
		body["stream"] = true // Gemini streams by its method name
	}
	httpResp, err := c.send(ctx, ep, cl)
	if err != nil {
		return Response{}, err
	}
	defer httpResp.Body.Close()
	var (
		resp Response
		text pieces
	)
	lines := bufio.NewScanner(httpResp.Body)
	lines.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data:")
		if !ok {
			continue // event names, comments and blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		piece, err := parse([]byte(data), &resp)
		if err != nil {
			return Response{}, err
		}
		if err := text.add(piece, onText); err != nil {
			return Response{}, err
		}
	}
	if err := lines.Err(); err != nil {
		return Response{}, fmt.Errorf("read provider stream: %w", err)
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	resp.Content = text.String()
	resp.Usage.Total = resp.Usage.Input + resp.Usage.Output
	return resp, nil
}

// pieces collects a streamed answer up to maxResponseBytes.
type pieces struct{ strings.Builder }

func (p *pieces) add(piece string, onText func(string)) error {
	if piece == "" {
		return nil
	}
	if p.Len()+len(piece) > maxResponseBytes {
		return errors.New("provider answer too long")
	}
	_, _ = p.WriteString(piece)
	onText(piece)
	return nil
}

// openAIChunk reads one chat.completion.chunk: a piece of the answer, and
// the usage in the last chunk.
func openAIChunk(data []byte, resp *Response) (string, error) {
	var chunk struct {
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Usage *struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &chunk); err != nil {
		return "", fmt.Errorf("decode provider stream: %w", err)
	}
	if chunk.Model != "" {
		resp.Model = chunk.Model
	}
	if chunk.Usage != nil {
		resp.Usage.Input, resp.Usage.Output = chunk.Usage.Prompt, chunk.Usage.Completion
	}
	if len(chunk.Choices) == 0 {
		return "", nil
	}
	return chunk.Choices[0].Delta.Content, nil
}

// anthropicEvent reads one messages stream event: text deltas, the model
// and input tokens at the start, output tokens at the end, and errors.
func anthropicEvent(data []byte, resp *Response) (string, error) {
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Model string `json:"model"`
			Usage struct {
				Input int64 `json:"input_tokens"`
			} `json:"usage"`
		} `json:"message"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
		Usage struct {
			Output int64 `json:"output_tokens"`
		} `json:"usage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", fmt.Errorf("decode provider stream: %w", err)
	}
	switch ev.Type {
	case "message_start":
		resp.Model, resp.Usage.Input = ev.Message.Model, ev.Message.Usage.Input
	case "content_block_delta":
		if ev.Delta.Type == "text_delta" {
			return ev.Delta.Text, nil
		}
	case "message_delta":
		resp.Usage.Output = ev.Usage.Output
	case "error":
		return "", fmt.Errorf("provider stream failed: %s", ev.Error.Message)
	}
	return "", nil
}
