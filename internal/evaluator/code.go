package evaluator // import "github.com/glassbox-dev/glassbox/internal/evaluator"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/glassbox-dev/glassbox/internal/llm"
)

// celCostLimit bounds the work of one evaluation, so that an expression
// over a huge input cannot run away even before its time limit.
const celCostLimit = 10_000_000

// CELProgram is a compiled CEL evaluator.
type CELProgram struct {
	prg cel.Program
}

// CompileCEL compiles expr with every name declared as a dynamically typed
// variable; the expression may use the standard library and the string
// and math extensions.
func CompileCEL(expr string, names []string) (*CELProgram, error) {
	opts := []cel.EnvOption{ext.Strings(), ext.Math(), ext.Lists(), ext.Encoders()}
	for _, n := range names {
		opts = append(opts, cel.Variable(n, cel.DynType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("cel expression: %w", iss.Err())
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("cel program: %w", err)
	}
	return &CELProgram{prg: prg}, nil
}

// Eval runs the program until ctx ends. The expression yields the score
// value itself, or a map with "value" and an optional "comment".
func (p *CELProgram) Eval(ctx context.Context, values map[string]any) (any, string, error) {
	activation := make(map[string]any, len(values))
	for k, v := range values {
		if v == nil {
			v = types.NullValue
		}
		activation[k] = v
	}
	val, _, err := p.prg.ContextEval(ctx, activation)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("cel evaluation did not finish in time: %w", ctx.Err())
		}
		return nil, "", fmt.Errorf("cel evaluation: %w", err)
	}
	target := reflect.TypeFor[any]()
	if val.Type() == types.MapType {
		target = reflect.TypeFor[map[string]any]()
	}
	native, err := val.ConvertToNative(target)
	if err != nil {
		return nil, "", fmt.Errorf("cel result %v: %w", val, err)
	}
	return valueAndComment(native)
}

// valueAndComment splits a {value, comment} map; any other result is the
// value alone.
func valueAndComment(v any) (any, string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, "", nil
	}
	value, ok := m["value"]
	if !ok {
		return nil, "", fmt.Errorf("%w: a map result needs a \"value\" key", ErrBadAnswer)
	}
	comment, _ := m["comment"].(string)
	return value, comment, nil
}

// WebhookTarget says what the webhook scores.
type WebhookTarget struct {
	ProjectID     string `json:"projectId"`
	TraceID       string `json:"traceId,omitempty"`
	ObservationID string `json:"observationId,omitempty"`
	DatasetItemID string `json:"datasetItemId,omitempty"`
}

// WebhookScore describes the score the webhook is asked for.
type WebhookScore struct {
	Name       string   `json:"name"`
	DataType   string   `json:"dataType"`
	Min        *float64 `json:"min,omitempty"`
	Max        *float64 `json:"max,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// WebhookRequest is the JSON body POSTed to a webhook evaluator.
type WebhookRequest struct {
	Variables map[string]any `json:"variables"`
	Score     WebhookScore   `json:"score"`
	Target    WebhookTarget  `json:"target"`
}

// maxWebhookAnswer bounds a webhook's answer.
const maxWebhookAnswer = 1 << 20

// CallWebhook POSTs req to url and reads {"value": ..., "comment": ...}.
// A non-2xx answer is an *llm.StatusError, so 429 and 5xx are retried like
// a provider's.
func CallWebhook(ctx context.Context, client *http.Client, url string, req WebhookRequest) (any, string, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, "", fmt.Errorf("encode webhook request: %w", err)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, "", fmt.Errorf("webhook request: %w", err)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(httpReq)
	if err != nil {
		return nil, "", fmt.Errorf("call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookAnswer))
	if err != nil {
		return nil, "", fmt.Errorf("read webhook answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, "", &llm.StatusError{Status: resp.StatusCode, Body: string(data)}
	}
	var answer map[string]any
	if err := json.Unmarshal(data, &answer); err != nil || answer == nil {
		return nil, "", fmt.Errorf("%w: the webhook must answer a JSON object {\"value\", \"comment\"}, got %q",
			ErrBadAnswer, clip(string(data), 200))
	}
	return valueAndComment(answer)
}

// Permanent reports whether an evaluation error will recur on retry: a
// bad answer or a broken expression, as opposed to an unreachable or
// overloaded service.
func Permanent(err error) bool {
	if errors.Is(err, ErrBadAnswer) {
		return true
	}
	retry, _ := llm.Retryable(err)
	return !retry
}
