// Package llmtest is a local fake of the chat model APIs for tests: OpenAI
// chat completions and Responses, Anthropic messages, Azure OpenAI, the
// Bedrock Converse API and Gemini (Google AI Studio and Vertex AI). It
// checks each provider's authentication as the provider would (SigV4
// signatures, Vertex AI's service account token exchange), answers
// deterministically, streamed or not, records the requests, and injects
// failures (429s, 5xx, slow answers, stream exceptions).
package llmtest // import "github.com/glassbox-dev/glassbox/internal/llm/llmtest"

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Provider APIs the server tells apart by path.
const (
	KindOpenAI    = "openai"
	KindResponses = "responses"
	KindAnthropic = "anthropic"
	KindAzure     = "azure"
	KindBedrock   = "bedrock"
	KindAIStudio  = "google-ai-studio"
	KindVertexAI  = "google-vertex-ai"
)

// Request is a call the server received.
type Request struct {
	Kind    string // the API the path names, one of the Kind constants
	Path    string
	RawPath string // the path as sent, escaped
	Query   url.Values
	Header  http.Header
	Body    map[string]any
	Model   string
	Prompt  string // the last user message
	Schema  bool   // structured output was asked for
	Stream  bool
	Attempt int // 1 for the first call the server saw
}

// Fault makes one call fail: with Status (and Retry-After), by answering
// only after Delay, or, for a Bedrock stream, with Exception sent inside
// the stream after its first piece.
type Fault struct {
	Status     int
	RetryAfter int
	Delay      time.Duration
	Exception  string
}

// Answer returns the content for a request; the default echoes a fixed
// JSON score.
type Answer func(r Request) string

// Server is the fake provider.
type Server struct {
	*httptest.Server
	answer Answer

	mu       sync.Mutex
	requests []Request
	faults   []Fault
	// refuseSchema answers 400 to requests that ask for structured output,
	// as some OpenAI-compatible servers do.
	refuseSchema bool
	aws          *awsAccount
	accounts     map[string]*serviceAccount // by client email
	tokens       map[string]bool            // access tokens issued
	tokenCalls   int
}

// New starts a server that answers with answer; it stops when the test ends.
func New(t testing.TB, answer Answer) *Server {
	t.Helper()
	if answer == nil {
		answer = func(Request) string { return `{"reasoning":"fixed","score":1}` }
	}
	s := &Server{answer: answer, accounts: map[string]*serviceAccount{}, tokens: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to configure as an OpenAI or Anthropic connection's,
// like .../v1.
func (s *Server) URL() string { return s.Server.URL + "/v1" }

// Root is the base URL of the other adapters: the Azure resource, the
// Bedrock runtime, the Gemini API host.
func (s *Server) Root() string { return s.Server.URL }

// Fail queues faults for the next calls, one call each.
func (s *Server) Fail(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// RefuseSchema makes the server answer 400 to structured output requests.
func (s *Server) RefuseSchema() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseSchema = true
}

// Requests returns the calls received so far, failed ones included; token
// exchanges are counted by TokenCalls.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == tokenPath {
		s.token(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	var body map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req := Request{Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
	if !parseRequest(&req, body) {
		http.Error(w, `{"error":{"message":"no such API"}}`, http.StatusNotFound)
		return
	}
	s.mu.Lock()
	req.Attempt = len(s.requests) + 1
	s.requests = append(s.requests, req)
	var fault *Fault
	if len(s.faults) > 0 {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	refuse := s.refuseSchema && req.Schema
	s.mu.Unlock()

	if status, msg := s.authenticate(r, req, raw); status != 0 {
		http.Error(w, `{"error":{"message":`+strconv.Quote(msg)+`}}`, status)
		return
	}
	if fault != nil {
		if fault.Delay > 0 {
			select {
			case <-time.After(fault.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if fault.Status != 0 {
			if fault.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(fault.RetryAfter))
			}
			http.Error(w, `{"error":{"message":"injected failure"}}`, fault.Status)
			return
		}
	}
	if refuse {
		http.Error(w, `{"error":{"message":"response_format is not supported"}}`, http.StatusBadRequest)
		return
	}
	a := answer{Request: req, content: s.answer(req)}
	a.input, a.output = int64(len(strings.Fields(req.Prompt))), int64(len(strings.Fields(a.content)))
	if fault != nil {
		a.exception = fault.Exception
	}
	if req.Stream {
		a.stream(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a.whole())
}

// parseRequest names the API req's path calls and reads the model, the
// prompt, whether it streams and asks for a schema; false for no API.
func parseRequest(req *Request, body map[string]any) bool {
	path := req.Path
	req.Model, _ = body["model"].(string)
	req.Stream, _ = body["stream"].(bool)
	messages, textOf := body["messages"], func(m map[string]any) string { s, _ := m["content"].(string); return s }
	switch {
	case strings.Contains(path, "/openai/deployments/") && strings.HasSuffix(path, "/chat/completions"):
		req.Kind = KindAzure
		req.Model = strings.TrimSuffix(path[strings.Index(path, "/openai/deployments/")+len("/openai/deployments/"):], "/chat/completions")
		_, req.Schema = body["response_format"]
	case strings.HasSuffix(path, "/chat/completions"):
		req.Kind = KindOpenAI
		_, req.Schema = body["response_format"]
	case strings.HasSuffix(path, "/messages"):
		req.Kind = KindAnthropic
		_, req.Schema = body["tools"]
	case strings.HasSuffix(path, "/responses"):
		req.Kind, messages = KindResponses, body["input"]
		_, req.Schema = body["text"]
	case strings.HasPrefix(path, "/model/") && (strings.HasSuffix(path, "/converse") || strings.HasSuffix(path, "/converse-stream")):
		req.Kind, req.Stream = KindBedrock, strings.HasSuffix(path, "/converse-stream")
		req.Model = strings.TrimPrefix(path[:strings.LastIndex(path, "/")], "/model/")
		_, req.Schema = body["toolConfig"]
		textOf = firstText("content")
	case strings.Contains(path, ":generateContent") || strings.Contains(path, ":streamGenerateContent"):
		req.Kind = KindAIStudio
		if strings.Contains(path, "/projects/") {
			req.Kind = KindVertexAI
		}
		model, method, _ := strings.Cut(path[strings.LastIndex(path, "/models/")+len("/models/"):], ":")
		req.Model, req.Stream = model, method == "streamGenerateContent"
		if gen, ok := body["generationConfig"].(map[string]any); ok {
			_, req.Schema = gen["responseJsonSchema"]
		}
		messages, textOf = body["contents"], firstText("parts")
	default:
		return false
	}
	if msgs, ok := messages.([]any); ok {
		for _, m := range msgs {
			if msg, ok := m.(map[string]any); ok && msg["role"] == "user" {
				req.Prompt = textOf(msg)
			}
		}
	}
	return true
}

// firstText reads the text of a message's first content block.
func firstText(field string) func(map[string]any) string {
	return func(m map[string]any) string {
		blocks, _ := m[field].([]any)
		if len(blocks) == 0 {
			return ""
		}
		block, _ := blocks[0].(map[string]any)
		s, _ := block["text"].(string)
		return s
	}
}

// authenticate checks the credentials each API takes; a non-zero status
// refuses the call.
func (s *Server) authenticate(r *http.Request, req Request, body []byte) (int, string) {
	switch req.Kind {
	case KindAzure:
		if r.Header.Get("api-key") == "" || r.Header.Get("Authorization") != "" {
			return http.StatusUnauthorized, "Azure takes the key in the api-key header"
		}
		if req.Query.Get("api-version") == "" {
			return http.StatusNotFound, "api-version is required"
		}
	case KindAIStudio:
		if r.Header.Get("x-goog-api-key") == "" {
			return http.StatusForbidden, "API key missing"
		}
	case KindBedrock:
		return s.verifyAWS(r, body)
	case KindVertexAI:
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		issued := s.tokens[token]
		s.mu.Unlock()
		if !ok || !issued {
			return http.StatusUnauthorized, "Request had invalid authentication credentials"
		}
	}
	return 0, ""
}

// answer is the content of one call and its token counts.
type answer struct {
	Request
	content       string
	input, output int64
	exception     string
}

// whole is the answer as the API returns it unstreamed.
func (a answer) whole() any {
	switch a.Kind {
	case KindAnthropic:
		block := map[string]any{"type": "text", "text": a.content}
		if a.Schema {
			block = map[string]any{"type": "tool_use", "name": "record_answer", "input": json.RawMessage(a.content)}
		}
		return map[string]any{"model": a.Model, "content": []any{block},
			"usage": map[string]any{"input_tokens": a.input, "output_tokens": a.output}}
	case KindResponses:
		return map[string]any{"model": a.Model, "output": []any{
			map[string]any{"type": "reasoning", "summary": []any{}},
			map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": a.content}}},
		}, "usage": map[string]any{"input_tokens": a.input, "output_tokens": a.output, "total_tokens": a.input + a.output}}
	case KindBedrock:
		block, stop := map[string]any{"text": a.content}, "end_turn"
		if a.Schema {
			block, stop = map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_1", "name": "record_answer", "input": json.RawMessage(a.content)}}, "tool_use"
		}
		return map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{block}}},
			"stopReason": stop, "usage": map[string]any{"inputTokens": a.input, "outputTokens": a.output, "totalTokens": a.input + a.output},
			"metrics": map[string]any{"latencyMs": 1}}
	case KindAIStudio, KindVertexAI:
		return a.geminiChunk(a.content, true)
	}
	return map[string]any{
		"model":   a.Model,
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": a.content}}},
		"usage":   map[string]any{"prompt_tokens": a.input, "completion_tokens": a.output, "total_tokens": a.input + a.output},
	}
}

func (a answer) geminiChunk(text string, last bool) map[string]any {
	candidate := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}}
	chunk := map[string]any{"candidates": []any{candidate}, "modelVersion": a.Model + "-001"}
	if last {
		candidate["finishReason"] = "STOP"
		chunk["usageMetadata"] = map[string]any{"promptTokenCount": a.input, "candidatesTokenCount": a.output, "totalTokenCount": a.input + a.output}
	}
	return chunk
}

// stream answers as the providers stream: the content a word at a time,
// each flushed, then the usage; server-sent events except for Bedrock,
// which frames its events in the AWS event stream encoding.
func (a answer) stream(w http.ResponseWriter) {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	words := strings.SplitAfter(a.content, " ")
	if a.Kind == KindBedrock {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		event := func(kind string, payload any) {
			b, _ := json.Marshal(payload)
			_, _ = w.Write(EncodeEvent(map[string]string{":message-type": "event", ":event-type": kind, ":content-type": "application/json"}, b))
			flush()
		}
		event("messageStart", map[string]any{"role": "assistant"})
		for i, word := range words {
			event("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": word}})
			if i == 0 && a.exception != "" {
				_, _ = w.Write(EncodeEvent(map[string]string{":message-type": "exception", ":exception-type": a.exception, ":content-type": "application/json"},
					[]byte(`{"message":"injected exception"}`)))
				return
			}
		}
		event("contentBlockStop", map[string]any{"contentBlockIndex": 0})
		event("messageStop", map[string]any{"stopReason": "end_turn"})
		event("metadata", map[string]any{"usage": map[string]any{"inputTokens": a.input, "outputTokens": a.output, "totalTokens": a.input + a.output},
			"metrics": map[string]any{"latencyMs": 1}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			_, _ = w.Write([]byte("event: " + event + "\n"))
		}
		_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
		flush()
	}
	switch a.Kind {
	case KindAnthropic:
		send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"model": a.Model, "usage": map[string]any{"input_tokens": a.input}}})
		for _, word := range words {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": word}})
		}
		send("message_delta", map[string]any{"type": "message_delta", "usage": map[string]any{"output_tokens": a.output}})
		send("message_stop", map[string]any{"type": "message_stop"})
	case KindResponses:
		send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"model": a.Model}})
		for _, word := range words {
			send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "delta": word})
		}
		send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"model": a.Model,
			"usage": map[string]any{"input_tokens": a.input, "output_tokens": a.output, "total_tokens": a.input + a.output}}})
	case KindAIStudio, KindVertexAI:
		for i, word := range words {
			b, _ := json.Marshal(a.geminiChunk(word, i == len(words)-1))
			_, _ = w.Write([]byte("data: " + string(b) + "\r\n\r\n"))
			flush()
		}
	default:
		if a.Kind == KindAzure {
			// Azure opens with the prompt's content filter results.
			send("", map[string]any{"model": "", "choices": []any{}, "prompt_filter_results": []any{}})
		}
		for _, word := range words {
			send("", map[string]any{"model": a.Model, "choices": []any{map[string]any{"delta": map[string]any{"content": word}}}})
		}
		send("", map[string]any{"model": a.Model, "choices": []any{}, "usage": map[string]any{"prompt_tokens": a.input, "completion_tokens": a.output}})
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}
}
