package evaluations

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
)

const (
	unstableEvaluators = "/api/public/unstable/evaluators"
	unstableRules      = "/api/public/unstable/evaluation-rules"
)

func judgeBody(name string) map[string]any {
	return map[string]any{
		"name": name, "type": "llm_as_judge", "description": "how helpful",
		"prompt":          "Rate {{output}} for {{question}}",
		"modelConfig":     map[string]any{"provider": "judge", "model": "gpt-4o-mini"},
		"variableMapping": []map[string]any{{"variable": "question", "source": "metadata", "jsonPath": "$.q[0].text"}},
		"outputDefinition": map[string]any{"dataType": "NUMERIC", "minValue": 0, "maxValue": 1,
			"scoreValueInstructions": "1 is helpful"},
	}
}

func decodeMap(t *testing.T, f fixture, method, path, auth string, body any, want int) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(call(t, f, method, path, auth, body, want).Body.Bytes(), &out))
	return out
}

// An evaluator and a rule made through Langfuse's API are the evaluator and
// rule of /api/public/evals, and read back the same through both.
func TestUnstableEvaluatorsAndRules(t *testing.T) {
	apitest.ForEachBackend(t, func(t *testing.T, store *controlplane.Store) {
		f := setupWith(t, store, true)
		conn := seedConnection(t, f)

		body := judgeBody("helpfulness")
		body["someFutureField"] = true // unknown fields are ignored, as Langfuse does
		created := decodeMap(t, f, http.MethodPost, unstableEvaluators, f.a.ProjectAuth, body, http.StatusCreated)
		id := created["id"].(string)
		assert.Equal(t, "llm_as_judge", created["type"])
		assert.Equal(t, "helpfulness", created["name"])
		assert.Equal(t, "how helpful", created["description"])
		assert.Equal(t, "active", created["status"])
		assert.EqualValues(t, 1, created["version"])
		assert.Nil(t, created["createdBy"])
		assert.Nil(t, created["pausedAt"])
		assert.Equal(t, []any{map[string]any{"role": "user", "content": "Rate {{output}} for {{question}}"}}, created["prompt"])
		assert.Equal(t, []any{"output", "question"}, created["variables"])
		assert.Equal(t, []any{map[string]any{"variable": "question", "source": "metadata", "jsonPath": "$.q[0].text"}},
			created["variableMapping"])
		assert.Equal(t, map[string]any{"provider": "judge", "model": "gpt-4o-mini"}, created["modelConfig"])
		assert.Equal(t, map[string]any{"dataType": "NUMERIC", "minValue": 0.0, "maxValue": 1.0, "scoreValueInstructions": "1 is helpful"},
			created["outputDefinition"])
		assert.Equal(t, []any{}, created["evaluationRuleAssignments"])

		// The same evaluator through Glassbox's own API.
		own := apitest.Decode[Evaluator](t, call(t, f, http.MethodGet, "/api/public/evals/evaluators/"+id, f.a.ProjectAuth, nil, http.StatusOK))
		assert.Equal(t, controlplane.EvaluatorLLM, own.Kind)
		assert.Equal(t, "helpfulness", own.ScoreName)
		assert.Equal(t, "Rate {{output}} for {{question}}", own.Prompt)
		assert.Equal(t, "gpt-4o-mini", own.Model)
		assert.Equal(t, "judge", own.Provider)
		assert.Equal(t, "how helpful", own.Description)
		zero, one := 0.0, 1.0
		assert.Equal(t, ScoreOutput{DataType: "NUMERIC", Min: &zero, Max: &one, Description: "1 is helpful"}, own.Output)
		assert.Equal(t, []Variable{{Name: "question", Field: "metadata", Key: "q.0.text"}}, own.Variables)
		assert.Equal(t, created, decodeMap(t, f, http.MethodGet, unstableEvaluators+"/"+id, f.a.ProjectAuth, nil, http.StatusOK))
		assert.Equal(t, created, decodeMap(t, f, http.MethodGet, "/api/public/v2/evaluators/"+id, f.a.ProjectAuth, nil, http.StatusOK),
			"the SDKs' clients read the same API under /v2")

		// A single user message is a prompt; categories hold one match.
		polite := decodeMap(t, f, http.MethodPost, unstableEvaluators, f.a.ProjectAuth, map[string]any{
			"name": "politeness", "type": "llm_as_judge", "prompt": []map[string]any{{"role": "user", "content": "Is {{output}} polite?"}},
			"modelConfig": map[string]any{"provider": "judge", "model": "m"},
			"outputDefinition": map[string]any{"dataType": "CATEGORICAL", "categories": []string{"yes", "no"},
				"shouldAllowMultipleMatches": false},
		}, http.StatusCreated)
		assert.Equal(t, map[string]any{"dataType": "CATEGORICAL", "categories": []any{"yes", "no"}, "shouldAllowMultipleMatches": false},
			polite["outputDefinition"])
		assert.Nil(t, polite["variableMapping"])
		assert.Nil(t, polite["description"])
		decodeMap(t, f, http.MethodPost, unstableEvaluators, f.a.ProjectAuth, map[string]any{
			"name": "accuracy", "prompt": "Is {{output}} right?", "modelConfig": map[string]any{"provider": "judge", "model": "m"},
			"outputDefinition": map[string]any{"dataType": "BOOLEAN"},
		}, http.StatusCreated)
		// A cel evaluator has no Langfuse shape: lists skip it.
		createEvaluator(t, f, celBody)

		// Cursor pagination over the three llm evaluators, by name.
		var names []string
		cursor := ""
		for range 5 {
			page := decodeMap(t, f, http.MethodGet, unstableEvaluators+"?limit=2&cursor="+cursor, f.a.ProjectAuth, nil, http.StatusOK)
			for _, e := range page["data"].([]any) {
				names = append(names, e.(map[string]any)["name"].(string))
			}
			next, ok := page["meta"].(map[string]any)["cursor"].(string)
			if !ok {
				break
			}
			cursor = next
		}
		assert.Equal(t, []string{"accuracy", "helpfulness", "politeness"}, names)
		call(t, f, http.MethodGet, unstableEvaluators+"?cursor=bogus", f.a.ProjectAuth, nil, http.StatusBadRequest)
		call(t, f, http.MethodGet, unstableEvaluators+"?limit=101", f.a.ProjectAuth, nil, http.StatusBadRequest)

		// A rule made through Langfuse's API.
		filter := []map[string]any{
			{"type": "stringOptions", "column": "type", "operator": "any of", "value": []string{"GENERATION"}},
			{"type": "stringObject", "column": "metadata", "key": "tier", "operator": "=", "value": "pro"},
			{"type": "arrayOptions", "column": "tags", "operator": "all of", "value": []string{"a", "b"}},
			{"type": "string", "column": "userId", "operator": "starts with", "value": "u-"},
			{"type": "null", "column": "sessionId", "operator": "is not null", "value": ""},
		}
		rule := decodeMap(t, f, http.MethodPost, unstableRules, f.a.ProjectAuth, map[string]any{
			"name": "prod helpfulness", "enabled": true, "sampling": 0.25, "filter": filter, "unknownField": 1,
			"evaluatorAssignments": []map[string]any{{"evaluatorId": id,
				"variableMapping": []map[string]any{{"variable": "question", "source": "input"}}}},
		}, http.StatusCreated)
		ruleID := rule["id"].(string)
		assert.Equal(t, true, rule["enabled"])
		assert.InDelta(t, 0.25, rule["sampling"], 1e-9)
		assert.Nil(t, rule["createdBy"])
		var wantFilter []any
		raw, _ := json.Marshal(filter)
		require.NoError(t, json.Unmarshal(raw, &wantFilter))
		assert.Equal(t, wantFilter, rule["filter"])
		assert.Equal(t, []any{map[string]any{"evaluatorId": id,
			"variableMapping": []any{map[string]any{"variable": "question", "source": "input"}}}}, rule["evaluatorAssignments"])

		ownRule := apitest.Decode[Rule](t, call(t, f, http.MethodGet, "/api/public/evals/rules/"+ruleID, f.a.ProjectAuth, nil, http.StatusOK))
		assert.Equal(t, evaljobs.TargetObservation, ownRule.Target)
		assert.Equal(t, conn.ID, ownRule.ConnectionID, "the evaluator's modelConfig.provider")
		assert.Equal(t, id, ownRule.EvaluatorID)
		assert.True(t, ownRule.Active)
		assert.InDelta(t, 0.25, ownRule.SamplingRate, 1e-9)
		assert.Equal(t, int64(controlplane.DefaultRuleDelay.Milliseconds()), ownRule.DelayMS)
		assert.Equal(t, []Variable{{Name: "question", Field: "input"}}, ownRule.Variables)
		assert.Equal(t, evaljobs.Filter{
			{Field: "type", Operator: "any of", Values: []string{"GENERATION"}},
			{Field: "metadata", Key: "tier", Operator: "=", Value: "pro"},
			{Field: "tags", Operator: "all of", Values: []string{"a", "b"}},
			{Field: "userId", Operator: "starts with", Value: "u-"},
			{Field: "sessionId", Operator: "exists"},
		}, ownRule.Filter)
		assert.Equal(t, rule, decodeMap(t, f, http.MethodGet, unstableRules+"/"+ruleID, f.a.ProjectAuth, nil, http.StatusOK))

		withRule := decodeMap(t, f, http.MethodGet, unstableEvaluators+"/"+id, f.a.ProjectAuth, nil, http.StatusOK)
		assert.Equal(t, []any{map[string]any{"evaluationRuleId": ruleID,
			"variableMappingOverride": []any{map[string]any{"variable": "question", "source": "input"}}}},
			withRule["evaluationRuleAssignments"])

		// PATCH changes what it is given; a null mapping inherits again.
		patched := decodeMap(t, f, http.MethodPatch, unstableRules+"/"+ruleID, f.a.ProjectAuth, map[string]any{
			"name": "renamed", "enabled": false, "sampling": 1, "filter": []any{},
			"evaluatorAssignments": []map[string]any{{"evaluatorId": id, "variableMapping": nil}},
		}, http.StatusOK)
		assert.Equal(t, "renamed", patched["name"])
		assert.Equal(t, false, patched["enabled"])
		assert.Equal(t, []any{}, patched["filter"])
		assert.Equal(t, []any{map[string]any{"evaluatorId": id, "variableMapping": nil}}, patched["evaluatorAssignments"])
		ownRule = apitest.Decode[Rule](t, call(t, f, http.MethodGet, "/api/public/evals/rules/"+ruleID, f.a.ProjectAuth, nil, http.StatusOK))
		assert.False(t, ownRule.Active)
		assert.Empty(t, ownRule.Filter)
		assert.Empty(t, ownRule.Variables)
		assert.InDelta(t, 1.0, ownRule.SamplingRate, 1e-9)
		onlyName := decodeMap(t, f, http.MethodPatch, unstableRules+"/"+ruleID, f.a.ProjectAuth, map[string]any{"name": "again"}, http.StatusOK)
		assert.Equal(t, false, onlyName["enabled"], "omitted fields keep their values")

		// A trace rule made through /evals lists too; rules page by cursor.
		code := createEvaluator(t, f, map[string]any{"name": "short2", "kind": "cel", "scoreName": "short",
			"output": map[string]any{"dataType": "BOOLEAN"}, "expression": "true"})
		call(t, f, http.MethodPost, "/api/public/evals/rules", f.a.ProjectAuth,
			map[string]any{"name": "zz trace rule", "evaluatorId": code.ID, "target": "trace"}, http.StatusCreated)
		first := decodeMap(t, f, http.MethodGet, unstableRules+"?limit=1", f.a.ProjectAuth, nil, http.StatusOK)
		require.Len(t, first["data"], 1)
		assert.Equal(t, "again", first["data"].([]any)[0].(map[string]any)["name"])
		next := first["meta"].(map[string]any)["cursor"].(string)
		second := decodeMap(t, f, http.MethodGet, unstableRules+"?limit=1&cursor="+next, f.a.ProjectAuth, nil, http.StatusOK)
		require.Len(t, second["data"], 1)
		assert.Equal(t, "zz trace rule", second["data"].([]any)[0].(map[string]any)["name"])
		assert.Equal(t, map[string]any{}, second["meta"], "no cursor after the last page")

		// Another project sees none of it.
		other := f.b.ProjectAuth
		call(t, f, http.MethodGet, unstableEvaluators+"/"+id, other, nil, http.StatusNotFound)
		call(t, f, http.MethodDelete, unstableEvaluators+"/"+id, other, nil, http.StatusNotFound)
		call(t, f, http.MethodGet, unstableRules+"/"+ruleID, other, nil, http.StatusNotFound)
		call(t, f, http.MethodPatch, unstableRules+"/"+ruleID, other, map[string]any{"enabled": true}, http.StatusNotFound)
		call(t, f, http.MethodDelete, unstableRules+"/"+ruleID, other, nil, http.StatusNotFound)
		call(t, f, http.MethodPost, unstableRules, other, map[string]any{"name": "steal", "enabled": false,
			"evaluatorAssignments": []map[string]any{{"evaluatorId": id}}}, http.StatusNotFound)
		for _, path := range []string{unstableEvaluators, unstableRules} {
			page := decodeMap(t, f, http.MethodGet, path, other, nil, http.StatusOK)
			assert.Equal(t, []any{}, page["data"], path)
		}
		// Project b has no connection named judge.
		call(t, f, http.MethodPost, unstableEvaluators, other, judgeBody("helpfulness"), http.StatusBadRequest)

		// Deletion: an evaluator in use is kept, as /evals keeps it.
		call(t, f, http.MethodDelete, unstableEvaluators+"/"+id, f.a.ProjectAuth, nil, http.StatusConflict)
		assert.Equal(t, map[string]any{"id": ruleID},
			decodeMap(t, f, http.MethodDelete, unstableRules+"/"+ruleID, f.a.ProjectAuth, nil, http.StatusOK))
		call(t, f, http.MethodGet, "/api/public/evals/rules/"+ruleID, f.a.ProjectAuth, nil, http.StatusNotFound)
		assert.Equal(t, map[string]any{"id": id},
			decodeMap(t, f, http.MethodDelete, unstableEvaluators+"/"+id, f.a.ProjectAuth, nil, http.StatusOK))
		call(t, f, http.MethodGet, "/api/public/evals/evaluators/"+id, f.a.ProjectAuth, nil, http.StatusNotFound)
		call(t, f, http.MethodGet, unstableEvaluators+"/"+id, f.a.ProjectAuth, nil, http.StatusNotFound)
	})
}

// What Glassbox cannot express is refused with a 400 that says what is not
// supported and what to use instead, and nothing is stored.
func TestUnstableRefusals(t *testing.T) {
	f := setup(t, true)
	seedConnection(t, f)
	judge := decodeMap(t, f, http.MethodPost, unstableEvaluators, f.a.ProjectAuth, judgeBody("judge"), http.StatusCreated)["id"].(string)
	noProvider := createEvaluator(t, f, map[string]any{"name": "no provider", "kind": "llm", "scoreName": "s",
		"output": map[string]any{"dataType": "BOOLEAN"}, "prompt": "{{output}}"})
	cel := createEvaluator(t, f, celBody)

	with := func(change map[string]any) map[string]any {
		body := judgeBody("refused")
		for k, v := range change {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return body
	}
	output := func(extra map[string]any) map[string]any {
		o := map[string]any{"dataType": "CATEGORICAL", "categories": []string{"a", "b"}}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	evaluatorCases := map[string]struct {
		body map[string]any
		want []string
	}{
		"code evaluator": {map[string]any{"name": "code", "type": "code", "sourceCode": "def evaluate(): pass", "sourceCodeLanguage": "PYTHON"},
			[]string{`type \"code\" is not supported`, "TypeScript or Python", "cel evaluator", "webhook evaluator", "/api/public/evals/evaluators"}},
		"source code on a judge": {with(map[string]any{"sourceCode": "x"}), []string{"sourceCode and sourceCodeLanguage", "not supported"}},
		"unknown type":           {with(map[string]any{"type": "rubric"}), []string{`type \"rubric\" must be llm_as_judge`}},
		"system message": {with(map[string]any{"prompt": []map[string]any{{"role": "system", "content": "be strict"},
			{"role": "user", "content": "{{output}}"}}}), []string{"one user message"}},
		"no prompt":      {with(map[string]any{"prompt": nil}), []string{"prompt is required"}},
		"no modelConfig": {with(map[string]any{"modelConfig": nil}), []string{"modelConfig with provider and model is required", "/api/public/llm-connections"}},
		"unknown provider": {with(map[string]any{"modelConfig": map[string]any{"provider": "nope", "model": "m"}}),
			[]string{`provider \"nope\" is not an LLM connection of this project`}},
		"no output": {with(map[string]any{"outputDefinition": nil}), []string{"outputDefinition is required"}},
		"reasoning instructions": {with(map[string]any{"outputDefinition": output(map[string]any{"scoreReasoningInstructions": "why"})}),
			[]string{"scoreReasoningInstructions is not supported", "into the prompt"}},
		"multiple matches": {with(map[string]any{"outputDefinition": output(map[string]any{"shouldAllowMultipleMatches": true})}),
			[]string{"shouldAllowMultipleMatches is not supported", "exactly one category"}},
		"tool calls": {with(map[string]any{"variableMapping": []map[string]any{{"variable": "question", "source": "tool_calls"}}}),
			[]string{`variableMapping[0].source \"tool_calls\" is not supported`, "jsonPath"}},
		"wildcard path": {with(map[string]any{"variableMapping": []map[string]any{{"variable": "question", "source": "input", "jsonPath": "$.a[*]"}}}),
			[]string{"variableMapping[0].jsonPath", "plain path"}},
	}
	for name, c := range evaluatorCases {
		rec := call(t, f, http.MethodPost, unstableEvaluators, f.a.ProjectAuth, c.body, http.StatusBadRequest)
		for _, want := range c.want {
			assert.Contains(t, rec.Body.String(), want, name)
		}
	}

	rule := func(change map[string]any) map[string]any {
		body := map[string]any{"name": "refused", "enabled": true, "evaluatorAssignments": []map[string]any{{"evaluatorId": judge}}}
		for k, v := range change {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return body
	}
	filter := func(f map[string]any) map[string]any { return rule(map[string]any{"filter": []map[string]any{f}}) }
	ruleCases := map[string]struct {
		body map[string]any
		want []string
	}{
		"experiment target": {rule(map[string]any{"target": "experiment"}),
			[]string{`target \"experiment\" is not supported`, "/api/public/evals/experiments"}},
		"dataset filter": {filter(map[string]any{"type": "stringOptions", "column": "datasetId", "operator": "any of", "value": []string{"d"}}),
			[]string{`filter[0].column \"datasetId\" is not supported`, "/api/public/evals/experiments"}},
		"root filter": {filter(map[string]any{"type": "boolean", "column": "isRootObservation", "operator": "=", "value": true}),
			[]string{`column \"isRootObservation\" is not supported`, "target traces"}},
		"number filter": {filter(map[string]any{"type": "number", "column": "latency", "operator": ">", "value": 1}),
			[]string{`filter[0].type \"number\" is not supported`, "compare text"}},
		"ends with": {filter(map[string]any{"type": "string", "column": "userId", "operator": "ends with", "value": "x"}),
			[]string{`operator \"ends with\" is not supported`}},
		"is null": {filter(map[string]any{"type": "null", "column": "userId", "operator": "is null", "value": ""}),
			[]string{`operator \"is null\" is not supported`}},
		"unknown column": {filter(map[string]any{"type": "string", "column": "costUsd", "operator": "=", "value": "x"}),
			[]string{`unknown field \"costUsd\"`}},
		"no enabled":   {rule(map[string]any{"enabled": nil}), []string{"enabled is required"}},
		"no evaluator": {rule(map[string]any{"evaluatorAssignments": []any{}}), []string{"needs one evaluator", "enabled false"}},
		"two evaluators": {rule(map[string]any{"evaluatorAssignments": []map[string]any{{"evaluatorId": judge}, {"evaluatorId": cel.ID}}}),
			[]string{"runs exactly one", "one rule per evaluator"}},
		"judge without provider": {rule(map[string]any{"evaluatorAssignments": []map[string]any{{"evaluatorId": noProvider.ID}}}),
			[]string{"has no modelConfig", "/api/public/evals/rules"}},
	}
	for name, c := range ruleCases {
		rec := call(t, f, http.MethodPost, unstableRules, f.a.ProjectAuth, c.body, http.StatusBadRequest)
		for _, want := range c.want {
			assert.Contains(t, rec.Body.String(), want, name)
		}
	}
	rules, total, err := f.store.ListEvalRules(t.Context(), f.a.ProjectID, 0, 10)
	require.NoError(t, err)
	assert.Zero(t, total, "refused rules are not stored: %v", rules)
	_, total, err = f.store.ListEvaluators(t.Context(), f.a.ProjectID, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 3, total, "refused evaluators are not stored")

	// A cel evaluator cannot be shown in Langfuse's shape.
	rec := call(t, f, http.MethodGet, unstableEvaluators+"/"+cel.ID, f.a.ProjectAuth, nil, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "/api/public/evals/evaluators/"+cel.ID)

	// PATCH refusals.
	ruleID := decodeMap(t, f, http.MethodPost, unstableRules, f.a.ProjectAuth, rule(nil), http.StatusCreated)["id"].(string)
	for name, c := range map[string]struct {
		body map[string]any
		want string
	}{
		"nothing":          {map[string]any{}, "Provide at least one of"},
		"other evaluator":  {map[string]any{"evaluatorAssignments": []map[string]any{{"evaluatorId": cel.ID}}}, "cannot change"},
		"no evaluator":     {map[string]any{"evaluatorAssignments": []any{}}, "cannot be emptied"},
		"experiment scope": {map[string]any{"filter": []map[string]any{{"type": "boolean", "column": "isExperimentItemRootSpan", "operator": "=", "value": true}}}, "/api/public/evals/experiments"},
		"sampling":         {map[string]any{"sampling": 2}, "samplingRate must be from 0 to 1"},
	} {
		rec := call(t, f, http.MethodPatch, unstableRules+"/"+ruleID, f.a.ProjectAuth, c.body, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), c.want, name)
	}
	call(t, f, http.MethodPatch, unstableRules+"/missing", f.a.ProjectAuth, map[string]any{"enabled": false}, http.StatusNotFound)
	call(t, f, http.MethodDelete, unstableEvaluators+"/missing", f.a.ProjectAuth, nil, http.StatusNotFound)
}

// Langfuse's JSONPath selectors and Glassbox's dotted keys turn into each
// other.
func TestJSONPathKeys(t *testing.T) {
	for path, key := range map[string]string{
		"":                        "",
		"$":                       "",
		"$.a":                     "a",
		"$.messages[0].content":   "messages.0.content",
		"$['customer'][\"tier\"]": "customer.tier",
	} {
		got, err := jsonPathKey(path)
		require.NoError(t, err, path)
		assert.Equal(t, key, got, path)
	}
	assert.Equal(t, "$.messages[0].content", keyJSONPath("messages.0.content"))
	for _, bad := range []string{"a.b", "$..a", "$.a[*]", "$[?(@.x)]", "$['a.b']"} {
		_, err := jsonPathKey(bad)
		assert.Error(t, err, bad)
	}
}
