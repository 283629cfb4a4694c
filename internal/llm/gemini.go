package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// geminiParams renames the parameters whose Gemini names are not the camel
// case of the OpenAI ones.
var geminiParams = map[string]string{"max_tokens": "maxOutputTokens", "stop": "stopSequences"}

// geminiBody is the generateContent body of req, for Google AI Studio and
// Vertex AI alike: system messages as the system instruction, assistant
// turns as the model's, parameters in the generation config, structured
// output as a JSON response with a schema.
func geminiBody(req Request) map[string]any {
	gen := map[string]any{}
	for k, v := range req.Params {
		name, ok := geminiParams[k]
		if !ok {
			name = camelCase(k)
		}
		gen[name] = v
	}
	var system []string
	contents := make([]any, 0, len(req.Messages))
	for _, m := range req.Messages {
		role := "user"
		switch m.Role {
		case "system":
			system = append(system, m.Content)
			continue
		case "assistant":
			role = "model"
		}
		contents = append(contents, map[string]any{"role": role, "parts": []any{map[string]any{"text": m.Content}}})
	}
	body := map[string]any{"contents": contents}
	if len(system) > 0 {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": strings.Join(system, "\n\n")}}}
	}
	if req.Schema != nil {
		gen["responseMimeType"], gen["responseJsonSchema"] = "application/json", req.Schema.Schema
	}
	if len(gen) > 0 {
		body["generationConfig"] = gen
	}
	return body
}

// camelCase turns top_p into topP.
func camelCase(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// geminiCall is req for Google AI Studio (an API key) or Vertex AI (a
// service account's access token, the project the account belongs to).
func (c *Client) geminiCall(ctx context.Context, ep Endpoint, req Request, stream bool) (call, error) {
	method := ":generateContent"
	if stream {
		method = ":streamGenerateContent?alt=sse"
	}
	model := strings.TrimPrefix(strings.TrimPrefix(req.Model, "publishers/google/"), "models/")
	body := geminiBody(req)
	if ep.Adapter == AdapterGoogleAIStudio {
		return call{url: ep.baseURL() + "/v1beta/models/" + url.PathEscape(model) + method,
			header: map[string]string{"x-goog-api-key": ep.APIKey}, body: body}, nil
	}
	sa, err := parseServiceAccount(ep.APIKey)
	if err != nil {
		return call{}, err
	}
	token, err := c.vertexToken(ctx, sa)
	if err != nil {
		return call{}, err
	}
	return call{url: ep.baseURL() + "/v1/projects/" + url.PathEscape(sa.ProjectID) + "/locations/" + ep.Config.location() +
		"/publishers/google/models/" + url.PathEscape(model) + method,
		header: map[string]string{"Authorization": "Bearer " + token}, body: body}, nil
}

// geminiAnswer is a GenerateContentResponse, whole or one streamed chunk.
type geminiAnswer struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		Prompt   int64 `json:"promptTokenCount"`
		Answer   int64 `json:"candidatesTokenCount"`
		Thoughts int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	Error        *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// read takes the answer's model and usage into resp and returns its text;
// thoughts are not the answer, though their tokens are output.
func (a geminiAnswer) read(resp *Response) (string, error) {
	if a.Error != nil {
		return "", fmt.Errorf("provider stream failed: %s", a.Error.Message)
	}
	if a.ModelVersion != "" {
		resp.Model = a.ModelVersion
	}
	if u := a.UsageMetadata; u != nil {
		resp.Usage.Input, resp.Usage.Output = u.Prompt, u.Answer+u.Thoughts
	}
	if len(a.Candidates) == 0 {
		if a.PromptFeedback != nil && a.PromptFeedback.BlockReason != "" {
			return "", fmt.Errorf("provider blocked the prompt: %s", a.PromptFeedback.BlockReason)
		}
		return "", nil
	}
	var text strings.Builder
	for _, part := range a.Candidates[0].Content.Parts {
		if !part.Thought {
			text.WriteString(part.Text)
		}
	}
	return text.String(), nil
}

func (c *Client) gemini(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	cl, err := c.geminiCall(ctx, ep, req, false)
	if err != nil {
		return Response{}, err
	}
	var out geminiAnswer
	if err := c.post(ctx, ep, cl, &out); err != nil {
		return Response{}, err
	}
	if len(out.Candidates) == 0 && out.PromptFeedback == nil {
		return Response{}, errors.New("provider answered without candidates")
	}
	resp := Response{Model: req.Model, Structured: req.Schema != nil}
	if resp.Content, err = out.read(&resp); err != nil {
		return Response{}, err
	}
	resp.Usage.Total = resp.Usage.Input + resp.Usage.Output
	return resp, nil
}

// geminiChunk reads one streamed GenerateContentResponse; the usage in
// each chunk counts the answer so far.
func geminiChunk(data []byte, resp *Response) (string, error) {
	var chunk geminiAnswer
	if err := json.Unmarshal(data, &chunk); err != nil {
		return "", fmt.Errorf("decode provider stream: %w", err)
	}
	return chunk.read(resp)
}
