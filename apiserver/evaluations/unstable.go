package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

// Langfuse's evaluator and evaluation-rule API, at its paths and in its
// shapes, over the same evaluators and rules as /api/public/evals: an
// llm_as_judge evaluator is an llm evaluator, an evaluation rule a rule.
// What Glassbox cannot express is refused with a 400 that says so and what
// to use instead; nothing is stored twice.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
)

const (
	typeLLMAsJudge = "llm_as_judge"
	typeCode       = "code"
)

// LangfuseEvaluator is an evaluator in Langfuse's shape (an llm_as_judge
// one: the only type Glassbox runs).
type LangfuseEvaluator struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description *string  `json:"description"`
	CreatedBy   *Creator `json:"createdBy"`
	// Status is always active: Glassbox does not pause evaluators, failed
	// jobs show at /api/public/evals/jobs.
	Status                    string                   `json:"status"`
	PausedAt                  *string                  `json:"pausedAt"`
	PausedReason              *string                  `json:"pausedReason"`
	PausedMessage             *string                  `json:"pausedMessage"`
	EvaluationRuleAssignments []EvaluationRuleAssignee `json:"evaluationRuleAssignments"`
	CreatedAt                 httpx.Timestamp          `json:"createdAt"`
	UpdatedAt                 httpx.Timestamp          `json:"updatedAt"`
	// Glassbox keeps no version history: the stored definition is version
	// 1, identified by the evaluator's id, made when it was last changed.
	VersionID        string              `json:"versionId"`
	Version          int                 `json:"version"`
	VersionCreatedAt httpx.Timestamp     `json:"versionCreatedAt"`
	VersionCreatedBy *Creator            `json:"versionCreatedBy"`
	Type             string              `json:"type"`
	Prompt           []ChatMessage       `json:"prompt"`
	Variables        []string            `json:"variables"`
	VariableMapping  []VariableMapping   `json:"variableMapping"`
	ModelConfig      *ModelConfig        `json:"modelConfig"`
	OutputDefinition LangfuseScoreOutput `json:"outputDefinition"`
}

// Creator is who made an object; Glassbox API keys have no user, so it is
// always null.
type Creator struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

// EvaluationRuleAssignee is a rule that uses an evaluator.
type EvaluationRuleAssignee struct {
	EvaluationRuleID        string            `json:"evaluationRuleId"`
	VariableMappingOverride []VariableMapping `json:"variableMappingOverride,omitempty"`
}

// ChatMessage is one message of a judge prompt.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ModelConfig names the LLM connection (by its provider name) and model.
type ModelConfig struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// LangfuseScoreOutput is Langfuse's outputDefinition.
type LangfuseScoreOutput struct {
	DataType                   string   `json:"dataType"`
	MinValue                   *float64 `json:"minValue,omitempty"`
	MaxValue                   *float64 `json:"maxValue,omitempty"`
	Categories                 []string `json:"categories,omitempty"`
	ShouldAllowMultipleMatches *bool    `json:"shouldAllowMultipleMatches,omitempty"`
	// ScoreReasoningInstructions is refused: the judge is always asked for
	// step-by-step reasoning.
	ScoreReasoningInstructions string `json:"scoreReasoningInstructions,omitempty"`
	// ScoreValueInstructions is the score's description, told to the judge.
	ScoreValueInstructions string `json:"scoreValueInstructions,omitempty"`
}

// VariableMappingInput maps a prompt variable to a source field.
type VariableMappingInput struct {
	Variable string `json:"variable"`
	// Source is input, output, metadata, expected_output or
	// experiment_item_metadata; tool_calls is refused.
	Source string `json:"source"`
	// JSONPath is a plain path such as $.messages[0].content.
	JSONPath string `json:"jsonPath,omitempty"`
}

// VariableMapping is a stored mapping as Langfuse shows it: a source field
// of the evaluated observation, or (MappingType legacy) a field of its trace,
// of a named observation of the trace (langfuseObject span, any type), or of
// the dataset item.
type VariableMapping struct {
	MappingType    string  `json:"mappingType,omitempty"`
	Variable       string  `json:"variable"`
	LangfuseObject string  `json:"langfuseObject,omitempty"`
	ObjectName     *string `json:"objectName,omitempty"`
	Source         string  `json:"source"`
	JSONPath       string  `json:"jsonPath,omitempty"`
}

// MarshalJSON writes objectName as null in legacy mappings, as Langfuse does.
func (m VariableMapping) MarshalJSON() ([]byte, error) {
	type plain VariableMapping
	if m.MappingType == "" {
		return json.Marshal(plain(m))
	}
	out := map[string]any{"mappingType": m.MappingType, "variable": m.Variable, "langfuseObject": m.LangfuseObject,
		"objectName": m.ObjectName, "source": m.Source}
	if m.JSONPath != "" {
		out["jsonPath"] = m.JSONPath
	}
	return json.Marshal(out)
}

// CreateLangfuseEvaluator is the body of POST /api/public/unstable/evaluators.
type CreateLangfuseEvaluator struct {
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
	// Type is llm_as_judge (the default); code is refused.
	Type string `json:"type,omitempty"`
	// Prompt is a string, or chat messages of which Glassbox takes one user
	// message.
	Prompt           httpx.JSON             `json:"prompt,omitempty"`
	ModelConfig      *ModelConfig           `json:"modelConfig,omitempty"`
	VariableMapping  []VariableMappingInput `json:"variableMapping,omitempty"`
	OutputDefinition *LangfuseScoreOutput   `json:"outputDefinition,omitempty"`
	// SourceCode and SourceCodeLanguage belong to code evaluators, refused.
	SourceCode         *string `json:"sourceCode,omitempty"`
	SourceCodeLanguage *string `json:"sourceCodeLanguage,omitempty"`
}

// DeletedObject answers the deletion of an evaluator or a rule.
type DeletedObject struct {
	ID string `json:"id"`
}

// CursorMeta is the pagination block of a cursor list: no cursor on the
// last page.
type CursorMeta struct {
	Cursor string `json:"cursor,omitempty"`
}

// CursorPage is a page of a cursor list.
type CursorPage[T any] struct {
	Data []T        `json:"data"`
	Meta CursorMeta `json:"meta"`
}

// EvaluationRule is a rule in Langfuse's shape.
type EvaluationRule struct {
	ID                   string              `json:"id"`
	Name                 string              `json:"name"`
	CreatedBy            *Creator            `json:"createdBy"`
	Enabled              bool                `json:"enabled"`
	Sampling             float64             `json:"sampling"`
	Filter               []RuleFilter        `json:"filter"`
	EvaluatorAssignments []EvaluatorAssignee `json:"evaluatorAssignments"`
	CreatedAt            httpx.Timestamp     `json:"createdAt"`
	UpdatedAt            httpx.Timestamp     `json:"updatedAt"`
}

// EvaluatorAssignee is the evaluator of a rule; VariableMapping is the
// rule's override, null when it inherits the evaluator's.
type EvaluatorAssignee struct {
	EvaluatorID     string            `json:"evaluatorId"`
	VariableMapping []VariableMapping `json:"variableMapping"`
}

// RuleFilter is one filter condition in Langfuse's shape.
type RuleFilter struct {
	Type     string     `json:"type"`
	Column   string     `json:"column"`
	Operator string     `json:"operator"`
	Value    httpx.JSON `json:"value,omitempty"`
	Key      string     `json:"key,omitempty"`
}

// AssignmentInput attaches an evaluator to a rule.
type AssignmentInput struct {
	EvaluatorID     string                 `json:"evaluatorId"`
	VariableMapping []VariableMappingInput `json:"variableMapping,omitempty"`
}

// CreateEvaluationRule is the body of POST /api/public/unstable/evaluation-rules.
type CreateEvaluationRule struct {
	Name    string `json:"name"`
	Enabled *bool  `json:"enabled"`
	// Sampling defaults to 1.
	Sampling *float64     `json:"sampling,omitempty"`
	Filter   []RuleFilter `json:"filter,omitempty"`
	// EvaluatorAssignments must hold exactly one evaluator.
	EvaluatorAssignments []AssignmentInput `json:"evaluatorAssignments"`
	// Target is observation (the default) or trace; experiment is refused.
	Target string `json:"target,omitempty"`
}

// UpdateEvaluationRule is the body of PATCH
// /api/public/unstable/evaluation-rules/{evaluationRuleId}; at least one
// field is required.
type UpdateEvaluationRule struct {
	Name                 *string            `json:"name,omitempty"`
	Enabled              *bool              `json:"enabled,omitempty"`
	Sampling             *float64           `json:"sampling,omitempty"`
	Filter               *[]RuleFilter      `json:"filter,omitempty"`
	EvaluatorAssignments *[]AssignmentInput `json:"evaluatorAssignments,omitempty"`
}

// cursorParams are the query parameters of the unstable lists.
var cursorParams = []httpx.Param{
	{Name: "limit", Type: httpx.TypeInteger, Description: "Items per page, 1 to 100 (default 50)."},
	{Name: "cursor", Type: httpx.TypeString, Description: "The meta.cursor of the previous page."},
}

// langfuseEvaluatorPrefixes are where Langfuse serves this API: under
// /unstable in its spec, under /v2 in the SDKs' clients (@langfuse/core 5);
// both answer alike. Each maps to the prefix of its operation ids.
var langfuseEvaluatorPrefixes = map[string]string{"/api/public/unstable": "unstable", "/api/public/v2": "v2"}

func (h handlers) unstableRoutes() []httpx.Route {
	var routes []httpx.Route
	for _, prefix := range slices.Sorted(maps.Keys(langfuseEvaluatorPrefixes)) {
		routes = append(routes, h.langfuseEvaluatorRoutes(prefix, langfuseEvaluatorPrefixes[prefix])...)
	}
	return routes
}

func (h handlers) langfuseEvaluatorRoutes(prefix, opPrefix string) []httpx.Route {
	evaluators, rules := prefix+"/evaluators", prefix+"/evaluation-rules"
	doc := func(id, summary string, body, response any, status int) httpx.Doc {
		return httpx.Doc{OperationID: opPrefix + id, Tag: "Evaluations", Summary: summary, Body: body, Response: response, Status: status}
	}
	listDoc := func(d httpx.Doc) httpx.Doc {
		d.Query = cursorParams
		return d
	}
	return []httpx.Route{
		{Method: http.MethodGet, Path: evaluators, Access: httpx.ProjectKey, Handler: h.listLangfuseEvaluators,
			Doc: listDoc(doc("Evaluators_list", "The project's llm_as_judge evaluators in Langfuse's shape, by name.",
				nil, CursorPage[LangfuseEvaluator]{}, 0))},
		{Method: http.MethodPost, Path: evaluators, Access: httpx.ProjectKey, Handler: h.createLangfuseEvaluator,
			Doc: doc("Evaluators_create", "Create an llm_as_judge evaluator (an llm evaluator); code evaluators are refused.",
				CreateLangfuseEvaluator{}, LangfuseEvaluator{}, http.StatusCreated)},
		{Method: http.MethodGet, Path: evaluators + "/{evaluatorId}", Access: httpx.ProjectKey, Handler: h.getLangfuseEvaluator,
			Doc: doc("Evaluators_get", "One llm evaluator in Langfuse's shape.", nil, LangfuseEvaluator{}, 0)},
		{Method: http.MethodDelete, Path: evaluators + "/{evaluatorId}", Access: httpx.ProjectKey, Handler: h.deleteLangfuseEvaluator,
			Doc: doc("Evaluators_delete", "Delete an evaluator that no rule or experiment uses.", nil, DeletedObject{}, 0)},

		{Method: http.MethodGet, Path: rules, Access: httpx.ProjectKey, Handler: h.listLangfuseRules,
			Doc: listDoc(doc("EvaluationRules_list", "The project's evaluator rules in Langfuse's shape, by name.",
				nil, CursorPage[EvaluationRule]{}, 0))},
		{Method: http.MethodPost, Path: rules, Access: httpx.ProjectKey, Handler: h.createLangfuseRule,
			Doc: doc("EvaluationRules_create", "Create a rule with one evaluator; an llm evaluator runs with its modelConfig's connection.",
				CreateEvaluationRule{}, EvaluationRule{}, http.StatusCreated)},
		{Method: http.MethodGet, Path: rules + "/{evaluationRuleId}", Access: httpx.ProjectKey, Handler: h.getLangfuseRule,
			Doc: doc("EvaluationRules_get", "One rule in Langfuse's shape.", nil, EvaluationRule{}, 0)},
		{Method: http.MethodPatch, Path: rules + "/{evaluationRuleId}", Access: httpx.ProjectKey, Handler: h.updateLangfuseRule,
			Doc: doc("EvaluationRules_update", "Change a rule's name, activation, sampling, filter or variable mapping.",
				UpdateEvaluationRule{}, EvaluationRule{}, 0)},
		{Method: http.MethodDelete, Path: rules + "/{evaluationRuleId}", Access: httpx.ProjectKey, Handler: h.deleteLangfuseRule,
			Doc: doc("EvaluationRules_delete", "Delete a rule and its jobs; the scores it wrote stay.", nil, DeletedObject{}, 0)},
	}
}

// cursorPage reads limit and cursor: the cursor is the offset of the next
// page in the store's order, opaque to clients.
func cursorPage(r *http.Request) (offset, limit int, err error) {
	q := httpx.QueryOf(r)
	if limit, err = q.Int("limit", 50, 1, 100); err != nil {
		return 0, 0, err
	}
	if c := q.String("cursor"); c != "" {
		raw, decErr := base64.RawURLEncoding.DecodeString(c)
		n, numErr := strconv.Atoi(strings.TrimPrefix(string(raw), "o:"))
		if decErr != nil || numErr != nil || !strings.HasPrefix(string(raw), "o:") || n < 0 {
			return 0, 0, httpx.BadRequest("Invalid cursor: use meta.cursor of the previous page as it is")
		}
		offset = n
	}
	return offset, limit, nil
}

func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset)))
}

// allRules returns every rule of the project: an evaluator shows the rules
// that use it, and a project has few.
func (h handlers) allRules(ctx context.Context, project string) ([]controlplane.EvalRule, error) {
	const page = 500
	var out []controlplane.EvalRule
	for {
		rules, total, err := h.store.ListEvalRules(ctx, project, len(out), page)
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
		if len(rules) == 0 || len(out) >= total {
			return out, nil
		}
	}
}

func (h handlers) listLangfuseEvaluators(r *http.Request) (any, error) {
	offset, limit, err := cursorPage(r)
	if err != nil {
		return nil, err
	}
	ctx, project := r.Context(), httpx.ProjectID(r)
	rules, err := h.allRules(ctx, project)
	if err != nil {
		return nil, err
	}
	// cel and webhook evaluators have no Langfuse shape and are skipped, so
	// a page reads on until it is full or the store is exhausted.
	out := CursorPage[LangfuseEvaluator]{Data: []LangfuseEvaluator{}}
	for len(out.Data) < limit {
		page, total, err := h.store.ListEvaluators(ctx, project, offset, limit-len(out.Data))
		if err != nil {
			return nil, err
		}
		offset += len(page)
		for _, e := range page {
			if e.Kind == controlplane.EvaluatorLLM {
				out.Data = append(out.Data, toLangfuseEvaluator(e, rules))
			}
		}
		if len(page) == 0 || offset >= total {
			return out, nil
		}
	}
	out.Meta.Cursor = encodeCursor(offset)
	return out, nil
}

func (h handlers) getLangfuseEvaluator(r *http.Request) (any, error) {
	ctx, project := r.Context(), httpx.ProjectID(r)
	e, err := h.store.GetEvaluator(ctx, project, r.PathValue("evaluatorId"))
	if err != nil {
		return nil, storeError(err)
	}
	if e.Kind != controlplane.EvaluatorLLM {
		return nil, httpx.BadRequest("Evaluator %s is a %s evaluator, which Langfuse's evaluator API cannot show (it has llm_as_judge "+
			"and code in TypeScript or Python); read it at GET /api/public/evals/evaluators/%s", e.ID, e.Kind, e.ID)
	}
	rules, err := h.allRules(ctx, project)
	if err != nil {
		return nil, err
	}
	return toLangfuseEvaluator(e, rules), nil
}

func (h handlers) createLangfuseEvaluator(r *http.Request) (any, error) {
	var req CreateLangfuseEvaluator
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	n, err := fromLangfuseEvaluator(req)
	if err != nil {
		return nil, err
	}
	ctx, project := r.Context(), httpx.ProjectID(r)
	e, err := h.store.CreateEvaluator(ctx, project, n)
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusCreated, toLangfuseEvaluator(e, nil)), nil
}

func (h handlers) deleteLangfuseEvaluator(r *http.Request) (any, error) {
	id := r.PathValue("evaluatorId")
	if err := h.store.DeleteEvaluator(r.Context(), httpx.ProjectID(r), id); err != nil {
		return nil, storeError(err)
	}
	return DeletedObject{ID: id}, nil
}

// codeRefusal says what to use instead of Langfuse's code evaluators.
const codeRefusal = `type "code" is not supported: Glassbox does not run TypeScript or Python evaluator code. ` +
	`Use a cel evaluator (an expression over the variables) or a webhook evaluator (your code behind an HTTP endpoint) ` +
	`through POST /api/public/evals/evaluators`

func fromLangfuseEvaluator(req CreateLangfuseEvaluator) (controlplane.NewEvaluator, error) {
	switch req.Type {
	case "", typeLLMAsJudge:
	case typeCode:
		return controlplane.NewEvaluator{}, httpx.BadRequest("%s", codeRefusal)
	default:
		return controlplane.NewEvaluator{}, httpx.BadRequest("type %q must be llm_as_judge", req.Type)
	}
	if req.SourceCode != nil || req.SourceCodeLanguage != nil {
		return controlplane.NewEvaluator{}, httpx.BadRequest("sourceCode and sourceCodeLanguage belong to code evaluators, "+
			"which are not supported: %s", codeRefusal)
	}
	prompt, err := judgePrompt(req.Prompt)
	if err != nil {
		return controlplane.NewEvaluator{}, err
	}
	if req.ModelConfig == nil || req.ModelConfig.Provider == "" || req.ModelConfig.Model == "" {
		return controlplane.NewEvaluator{}, httpx.BadRequest("modelConfig with provider and model is required: Glassbox has no " +
			"project default evaluation model. Set provider to the name of one of the project's LLM connections " +
			"(GET /api/public/llm-connections) and model to a model it serves")
	}
	if req.OutputDefinition == nil {
		return controlplane.NewEvaluator{}, httpx.BadRequest("outputDefinition is required")
	}
	output, err := fromLangfuseOutput(*req.OutputDefinition)
	if err != nil {
		return controlplane.NewEvaluator{}, err
	}
	variables, err := fromLangfuseMapping("variableMapping", req.VariableMapping)
	if err != nil {
		return controlplane.NewEvaluator{}, err
	}
	n := controlplane.NewEvaluator{Name: req.Name, Kind: controlplane.EvaluatorLLM, ScoreName: req.Name, Output: output,
		Variables: variables, Prompt: prompt, Model: req.ModelConfig.Model, Provider: req.ModelConfig.Provider}
	if req.Description != nil {
		n.Description = *req.Description
	}
	return n, nil
}

// judgePrompt reads a prompt string or chat messages. Glassbox's judge
// sends its own system message (the answer format) and the prompt as the
// one user message, so only that can be stored.
func judgePrompt(raw json.RawMessage) (string, error) {
	var text string
	if len(raw) == 0 || string(raw) == "null" {
		return "", httpx.BadRequest("prompt is required: a string, or chat messages")
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var messages []ChatMessage
	if err := json.Unmarshal(raw, &messages); err != nil {
		return "", httpx.BadRequest("prompt must be a string or a list of {role, content} messages")
	}
	if len(messages) != 1 || messages[0].Role != "user" {
		return "", httpx.BadRequest("prompt: Glassbox's judge takes one user message (it writes the system message that asks for " +
			"the score itself); send the prompt as a string or as a single user message, with system and assistant " +
			"guidance written into that message")
	}
	return messages[0].Content, nil
}

func fromLangfuseOutput(o LangfuseScoreOutput) (controlplane.ScoreOutput, error) {
	if o.ScoreReasoningInstructions != "" {
		return controlplane.ScoreOutput{}, httpx.BadRequest("outputDefinition.scoreReasoningInstructions is not supported: " +
			"Glassbox's judge is always asked for step-by-step reasoning; write guidance on the reasoning into the prompt, " +
			"and what the score means into scoreValueInstructions")
	}
	if o.ShouldAllowMultipleMatches != nil && *o.ShouldAllowMultipleMatches {
		return controlplane.ScoreOutput{}, httpx.BadRequest("outputDefinition.shouldAllowMultipleMatches is not supported: " +
			"a Glassbox CATEGORICAL score holds exactly one category; set it to false, or use one BOOLEAN evaluator per category")
	}
	return controlplane.ScoreOutput{DataType: o.DataType, Min: o.MinValue, Max: o.MaxValue, Categories: o.Categories,
		Description: o.ScoreValueInstructions}, nil
}

func toLangfuseOutput(o controlplane.ScoreOutput) LangfuseScoreOutput {
	out := LangfuseScoreOutput{DataType: o.DataType, MinValue: o.Min, MaxValue: o.Max, Categories: o.Categories,
		ScoreValueInstructions: o.Description}
	if o.DataType == controlplane.ScoreCategorical {
		single := false
		out.ShouldAllowMultipleMatches = &single
	}
	return out
}

// Langfuse's mapping sources and where Glassbox reads them.
var sourceFields = map[string]controlplane.VariableMapping{
	"input":                    {Field: controlplane.FieldInput},
	"output":                   {Field: controlplane.FieldOutput},
	"metadata":                 {Field: controlplane.FieldMetadata},
	"expected_output":          {Source: controlplane.SourceDatasetItem, Field: controlplane.FieldExpectedOutput},
	"experiment_item_metadata": {Source: controlplane.SourceDatasetItem, Field: controlplane.FieldMetadata},
}

func fromLangfuseMapping(what string, in []VariableMappingInput) ([]controlplane.VariableMapping, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]controlplane.VariableMapping, 0, len(in))
	for i, m := range in {
		v, ok := sourceFields[m.Source]
		switch {
		case m.Source == "tool_calls":
			return nil, httpx.BadRequest("%s[%d].source \"tool_calls\" is not supported: Glassbox keeps no separate tool calls; "+
				"read them from output or metadata with a jsonPath", what, i)
		case !ok:
			return nil, httpx.BadRequest("%s[%d].source %q must be input, output, metadata, expected_output or experiment_item_metadata",
				what, i, m.Source)
		}
		key, err := jsonPathKey(m.JSONPath)
		if err != nil {
			return nil, httpx.BadRequest("%s[%d].jsonPath: %v", what, i, err)
		}
		v.Name, v.Key = m.Variable, key
		out = append(out, v)
	}
	return out, nil
}

var jsonPathSegment = regexp.MustCompile(`^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^'.]*)'\]|\["([^".]*)"\])`)

// jsonPathKey turns a plain JSONPath ($.a.b[0]) into Glassbox's dotted key
// (a.b.0); wildcards, filters and recursive descent have no such form.
func jsonPathKey(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	if !strings.HasPrefix(path, "$") {
		return "", fmt.Errorf("%q must start with $", path)
	}
	rest := path[1:]
	var keys []string
	for rest != "" {
		m := jsonPathSegment.FindStringSubmatch(rest)
		if m == nil {
			return "", fmt.Errorf("%q is not supported: Glassbox follows a plain path of keys and indexes such as "+
				"$.messages[0].content (no wildcards, filters or ..)", path)
		}
		keys = append(keys, m[1]+m[2]+m[3]+m[4])
		rest = rest[len(m[0]):]
	}
	return strings.Join(keys, "."), nil
}

func keyJSONPath(key string) string {
	if key == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("$")
	for part := range strings.SplitSeq(key, ".") {
		if _, err := strconv.Atoi(part); err == nil {
			b.WriteString("[" + part + "]")
		} else {
			b.WriteString("." + part)
		}
	}
	return b.String()
}

func toLangfuseMapping(vs []controlplane.VariableMapping) []VariableMapping {
	if len(vs) == 0 {
		return nil
	}
	out := make([]VariableMapping, 0, len(vs))
	for _, v := range vs {
		m := VariableMapping{Variable: v.Name, Source: v.Field, JSONPath: keyJSONPath(v.Key)}
		switch {
		case v.Source == controlplane.SourceDatasetItem && v.Field == controlplane.FieldExpectedOutput:
			m.Source = "expected_output"
		case v.Source == controlplane.SourceDatasetItem && v.Field == controlplane.FieldMetadata:
			m.Source = "experiment_item_metadata"
		case v.Source == controlplane.SourceDatasetItem:
			m.MappingType, m.LangfuseObject = "legacy", "dataset_item"
		case v.Source == controlplane.SourceTrace:
			m.MappingType, m.LangfuseObject = "legacy", "trace"
		case v.Source == controlplane.SourceObservation && v.ObservationName != "":
			name := v.ObservationName
			m.MappingType, m.LangfuseObject, m.ObjectName = "legacy", "span", &name
		}
		out = append(out, m)
	}
	return out
}

func toLangfuseEvaluator(e controlplane.Evaluator, rules []controlplane.EvalRule) LangfuseEvaluator {
	out := LangfuseEvaluator{
		ID: e.ID, Name: e.Name, Description: httpx.OptionalString(e.Description), Status: "active",
		EvaluationRuleAssignments: []EvaluationRuleAssignee{}, CreatedAt: httpx.FromTime(e.CreatedAt),
		UpdatedAt: httpx.FromTime(e.UpdatedAt), VersionID: e.ID, Version: 1, VersionCreatedAt: httpx.FromTime(e.UpdatedAt),
		Type: typeLLMAsJudge, Prompt: []ChatMessage{{Role: "user", Content: e.Prompt}},
		Variables: httpx.NonNil(controlplane.PromptVariables(e.Prompt)), VariableMapping: toLangfuseMapping(e.Variables),
		OutputDefinition: toLangfuseOutput(e.Output),
	}
	if e.Provider != "" {
		out.ModelConfig = &ModelConfig{Provider: e.Provider, Model: e.Model}
	}
	// Newest assignment first, as Langfuse lists them.
	for _, rule := range slices.Backward(sortedByCreation(rules)) {
		if rule.EvaluatorID == e.ID {
			out.EvaluationRuleAssignments = append(out.EvaluationRuleAssignments,
				EvaluationRuleAssignee{EvaluationRuleID: rule.ID, VariableMappingOverride: toLangfuseMapping(rule.Variables)})
		}
	}
	return out
}

func sortedByCreation(rules []controlplane.EvalRule) []controlplane.EvalRule {
	out := slices.Clone(rules)
	slices.SortStableFunc(out, func(a, b controlplane.EvalRule) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

func (h handlers) listLangfuseRules(r *http.Request) (any, error) {
	offset, limit, err := cursorPage(r)
	if err != nil {
		return nil, err
	}
	rules, total, err := h.store.ListEvalRules(r.Context(), httpx.ProjectID(r), offset, limit)
	if err != nil {
		return nil, err
	}
	out := CursorPage[EvaluationRule]{Data: make([]EvaluationRule, 0, len(rules))}
	for _, rule := range rules {
		out.Data = append(out.Data, toLangfuseRule(rule))
	}
	if next := offset + len(rules); len(rules) > 0 && next < total {
		out.Meta.Cursor = encodeCursor(next)
	}
	return out, nil
}

func (h handlers) getLangfuseRule(r *http.Request) (any, error) {
	rule, err := h.store.GetEvalRule(r.Context(), httpx.ProjectID(r), r.PathValue("evaluationRuleId"))
	if err != nil {
		return nil, storeError(err)
	}
	return toLangfuseRule(rule), nil
}

func (h handlers) createLangfuseRule(r *http.Request) (any, error) {
	var req CreateEvaluationRule
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	target, err := ruleTarget(req.Target)
	if err != nil {
		return nil, err
	}
	if req.Enabled == nil {
		return nil, httpx.BadRequest("enabled is required")
	}
	assignment, err := oneAssignment(req.EvaluatorAssignments)
	if err != nil {
		return nil, err
	}
	filter, err := fromLangfuseFilter(req.Filter)
	if err != nil {
		return nil, err
	}
	variables, err := fromLangfuseMapping("evaluatorAssignments[0].variableMapping", assignment.VariableMapping)
	if err != nil {
		return nil, err
	}
	ctx, project := r.Context(), httpx.ProjectID(r)
	e, err := h.store.GetEvaluator(ctx, project, assignment.EvaluatorID)
	if err != nil {
		return nil, storeError(err)
	}
	connection, err := h.evaluatorConnection(ctx, project, e)
	if err != nil {
		return nil, err
	}
	rule, err := h.store.CreateEvalRule(ctx, project, controlplane.NewEvalRule{
		Name: req.Name, EvaluatorID: e.ID, ConnectionID: connection, Target: target, Filter: filter,
		SamplingRate: req.Sampling, Active: req.Enabled, Variables: variables,
	})
	if err != nil {
		return nil, storeError(err)
	}
	return httpx.WithStatus(http.StatusCreated, toLangfuseRule(rule)), nil
}

// ruleTarget reads the target older clients of Langfuse's unstable API
// send; the current one has none and means observations.
func ruleTarget(target string) (string, error) {
	switch target {
	case "", evaljobs.TargetObservation:
		return evaljobs.TargetObservation, nil
	case evaljobs.TargetTrace:
		return evaljobs.TargetTrace, nil
	case "experiment":
		return "", httpx.BadRequest("target \"experiment\" is not supported: Glassbox rules evaluate arriving observations or " +
			"traces; to score an experiment over a dataset, run it with evaluators through POST /api/public/evals/experiments")
	}
	return "", httpx.BadRequest("target %q must be observation or trace", target)
}

// oneAssignment takes the evaluator of a rule: Glassbox runs exactly one.
func oneAssignment(as []AssignmentInput) (AssignmentInput, error) {
	switch {
	case len(as) == 0:
		return AssignmentInput{}, httpx.BadRequest("evaluatorAssignments needs one evaluator: a Glassbox rule runs exactly " +
			"one (a draft rule without an evaluator cannot be stored); create it with enabled false to keep it inactive")
	case len(as) > 1:
		return AssignmentInput{}, httpx.BadRequest("evaluatorAssignments has %d evaluators: a Glassbox rule runs exactly one; "+
			"create one rule per evaluator with the same filter and sampling", len(as))
	case as[0].EvaluatorID == "":
		return AssignmentInput{}, httpx.BadRequest("evaluatorAssignments[0].evaluatorId is required")
	}
	return as[0], nil
}

// evaluatorConnection is the connection a new rule of an llm evaluator
// runs with: its modelConfig's. Code evaluators take none.
func (h handlers) evaluatorConnection(ctx context.Context, project string, e controlplane.Evaluator) (string, error) {
	if e.Kind != controlplane.EvaluatorLLM {
		return "", nil
	}
	if e.Provider == "" {
		return "", httpx.BadRequest("Evaluator %s has no modelConfig to run with: set its provider (PATCH "+
			"/api/public/evals/evaluators/%s) or create the rule with a connectionId through POST /api/public/evals/rules", e.ID, e.ID)
	}
	cn, err := h.store.GetLLMConnectionByProvider(ctx, project, e.Provider)
	if errors.Is(err, controlplane.ErrNotFound) {
		return "", httpx.BadRequest("modelConfig.provider %q of evaluator %s is no longer an LLM connection of this project; "+
			"create it with PUT /api/public/llm-connections or change the evaluator's provider", e.Provider, e.ID)
	}
	if err != nil {
		return "", err
	}
	return cn.ID, nil
}

func (h handlers) updateLangfuseRule(r *http.Request) (any, error) {
	var req UpdateEvaluationRule
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req == (UpdateEvaluationRule{}) {
		return nil, httpx.BadRequest("Provide at least one of name, enabled, sampling, filter, evaluatorAssignments")
	}
	u := controlplane.EvalRuleUpdate{Name: req.Name, Active: req.Enabled, SamplingRate: req.Sampling}
	if req.Filter != nil {
		filter, err := fromLangfuseFilter(*req.Filter)
		if err != nil {
			return nil, err
		}
		u.Filter = filter
	}
	ctx, project, id := r.Context(), httpx.ProjectID(r), r.PathValue("evaluationRuleId")
	if req.EvaluatorAssignments != nil {
		current, err := h.store.GetEvalRule(ctx, project, id)
		if err != nil {
			return nil, storeError(err)
		}
		if len(*req.EvaluatorAssignments) == 0 {
			return nil, httpx.BadRequest("evaluatorAssignments cannot be emptied: a Glassbox rule runs exactly one evaluator; " +
				"send enabled false to stop it, or delete it")
		}
		assignment, err := oneAssignment(*req.EvaluatorAssignments)
		if err != nil {
			return nil, err
		}
		if assignment.EvaluatorID != current.EvaluatorID {
			return nil, httpx.BadRequest("evaluatorAssignments: the evaluator of a Glassbox rule cannot change (this rule runs %s); "+
				"create a rule for evaluator %s and delete this one", current.EvaluatorID, assignment.EvaluatorID)
		}
		variables, err := fromLangfuseMapping("evaluatorAssignments[0].variableMapping", assignment.VariableMapping)
		if err != nil {
			return nil, err
		}
		// A null mapping inherits the evaluator's again: no overrides.
		u.Variables = httpx.NonNil(variables)
	}
	rule, err := h.store.UpdateEvalRule(ctx, project, id, u)
	if err != nil {
		return nil, storeError(err)
	}
	return toLangfuseRule(rule), nil
}

func (h handlers) deleteLangfuseRule(r *http.Request) (any, error) {
	id := r.PathValue("evaluationRuleId")
	if err := h.store.DeleteEvalRule(r.Context(), httpx.ProjectID(r), id); err != nil {
		return nil, storeError(err)
	}
	return DeletedObject{ID: id}, nil
}

func toLangfuseRule(r controlplane.EvalRule) EvaluationRule {
	return EvaluationRule{
		ID: r.ID, Name: r.Name, Enabled: r.Active, Sampling: r.SamplingRate, Filter: toLangfuseFilter(r.Filter),
		EvaluatorAssignments: []EvaluatorAssignee{{EvaluatorID: r.EvaluatorID, VariableMapping: toLangfuseMapping(r.Variables)}},
		CreatedAt:            httpx.FromTime(r.CreatedAt), UpdatedAt: httpx.FromTime(r.UpdatedAt),
	}
}

// unsupportedColumns are Langfuse's filter columns that Glassbox rules
// cannot test, with what to do instead.
var unsupportedColumns = map[string]string{
	"isRootObservation":        "target traces instead (a trace rule evaluates the trace once)",
	"parentObservationId":      "target traces instead (a trace rule evaluates the trace once)",
	"calledToolNames":          "filter on the observation's name or metadata instead",
	"toolCalls":                "filter on the observation's name or metadata instead",
	"experimentId":             "experiments run their evaluators through POST /api/public/evals/experiments",
	"isExperimentItemRootSpan": "experiments run their evaluators through POST /api/public/evals/experiments",
	"datasetId":                "experiments run their evaluators through POST /api/public/evals/experiments",
}

// operators maps Langfuse's string and list operators onto Glassbox's.
var operators = map[string]string{
	"=": evaljobs.OpEquals, "!=": evaljobs.OpNotEquals, "contains": evaljobs.OpContains, "starts with": evaljobs.OpStartsWith,
	"any of": evaljobs.OpAnyOf, "none of": evaljobs.OpNoneOf, "all of": evaljobs.OpAllOf,
}

const supportedFilters = "Glassbox rule filters compare text: types string, stringOptions, arrayOptions, categoryOptions, " +
	"stringObject (metadata) and null (is not null), with operators =, !=, contains, starts with, any of, none of, all of"

func fromLangfuseFilter(in []RuleFilter) (evaljobs.Filter, error) {
	out := evaljobs.Filter{}
	for i, f := range in {
		if instead, ok := unsupportedColumns[f.Column]; ok {
			return nil, httpx.BadRequest("filter[%d].column %q is not supported: %s", i, f.Column, instead)
		}
		c := evaljobs.Condition{Field: f.Column, Key: f.Key}
		switch f.Type {
		case "string", "stringObject":
			op, ok := operators[f.Operator]
			if !ok || slices.Contains([]string{evaljobs.OpAnyOf, evaljobs.OpNoneOf, evaljobs.OpAllOf}, op) {
				return nil, httpx.BadRequest("filter[%d].operator %q is not supported for type %s: %s", i, f.Operator, f.Type, supportedFilters)
			}
			if json.Unmarshal(f.Value, &c.Value) != nil {
				return nil, httpx.BadRequest("filter[%d].value must be a string", i)
			}
			c.Operator = op
		case "stringOptions", "arrayOptions", "categoryOptions":
			op, ok := operators[f.Operator]
			if !ok || !slices.Contains([]string{evaljobs.OpAnyOf, evaljobs.OpNoneOf, evaljobs.OpAllOf}, op) {
				return nil, httpx.BadRequest("filter[%d].operator %q is not supported for type %s: %s", i, f.Operator, f.Type, supportedFilters)
			}
			if json.Unmarshal(f.Value, &c.Values) != nil {
				return nil, httpx.BadRequest("filter[%d].value must be a list of strings", i)
			}
			c.Operator = op
		case "null":
			if f.Operator != "is not null" {
				return nil, httpx.BadRequest("filter[%d].operator %q is not supported for type null: %s", i, f.Operator, supportedFilters)
			}
			c.Operator = evaljobs.OpExists
		default:
			return nil, httpx.BadRequest("filter[%d].type %q is not supported: %s", i, f.Type, supportedFilters)
		}
		out = append(out, c)
	}
	return out, nil
}

func toLangfuseFilter(in evaljobs.Filter) []RuleFilter {
	out := make([]RuleFilter, 0, len(in))
	for _, c := range in {
		f := RuleFilter{Type: "string", Column: c.Field, Operator: c.Operator, Key: c.Key}
		switch {
		case c.Operator == evaljobs.OpExists:
			f.Type, f.Operator, f.Value = "null", "is not null", httpx.JSON(`""`)
		case len(c.Values) > 0:
			f.Type = "stringOptions"
			if c.Field == evaljobs.FieldTags {
				f.Type = "arrayOptions"
			}
			f.Value, _ = json.Marshal(c.Values)
		default:
			if c.Key != "" {
				f.Type = "stringObject"
			}
			f.Value, _ = json.Marshal(c.Value)
		}
		out = append(out, f)
	}
	return out
}
