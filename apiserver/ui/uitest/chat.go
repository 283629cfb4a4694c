package uitest

import (
	"testing"
	"time"
)

// ChatTrace sends a support-chat trace as an SDK would: the trace (in a
// session of the user, with tags, metadata and chat input), a retrieval
// span, and below it a priced generation with tool calls.
func (e *Env) ChatTrace(t testing.TB, id, name, user string, at time.Time) {
	t.Helper()
	e.Ingest(t,
		Event{Type: "trace-create", Body: map[string]any{"id": id, "name": name, "userId": user, "sessionId": "session-" + user,
			"tags": []string{"prod", "vip"}, "environment": "production", "timestamp": Time(at),
			"input":    map[string]any{"messages": []map[string]any{{"role": "user", "content": "Where is my **order** 42?"}}},
			"output":   "It ships *tomorrow*.",
			"metadata": map[string]any{"team": "support", "nested": map[string]any{"depth": 2}}}},
		Event{Type: "span-create", Body: map[string]any{"id": id + "-retrieve", "traceId": id, "name": "retrieve-orders",
			"startTime": Time(at), "endTime": Time(at.Add(120 * time.Millisecond)), "input": map[string]any{"order": 42}}},
		Event{Type: "generation-create", Body: map[string]any{"id": id + "-llm", "traceId": id, "parentObservationId": id + "-retrieve",
			"name": "answer", "model": "gpt-4o", "modelParameters": map[string]any{"temperature": 0.2},
			"startTime": Time(at.Add(20 * time.Millisecond)), "completionStartTime": Time(at.Add(60 * time.Millisecond)),
			"endTime": Time(at.Add(100 * time.Millisecond)),
			"usage":   map[string]any{"input": 120, "output": 30, "total": 150}, "costDetails": map[string]any{"input": 0.0003, "output": 0.0009, "total": 0.0012},
			"input": []map[string]any{
				{"role": "system", "content": "You are a helpful support agent."},
				{"role": "user", "content": "Where is my order 42?"},
				{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "call_1", "type": "function",
					"function": map[string]any{"name": "lookup_order", "arguments": `{"order":42}`}}}},
				{"role": "tool", "tool_call_id": "call_1", "content": `{"status":"packed"}`},
			},
			"output": map[string]any{"role": "assistant", "content": "It ships tomorrow."}}},
	)
}
