// Package llmtest is a local fake of the OpenAI chat completions and
// Anthropic messages APIs for tests: deterministic answers, recorded
// requests, and injectable failures (429s, 5xx, slow answers).
package llmtest // import "github.com/glassbox-dev/glassbox/internal/llm/llmtest"

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is a call the server received.
type Request struct {
	Path    string
	Header  http.Header
	Body    map[string]any
	Model   string
	Prompt  string // the last user message
	Schema  bool   // structured output was asked for
	Attempt int    // 1 for the first call the server saw
}

// Fault makes one call fail: with Status (and Retry-After) or by answering
// only after Delay.
type Fault struct {
	Status     int
	RetryAfter int
	Delay      time.Duration
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
	// RefuseSchema answers 400 to requests that ask for structured output,
	// as some OpenAI-compatible servers do.
	refuseSchema bool
}

// New starts a server that answers with answer; it stops when the test ends.
func New(t testing.TB, answer Answer) *Server {
	t.Helper()
	if answer == nil {
		answer = func(Request) string { return `{"reasoning":"fixed","score":1}` }
	}
	s := &Server{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to configure as the connection's, like .../v1.
func (s *Server) URL() string { return s.Server.URL + "/v1" }

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

// Requests returns the calls received so far, failed ones included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	req.Model, _ = body["model"].(string)
	_, req.Schema = body["response_format"]
	if _, tools := body["tools"]; tools {
		req.Schema = true
	}
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			if msg, ok := m.(map[string]any); ok && msg["role"] == "user" {
				req.Prompt, _ = msg["content"].(string)
			}
		}
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
	content := s.answer(req)
	input, output := int64(len(strings.Fields(req.Prompt))), int64(len(strings.Fields(content)))
	if stream, _ := body["stream"].(bool); stream {
		s.stream(w, r, req, content, input, output)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/messages") {
		block := map[string]any{"type": "text", "text": content}
		if req.Schema {
			block = map[string]any{"type": "tool_use", "name": "record_answer", "input": json.RawMessage(content)}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"model": req.Model, "content": []any{block},
			"usage": map[string]any{"input_tokens": input, "output_tokens": output},
		})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"model":   req.Model,
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
	})
}

// stream answers as the providers stream: server-sent events, the content
// a word at a time, each flushed, then the usage.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, content string, input, output int64) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			_, _ = w.Write([]byte("event: " + event + "\n"))
		}
		_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
		if flusher != nil {
			flusher.Flush()
		}
	}
	words := strings.SplitAfter(content, " ")
	if strings.HasSuffix(r.URL.Path, "/messages") {
		send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"model": req.Model, "usage": map[string]any{"input_tokens": input}}})
		for _, word := range words {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": word}})
		}
		send("message_delta", map[string]any{"type": "message_delta", "usage": map[string]any{"output_tokens": output}})
		send("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	for _, word := range words {
		send("", map[string]any{"model": req.Model, "choices": []any{map[string]any{"delta": map[string]any{"content": word}}}})
	}
	send("", map[string]any{"model": req.Model, "choices": []any{}, "usage": map[string]any{"prompt_tokens": input, "completion_tokens": output}})
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}
