package evaluator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm"
)

func ptr[T any](v T) *T { return &v }

var (
	numericOut     = controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric, Min: ptr(0.0), Max: ptr(1.0)}
	booleanOut     = controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}
	categoricalOut = controlplane.ScoreOutput{DataType: controlplane.ScoreCategorical, Categories: []string{"good", "bad"}}
)

func data() Data {
	return Data{
		Trace: &Object{Name: "chat", Input: `{"question":"2+2?"}`, Output: `"4"`, Metadata: `{"user":{"tier":"pro"}}`},
		Observation: &Object{Name: "llm", Input: `[{"role":"user","content":"2+2?"}]`, Output: "four, plain text",
			Metadata: `{}`},
		Observations: []Object{
			{Name: "retrieve", Output: `["old doc"]`},
			{Name: "llm"},
			{Name: "retrieve", Output: `["doc a","doc b"]`},
		},
		DatasetItem: &Item{ExpectedOutput: `"4"`, Input: `{"question":"2+2?"}`},
	}
}

func TestValues(t *testing.T) {
	values, err := Values([]controlplane.VariableMapping{
		{Name: "input", Field: controlplane.FieldInput},
		{Name: "output", Field: controlplane.FieldOutput},
		{Name: "question", Source: controlplane.SourceTrace, Field: controlplane.FieldInput, Key: "question"},
		{Name: "tier", Source: controlplane.SourceTrace, Field: controlplane.FieldMetadata, Key: "user.tier"},
		{Name: "first", Source: controlplane.SourceObservation, Field: controlplane.FieldInput, Key: "0.content"},
		{Name: "docs", Source: controlplane.SourceObservation, ObservationName: "retrieve", Field: controlplane.FieldOutput},
		{Name: "expected", Source: controlplane.SourceDatasetItem, Field: controlplane.FieldExpectedOutput},
		{Name: "missing", Source: controlplane.SourceObservation, ObservationName: "nope", Field: controlplane.FieldOutput},
		{Name: "absent", Source: controlplane.SourceTrace, Field: controlplane.FieldMetadata, Key: "user.plan.name"},
		{Name: "outOfRange", Source: controlplane.SourceObservation, Field: controlplane.FieldInput, Key: "5"},
		{Name: "name", Source: controlplane.SourceTrace, Field: controlplane.FieldName},
	}, data())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"input":      []any{map[string]any{"role": "user", "content": "2+2?"}},
		"output":     "four, plain text",
		"question":   "2+2?",
		"tier":       "pro",
		"first":      "2+2?",
		"docs":       []any{"doc a", "doc b"},
		"expected":   "4",
		"missing":    nil,
		"absent":     nil,
		"outOfRange": nil,
		"name":       "chat",
	}, values, "unmapped targets read the observation; the latest observation of a name wins")

	traceOnly := data()
	traceOnly.Observation, traceOnly.DatasetItem = nil, nil
	values, err = Values([]controlplane.VariableMapping{
		{Name: "input", Field: controlplane.FieldInput},
		{Name: "expected_output", Source: controlplane.SourceDatasetItem, Field: controlplane.FieldExpectedOutput},
	}, traceOnly)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"input": map[string]any{"question": "2+2?"}, "expected_output": nil}, values)

	_, err = Values([]controlplane.VariableMapping{{Name: "x", Source: controlplane.SourceTrace, Field: controlplane.FieldOutput, Key: "a"}}, data())
	assert.ErrorContains(t, err, "reaches into a string")
	_, err = Values([]controlplane.VariableMapping{{Name: "x", Source: controlplane.SourceObservation, Field: controlplane.FieldInput, Key: "a"}}, data())
	assert.ErrorContains(t, err, "must be a number")
}

func TestRender(t *testing.T) {
	got := Render("Q: {{ question }}\nA: {{answer}}\nDocs: {{docs}} {{unknown}} {{none}}", map[string]any{
		"question": "2+2?", "answer": 4.0, "docs": []any{"a"}, "none": nil,
	})
	assert.Equal(t, "Q: 2+2?\nA: 4\nDocs: [\"a\"] {{unknown}} ", got)
	assert.Equal(t, "no variables {{", Render("no variables {{", nil))
}

func TestCoerce(t *testing.T) {
	tests := []struct {
		v    any
		out  controlplane.ScoreOutput
		want Result
		err  bool
	}{
		{0.5, numericOut, Result{Value: 0.5}, false},
		{"0.75", numericOut, Result{Value: 0.75}, false},
		{int64(1), numericOut, Result{Value: 1}, false},
		{2.0, numericOut, Result{}, true},
		{"high", numericOut, Result{}, true},
		{true, booleanOut, Result{Value: 1, StringValue: "True"}, false},
		{"no", booleanOut, Result{Value: 0, StringValue: "False"}, false},
		{1.0, booleanOut, Result{Value: 1, StringValue: "True"}, false},
		{0.5, booleanOut, Result{}, true},
		{" Good ", categoricalOut, Result{StringValue: "good"}, false},
		{"ugly", categoricalOut, Result{}, true},
		{1.0, categoricalOut, Result{}, true},
	}
	for _, tt := range tests {
		got, err := Coerce(tt.v, tt.out)
		if tt.err {
			assert.ErrorIs(t, err, ErrBadAnswer, "%v", tt.v)
			continue
		}
		require.NoError(t, err, "%v", tt.v)
		assert.Equal(t, tt.want, got, "%v", tt.v)
	}
}

func TestParseJudge(t *testing.T) {
	tests := []struct {
		content string
		out     controlplane.ScoreOutput
		want    Result
	}{
		{`{"reasoning":"right","score":0.9}`, numericOut, Result{Value: 0.9, Comment: "right"}},
		{"Here you go:\n```json\n{\"score\": true, \"reasoning\": \"ok\"}\n```", booleanOut, Result{Value: 1, StringValue: "True", Comment: "ok"}},
		{`I think {"Value": "bad", "explanation": "rude"} is fair.`, categoricalOut, Result{StringValue: "bad", Comment: "rude"}},
		{"The answer is mostly right.\nScore: 0.7", numericOut, Result{Value: 0.7, Comment: "The answer is mostly right.\nScore: 0.7"}},
		{"Verdict: good.", categoricalOut, Result{StringValue: "good", Comment: "Verdict: good."}},
		{"That is false.", booleanOut, Result{Value: 0, StringValue: "False", Comment: "That is false."}},
	}
	for _, tt := range tests {
		got, err := ParseJudge(tt.content, tt.out)
		require.NoError(t, err, tt.content)
		assert.Equal(t, tt.want, got, tt.content)
	}
	for _, bad := range []struct {
		content string
		out     controlplane.ScoreOutput
	}{
		{`{"score": 3}`, numericOut},
		{"no idea", numericOut},
		{"good or bad, hard to say", categoricalOut},
	} {
		_, err := ParseJudge(bad.content, bad.out)
		assert.ErrorIs(t, err, ErrBadAnswer, bad.content)
	}
}

func TestJudgeRequest(t *testing.T) {
	req := JudgeRequest("rate this", categoricalOut, "gpt-4o-mini", map[string]any{"temperature": 0})
	require.Len(t, req.Messages, 2)
	assert.Equal(t, "system", req.Messages[0].Role)
	assert.Contains(t, req.Messages[0].Content, "exactly one of: good, bad")
	assert.Equal(t, llm.Message{Role: "user", Content: "rate this"}, req.Messages[1])
	var schema map[string]any
	require.NoError(t, json.Unmarshal(req.Schema.Schema, &schema))
	score := schema["properties"].(map[string]any)["score"].(map[string]any)
	assert.Equal(t, []any{"good", "bad"}, score["enum"])

	numericReq := JudgeRequest("x", controlplane.ScoreOutput{DataType: controlplane.ScoreNumeric, Min: ptr(1.0), Max: ptr(5.0),
		Description: "helpfulness"}, "m", nil)
	assert.Contains(t, numericReq.Messages[0].Content, "[1, 5]")
	assert.Contains(t, numericReq.Messages[0].Content, "helpfulness")
}

func TestCEL(t *testing.T) {
	values := map[string]any{"output": "four", "expected_output": "4", "metadata": map[string]any{"n": 3.0}, "nothing": nil}
	names := []string{"output", "expected_output", "metadata", "nothing"}
	for expr, want := range map[string]any{
		`size(output) < 10`:                                  true,
		`metadata.n * 2.0`:                                   6.0,
		`output == expected_output ? 1 : 0`:                  int64(0),
		`{"value": output.upperAscii(), "comment": "shout"}`: "FOUR",
		`nothing == null`:                                    true,
	} {
		p, err := CompileCEL(expr, names)
		require.NoError(t, err, expr)
		got, comment, err := p.Eval(context.Background(), values)
		require.NoError(t, err, expr)
		assert.Equal(t, want, got, expr)
		if strings.Contains(expr, "comment") {
			assert.Equal(t, "shout", comment)
		}
	}
	_, err := CompileCEL(`output +`, names)
	assert.ErrorContains(t, err, "cel expression")
	_, err = CompileCEL(`unknown_var`, names)
	assert.Error(t, err, "undeclared variables do not compile")

	p, err := CompileCEL(`{"comment": "x"}`, names)
	require.NoError(t, err)
	_, _, err = p.Eval(context.Background(), values)
	assert.ErrorIs(t, err, ErrBadAnswer)

	slow, err := CompileCEL(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, a+b+c > 0)))`, names)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = slow.Eval(ctx, values)
	assert.ErrorContains(t, err, "did not finish in time")
}

func TestWebhook(t *testing.T) {
	var got WebhookRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
			_, _ = w.Write([]byte(`{"value": 0.8, "comment": "fine"}`))
		case "/busy":
			http.Error(w, "later", http.StatusServiceUnavailable)
		case "/bad":
			http.Error(w, "no", http.StatusBadRequest)
		case "/text":
			_, _ = w.Write([]byte("0.8"))
		case "/slow":
			time.Sleep(200 * time.Millisecond)
		}
	}))
	defer srv.Close()
	req := WebhookRequest{Variables: map[string]any{"output": "4"}, Score: WebhookScore{Name: "acc", DataType: controlplane.ScoreNumeric},
		Target: WebhookTarget{ProjectID: "p", TraceID: "t"}}

	value, comment, err := CallWebhook(context.Background(), srv.Client(), srv.URL+"/ok", req)
	require.NoError(t, err)
	assert.Equal(t, 0.8, value)
	assert.Equal(t, "fine", comment)
	assert.Equal(t, req, got)

	_, _, err = CallWebhook(context.Background(), srv.Client(), srv.URL+"/busy", req)
	assert.False(t, Permanent(err), "503 is retried")
	_, _, err = CallWebhook(context.Background(), srv.Client(), srv.URL+"/bad", req)
	assert.True(t, Permanent(err))
	_, _, err = CallWebhook(context.Background(), srv.Client(), srv.URL+"/text", req)
	assert.ErrorIs(t, err, ErrBadAnswer)
	assert.True(t, Permanent(err))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err = CallWebhook(ctx, srv.Client(), srv.URL+"/slow", req)
	assert.False(t, Permanent(err), "a timeout is retried: %v", err)
}
