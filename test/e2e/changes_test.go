package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// request sends a JSON request to the all-in-one API and decodes the answer.
func (a *allInOne) request(t *testing.T, method, path, auth string, body any, want int) map[string]any {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(raw))
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequest(method, a.BaseURL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	require.Equal(t, want, resp.StatusCode, "%s %s: %v", method, path, out)
	return out
}

func basic(public, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(public+":"+secret))
}

// generation is one OTLP/JSON span of a trace: a generation of model with
// usage, in environment, with tags.
func generation(traceID, model, environment string, tags ...string) string {
	tagValues := make([]string, len(tags))
	for i, tag := range tags {
		tagValues[i] = `{"stringValue":"` + tag + `"}`
	}
	now := time.Now().UnixNano()
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"changes"}}]},
	"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"00000000000000c1","name":"llm",
	"startTimeUnixNano":"` + fmt.Sprint(now-int64(time.Second)) + `","endTimeUnixNano":"` + fmt.Sprint(now) + `",
	"attributes":[
		{"key":"langfuse.observation.type","value":{"stringValue":"generation"}},
		{"key":"gen_ai.request.model","value":{"stringValue":"` + model + `"}},
		{"key":"gen_ai.usage.input_tokens","value":{"intValue":"1000"}},
		{"key":"gen_ai.usage.output_tokens","value":{"intValue":"500"}},
		{"key":"langfuse.environment","value":{"stringValue":"` + environment + `"}},
		{"key":"langfuse.trace.input","value":{"stringValue":"question"}},
		{"key":"langfuse.trace.tags","value":{"arrayValue":{"values":[` + strings.Join(tagValues, ",") + `]}}}
	]}]}]}]}`
}

// In the all-in-one deployment a change made through the API applies to
// the very next request: a model price, a sampling rate, an evaluator rule
// and a key revocation. (Before, each waited for a 15-30 s refresh.)
func TestChangesTakeEffectAtOnce(t *testing.T) {
	a := startAllInOne(t)
	auth := basic(a.PublicKey, a.SecretKey)
	ingest := func(auth, body string) int {
		resp, text := postJSON(t, a.BaseURL+"/api/public/otel/v1/traces", auth, body)
		require.Contains(t, []int{http.StatusOK, http.StatusUnauthorized}, resp.StatusCode, text)
		return resp.StatusCode
	}
	stored := func(traceID string) map[string]any {
		var trace map[string]any
		require.Eventually(t, func() bool {
			req, _ := http.NewRequest(http.MethodGet, a.BaseURL+"/api/public/traces/"+traceID, nil)
			req.Header.Set("Authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
			trace = nil
			return json.NewDecoder(resp.Body).Decode(&trace) == nil && len(trace["observations"].([]any)) > 0
		}, 20*time.Second, 50*time.Millisecond, "trace %s not stored", traceID)
		return trace
	}

	// A price defined now prices the next generation.
	a.request(t, http.MethodPost, "/api/public/models", auth, map[string]any{
		"modelName": "house-model", "matchPattern": "(?i)^house-model$", "unit": "TOKENS",
		"inputPrice": 0.001, "outputPrice": 0.002,
	}, http.StatusOK)
	require.Equal(t, http.StatusOK, ingest(auth, generation("c0000000000000000000000000000001", "house-model", "default")))
	obs := stored("c0000000000000000000000000000001")["observations"].([]any)[0].(map[string]any)
	assert.InDelta(t, 2.0, obs["calculatedTotalCost"], 1e-9, "1000 × 0.001 + 500 × 0.002")

	// A sampling rate of 0 for an environment drops its next trace.
	a.request(t, http.MethodPut, "/api/public/projects/proj-e2e/settings", auth,
		map[string]any{"sampling": map[string]any{"environments": map[string]float64{"muted": 0}}}, http.StatusOK)
	require.Equal(t, http.StatusOK, ingest(auth, generation("c0000000000000000000000000000002", "house-model", "muted")))
	require.Equal(t, http.StatusOK, ingest(auth, generation("c0000000000000000000000000000003", "house-model", "default")))
	stored("c0000000000000000000000000000003")
	a.request(t, http.MethodGet, "/api/public/traces/c0000000000000000000000000000002", auth, nil, http.StatusNotFound)

	// A rule created now selects the next matching trace.
	conn := a.request(t, http.MethodPut, "/api/public/llm-connections", auth, map[string]any{
		"provider": "judge", "secretKey": "sk-judge-0123456789", "baseURL": "https://8.8.8.8/v1", "defaultModel": "gpt-4o-mini",
	}, http.StatusOK)
	evaluator := a.request(t, http.MethodPost, "/api/public/evals/evaluators", auth, map[string]any{
		"name": "correctness", "kind": "llm", "scoreName": "correct",
		"output": map[string]any{"dataType": "NUMERIC", "min": 0, "max": 1}, "prompt": "Q: {{input}}",
	}, http.StatusCreated)
	rule := a.request(t, http.MethodPost, "/api/public/evals/rules", auth, map[string]any{
		"name": "at once", "evaluatorId": evaluator["id"], "connectionId": conn["id"], "target": "trace", "delayMs": 60000,
		"filter": []map[string]any{{"field": "tags", "operator": "any of", "values": []string{"at-once"}}},
	}, http.StatusCreated)
	require.Equal(t, http.StatusOK, ingest(auth, generation("c0000000000000000000000000000004", "house-model", "default", "at-once")))
	require.Eventually(t, func() bool {
		jobs := a.request(t, http.MethodGet, "/api/public/evals/jobs?ruleId="+rule["id"].(string), auth, nil, http.StatusOK)
		return len(jobs["data"].([]any)) == 1
	}, 5*time.Second, 50*time.Millisecond, "the rule did not select the next trace")

	// A revoked key stops ingesting at its next request.
	orgKey := createOrgKey(t, a)
	keys := a.request(t, http.MethodGet, "/api/public/projects/proj-e2e/apiKeys", orgKey, nil, http.StatusOK)
	var keyID string
	for _, k := range keys["apiKeys"].([]any) {
		if k.(map[string]any)["publicKey"] == a.PublicKey {
			keyID = k.(map[string]any)["id"].(string)
		}
	}
	require.NotEmpty(t, keyID)
	require.Equal(t, http.StatusOK, ingest(auth, generation("c0000000000000000000000000000005", "house-model", "default")), "cached as valid")
	a.request(t, http.MethodDelete, "/api/public/projects/proj-e2e/apiKeys/"+keyID, orgKey, nil, http.StatusOK)
	assert.Equal(t, http.StatusUnauthorized, ingest(auth, generation("c0000000000000000000000000000006", "house-model", "default")))
}

// createOrgKey makes an organization key with the admin CLI, as an operator
// would, and returns its Authorization header.
func createOrgKey(t *testing.T, a *allInOne) string {
	t.Helper()
	api := filepath.Join(filepath.Dir(requireEnv(t, "GLASSBOX_BIN")), "glassbox-api")
	out, err := exec.Command(api, "admin", "--dsn", "sqlite://"+filepath.Join(a.DataDir, "glassbox.db"),
		"create-org-key", "--org", "org-e2e").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var key map[string]any
	require.NoError(t, json.Unmarshal(out, &key), "%s", out)
	return basic(key["publicKey"].(string), key["secretKey"].(string))
}
