package llm

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// awsKeys are the credentials a Bedrock connection's secret holds, as the
// JSON object {"accessKeyId", "secretAccessKey", "sessionToken"?}.
type awsKeys struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	SessionToken    string `json:"sessionToken,omitempty"`
}

func parseAWSKeys(secret string) (awsKeys, error) {
	var k awsKeys
	if err := json.Unmarshal([]byte(secret), &k); err != nil || k.AccessKeyID == "" || k.SecretAccessKey == "" {
		return awsKeys{}, errors.New(`the bedrock secretKey must be the JSON object {"accessKeyId": ..., "secretAccessKey": ...} (and "sessionToken" for temporary credentials)`)
	}
	return k, nil
}

// bedrockService is the SigV4 signing name of the Bedrock runtime.
const bedrockService = "bedrock"

// bedrockBody is the Converse API body of req: messages as text content
// blocks, system messages apart, the common parameters in the inference
// configuration and the others passed to the model as they are,
// structured output as a forced tool call.
func bedrockBody(req Request) map[string]any {
	inference, extra := map[string]any{}, map[string]any{}
	for k, v := range req.Params {
		switch k {
		case "max_tokens":
			inference["maxTokens"] = v
		case "temperature":
			inference["temperature"] = v
		case "top_p":
			inference["topP"] = v
		case "stop":
			if s, ok := v.(string); ok {
				v = []string{s}
			}
			inference["stopSequences"] = v
		default:
			extra[k] = v
		}
	}
	var system []any
	messages := make([]any, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			system = append(system, map[string]any{"text": m.Content})
			continue
		}
		messages = append(messages, map[string]any{"role": m.Role, "content": []any{map[string]any{"text": m.Content}}})
	}
	body := map[string]any{"messages": messages}
	if len(system) > 0 {
		body["system"] = system
	}
	if len(inference) > 0 {
		body["inferenceConfig"] = inference
	}
	if len(extra) > 0 {
		body["additionalModelRequestFields"] = extra
	}
	if req.Schema != nil {
		body["toolConfig"] = map[string]any{
			"tools": []any{map[string]any{"toolSpec": map[string]any{
				"name": anthropicTool, "description": "Record the answer.", "inputSchema": map[string]any{"json": req.Schema.Schema},
			}}},
			"toolChoice": map[string]any{"tool": map[string]any{"name": anthropicTool}},
		}
	}
	return body
}

// bedrockCall is req at the model's converse (or converse-stream) path,
// signed with the connection's AWS keys for its region.
func bedrockCall(ep Endpoint, req Request, stream bool) (call, error) {
	keys, err := parseAWSKeys(ep.APIKey)
	if err != nil {
		return call{}, err
	}
	op := "/converse"
	if stream {
		op = "/converse-stream"
	}
	region := ep.Config.Region
	return call{
		// Model ids hold ':' (anthropic.claude-3-haiku-20240307-v1:0),
		// which the path carries escaped.
		url: ep.baseURL() + "/model/" + awsEscape(req.Model, true) + op, body: bedrockBody(req),
		sign: func(r *http.Request, body []byte) error {
			signV4(r, body, keys, region, bedrockService, time.Now())
			return nil
		},
	}, nil
}

// bedrockOutput is the Converse API answer.
type bedrockOutput struct {
	Output struct {
		Message struct {
			Content []struct {
				Text    *string `json:"text"`
				ToolUse *struct {
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"toolUse"`
			} `json:"content"`
		} `json:"message"`
	} `json:"output"`
	Usage bedrockUsage `json:"usage"`
}

type bedrockUsage struct {
	Input  int64 `json:"inputTokens"`
	Output int64 `json:"outputTokens"`
}

func (c *Client) bedrock(ctx context.Context, ep Endpoint, req Request) (Response, error) {
	cl, err := bedrockCall(ep, req, false)
	if err != nil {
		return Response{}, err
	}
	var out bedrockOutput
	if err := c.post(ctx, ep, cl, &out); err != nil {
		return Response{}, err
	}
	resp := Response{Model: req.Model, Usage: Usage{Input: out.Usage.Input, Output: out.Usage.Output, Total: out.Usage.Input + out.Usage.Output}}
	var text []string
	for _, block := range out.Output.Message.Content {
		switch {
		case block.ToolUse != nil && block.ToolUse.Name == anthropicTool:
			resp.Content, resp.Structured = string(block.ToolUse.Input), true
			return resp, nil
		case block.Text != nil:
			text = append(text, *block.Text)
		}
	}
	resp.Content = strings.Join(text, "")
	return resp, nil
}

// bedrockExceptions are the statuses of the exceptions Bedrock sends in a
// stream, so that a throttled or failed stream is retried as a refused
// call would be.
var bedrockExceptions = map[string]int{
	"throttlingException": http.StatusTooManyRequests, "serviceUnavailableException": http.StatusServiceUnavailable,
	"internalServerException": http.StatusInternalServerError, "modelStreamErrorException": http.StatusBadGateway,
	"validationException": http.StatusBadRequest,
}

func (c *Client) bedrockStream(ctx context.Context, ep Endpoint, req Request, onText func(string)) (Response, error) {
	cl, err := bedrockCall(ep, req, true)
	if err != nil {
		return Response{}, err
	}
	httpResp, err := c.send(ctx, ep, cl)
	if err != nil {
		return Response{}, err
	}
	defer httpResp.Body.Close()
	resp := Response{Model: req.Model}
	var text pieces
	r := bufio.NewReader(httpResp.Body)
	for {
		msg, err := readEvent(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, fmt.Errorf("read provider stream: %w", err)
		}
		switch msg.Headers[":message-type"] {
		case "exception":
			var ex struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(msg.Payload, &ex)
			kind := msg.Headers[":exception-type"]
			status, ok := bedrockExceptions[kind]
			if !ok {
				status = http.StatusBadGateway
			}
			return Response{}, &StatusError{Status: status, Body: kind + ": " + ex.Message}
		case "error":
			return Response{}, fmt.Errorf("provider stream failed: %s: %s", msg.Headers[":error-code"], msg.Headers[":error-message"])
		case "event":
		default:
			continue
		}
		var ev struct {
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
			Usage bedrockUsage `json:"usage"`
		}
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			return Response{}, fmt.Errorf("decode provider stream: %w", err)
		}
		switch msg.Headers[":event-type"] {
		case "contentBlockDelta":
			if err := text.add(ev.Delta.Text, onText); err != nil {
				return Response{}, err
			}
		case "metadata":
			resp.Usage.Input, resp.Usage.Output = ev.Usage.Input, ev.Usage.Output
		}
	}
	resp.Content = text.String()
	resp.Usage.Total = resp.Usage.Input + resp.Usage.Output
	return resp, nil
}

// signV4 signs r with AWS Signature Version 4: the content type, host,
// date (and session token) headers, and the body's hash.
func signV4(r *http.Request, body []byte, keys awsKeys, region, service string, now time.Time) {
	amzDate := now.UTC().Format("20060102T150405Z")
	day := amzDate[:8]
	r.Header.Set("X-Amz-Date", amzDate)
	if keys.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", keys.SessionToken)
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	headers := map[string]string{"host": host}
	for _, h := range []string{"Content-Type", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := r.Header.Get(h); v != "" {
			headers[strings.ToLower(h)] = strings.TrimSpace(v)
		}
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	slices.Sort(names)
	var canonHeaders strings.Builder
	for _, k := range names {
		canonHeaders.WriteString(k + ":" + headers[k] + "\n")
	}
	signed := strings.Join(names, ";")
	payload := sha256.Sum256(body)
	canonical := strings.Join([]string{r.Method, canonicalURI(r.URL), canonicalQuery(r.URL), canonHeaders.String(), signed,
		hex.EncodeToString(payload[:])}, "\n")
	scope := day + "/" + region + "/" + service + "/aws4_request"
	hashed := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(hashed[:])
	key := hmacSHA256([]byte("AWS4"+keys.SecretAccessKey), day)
	for _, part := range []string{region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+keys.AccessKeyID+"/"+scope+", SignedHeaders="+signed+
		", Signature="+hex.EncodeToString(hmacSHA256(key, toSign)))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// canonicalURI is the escaped path escaped once more, as SigV4 wants for
// every service but S3.
func canonicalURI(u *url.URL) string {
	path := u.EscapedPath()
	if path == "" {
		return "/"
	}
	return awsEscape(path, false)
}

// canonicalQuery is the query sorted by name and value, each escaped.
func canonicalQuery(u *url.URL) string {
	var pairs [][2]string
	for k, vs := range u.Query() {
		for _, v := range vs {
			pairs = append(pairs, [2]string{awsEscape(k, true), awsEscape(v, true)})
		}
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + "=" + p[1]
	}
	return strings.Join(out, "&")
}

// awsEscape percent-encodes every byte but the unreserved ones (and '/'
// unless slash is set).
func awsEscape(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || (c == '/' && !slash) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
