package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

func TestLLMConnections(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		box := testBox(t)

		_, err := s.UpsertLLMConnection(ctx, box, pa.ID, LLMConnectionUpsert{Provider: "judge"})
		assert.ErrorIs(t, err, ErrInvalid, "a new connection needs a key")
		_, err = s.UpsertLLMConnection(ctx, nil, pa.ID, LLMConnectionUpsert{Provider: "judge", SecretKey: "sk-1234567890"})
		assert.ErrorIs(t, err, secretbox.ErrNoEncryptionKey)

		cn, err := s.UpsertLLMConnection(ctx, box, pa.ID, LLMConnectionUpsert{Provider: "judge", SecretKey: "sk-1234567890abcd",
			ExtraHeaders: map[string]string{"X-Org": "secret-org"}, DefaultModel: ptr("gpt-4o-mini"),
			DefaultParams: json.RawMessage(`{"temperature":0}`)})
		require.NoError(t, err)
		assert.Equal(t, AdapterOpenAI, cn.Adapter)
		assert.Equal(t, "https://api.openai.com/v1", cn.BaseURL)
		assert.Equal(t, "...abcd", cn.DisplaySecret)
		assert.Equal(t, []string{"X-Org"}, cn.HeaderKeys)
		assert.Equal(t, DefaultLLMConcurrency, cn.MaxConcurrency)
		assert.Equal(t, DefaultLLMTimeout, cn.Timeout)
		assert.JSONEq(t, `{"temperature":0}`, string(cn.DefaultParams))

		// The secrets are sealed in the database.
		for _, row := range dumpTable(t, s.db, "llm_connections") {
			assert.NotContains(t, row, "sk-1234567890abcd")
			assert.NotContains(t, row, "secret-org")
		}
		creds, err := s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.NoError(t, err)
		assert.Equal(t, "sk-1234567890abcd", creds.SecretKey)
		assert.Equal(t, map[string]string{"X-Org": "secret-org"}, creds.ExtraHeaders)

		// An update without a key keeps the key, but only for the same destination.
		cn, err = s.UpsertLLMConnection(ctx, box, pa.ID, LLMConnectionUpsert{Provider: "judge", MaxConcurrency: 2, Timeout: 5 * time.Second})
		require.NoError(t, err)
		assert.Equal(t, 2, cn.MaxConcurrency)
		for _, redirect := range []LLMConnectionUpsert{
			{Provider: "judge", BaseURL: "http://127.0.0.1:9/v1"},
			{Provider: "judge", Adapter: AdapterAnthropic},
			{Provider: "judge", ExtraHeaders: map[string]string{"X-Org": "other"}},
			{Provider: "judge", BaseURL: "http://127.0.0.1:9/v1", SecretKey: "sk-new-key-0000"},
		} {
			_, err = s.UpsertLLMConnection(ctx, box, pa.ID, redirect)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", redirect)
		}
		cn, err = s.UpsertLLMConnection(ctx, box, pa.ID, LLMConnectionUpsert{Provider: "judge", Adapter: AdapterAnthropic,
			BaseURL: "http://127.0.0.1:9/v1/", SecretKey: "sk-new-key-0000", ExtraHeaders: map[string]string{"X-Org": "org-2"}})
		require.NoError(t, err)
		assert.Equal(t, "http://127.0.0.1:9/v1", cn.BaseURL)
		creds, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.NoError(t, err)
		assert.Equal(t, "sk-new-key-0000", creds.SecretKey)
		assert.Equal(t, map[string]string{"X-Org": "org-2"}, creds.ExtraHeaders)
		assert.Equal(t, "gpt-4o-mini", creds.DefaultModel)

		// The secrets are sealed for their destination: a row pointed
		// elsewhere behind the API's back does not open.
		_, err = s.conn().exec(ctx, `UPDATE llm_connections SET base_url = ? WHERE id = ?`, "https://attacker.example/v1", cn.ID)
		require.NoError(t, err)
		_, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		assert.ErrorContains(t, err, "does not open")
		_, err = s.conn().exec(ctx, `UPDATE llm_connections SET base_url = ? WHERE id = ?`, cn.BaseURL, cn.ID)
		require.NoError(t, err)

		// Secrets sealed by earlier releases (row id alone) are bound at start.
		legacyKey, err := box.Seal("sk-legacy-1111", cn.ID)
		require.NoError(t, err)
		legacyHeaders, err := box.Seal(`{"X-Org":"legacy"}`, cn.ID)
		require.NoError(t, err)
		_, err = s.conn().exec(ctx, `UPDATE llm_connections SET secret_key = ?, extra_headers = ? WHERE id = ?`,
			legacyKey, legacyHeaders, cn.ID)
		require.NoError(t, err)
		_, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.Error(t, err)
		n, err := s.ResealLLMSecrets(ctx, box)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		creds, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.NoError(t, err)
		assert.Equal(t, "sk-legacy-1111", creds.SecretKey)
		assert.Equal(t, map[string]string{"X-Org": "legacy"}, creds.ExtraHeaders)
		n, err = s.ResealLLMSecrets(ctx, box)
		require.NoError(t, err)
		assert.Zero(t, n, "idempotent")

		for _, bad := range []LLMConnectionUpsert{
			{Provider: "x", SecretKey: "k", Adapter: "bedrock"},
			{Provider: "x", SecretKey: "k", BaseURL: "ftp://host"},
			{Provider: "x", SecretKey: "k", DefaultParams: json.RawMessage(`[1]`)},
			{Provider: "x", SecretKey: "k", MaxConcurrency: -1},
			{Provider: "x", SecretKey: "k", Timeout: time.Millisecond},
			{Provider: "x", SecretKey: "k", ExtraHeaders: map[string]string{"bad header": "v"}},
			{Provider: " ", SecretKey: "k"},
		} {
			_, err := s.UpsertLLMConnection(ctx, box, pa.ID, bad)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", bad)
		}

		_, err = s.GetLLMConnection(ctx, pb.ID, cn.ID)
		assert.ErrorIs(t, err, ErrNotFound, "another project's connection")
		_, err = s.LLMCredentials(ctx, box, pb.ID, cn.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		list, total, err := s.ListLLMConnections(ctx, pa.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, cn.ID, list[0].ID)
		_, total, err = s.ListLLMConnections(ctx, pb.ID, 0, 10)
		require.NoError(t, err)
		assert.Zero(t, total)

		assert.ErrorIs(t, s.DeleteLLMConnection(ctx, pb.ID, cn.ID), ErrNotFound)
		require.NoError(t, s.DeleteLLMConnection(ctx, pa.ID, cn.ID))
		_, err = s.GetLLMConnection(ctx, pa.ID, cn.ID)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

// evalFixture is a project with a connection, an llm and a cel evaluator.
type evalFixture struct {
	project, other Project
	connection     LLMConnection
	judge, code    Evaluator
}

func newEvalFixture(t *testing.T, s *Store) evalFixture {
	t.Helper()
	ctx := context.Background()
	f := evalFixture{}
	f.project, f.other = twoOrgs(t, s)
	var err error
	f.connection, err = s.UpsertLLMConnection(ctx, testBox(t), f.project.ID, LLMConnectionUpsert{Provider: "judge", SecretKey: "sk-test-123456"})
	require.NoError(t, err)
	f.judge, err = s.CreateEvaluator(ctx, f.project.ID, NewEvaluator{Name: "helpfulness", Kind: EvaluatorLLM, ScoreName: "helpful",
		Output:    ScoreOutput{DataType: ScoreNumeric, Min: ptr(0.0), Max: ptr(1.0)},
		Prompt:    "Rate {{output}} for {{input}} against {{answer}}",
		Variables: []VariableMapping{{Name: "answer", Source: SourceDatasetItem, Field: FieldExpectedOutput}}})
	require.NoError(t, err)
	f.code, err = s.CreateEvaluator(ctx, f.project.ID, NewEvaluator{Name: "length", Kind: EvaluatorCEL, ScoreName: "short",
		Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "size(output) < 100"})
	require.NoError(t, err)
	return f
}

func TestEvaluators(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		f := newEvalFixture(t, s)
		assert.Equal(t, DefaultCELTimeout, f.code.Timeout)
		assert.Zero(t, f.judge.Timeout, "llm evaluators take the connection's timeout")
		assert.Equal(t, []string{"output", "input", "answer"}, f.judge.NeededVariables())

		hook, err := s.CreateEvaluator(ctx, f.project.ID, NewEvaluator{Name: "hook", Kind: EvaluatorWebhook, ScoreName: "tone",
			Output: ScoreOutput{DataType: ScoreCategorical, Categories: []string{"good", "bad"}}, URL: "https://example.com/score"})
		require.NoError(t, err)
		assert.Equal(t, DefaultWebhookTimeout, hook.Timeout)

		tests := map[string]NewEvaluator{
			"kind":           {Name: "x", Kind: "python", ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}},
			"no prompt":      {Name: "x", Kind: EvaluatorLLM, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}},
			"unmapped":       {Name: "x", Kind: EvaluatorLLM, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}, Prompt: "{{nope}}"},
			"no expression":  {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}},
			"bad url":        {Name: "x", Kind: EvaluatorWebhook, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}, URL: "file:///x"},
			"no score name":  {Name: "x", Kind: EvaluatorCEL, Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true"},
			"range reversed": {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreNumeric, Min: ptr(2.0), Max: ptr(1.0)}, Expression: "1"},
			"no categories":  {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreCategorical}, Expression: "'a'"},
			"dup category":   {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreCategorical, Categories: []string{"a", "a"}}, Expression: "'a'"},
			"boolean range":  {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean, Max: ptr(1.0)}, Expression: "true"},
			"bad variable": {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true",
				Variables: []VariableMapping{{Name: "1x", Field: FieldInput}}},
			"bad field": {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true",
				Variables: []VariableMapping{{Name: "x", Source: SourceDatasetItem, Field: FieldOutput}}},
			"timeout": {Name: "x", Kind: EvaluatorCEL, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true", Timeout: time.Hour},
		}
		for name, n := range tests {
			_, err := s.CreateEvaluator(ctx, f.project.ID, n)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
		_, err = s.CreateEvaluator(ctx, f.project.ID, NewEvaluator{Name: "length", Kind: EvaluatorCEL, ScoreName: "s",
			Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true"})
		assert.ErrorIs(t, err, ErrConflict, "names are unique in a project")

		updated, err := s.UpdateEvaluator(ctx, f.project.ID, f.code.ID, EvaluatorUpdate{Expression: ptr("size(output) < 10"),
			Timeout: 2 * time.Second})
		require.NoError(t, err)
		assert.Equal(t, "size(output) < 10", updated.Expression)
		assert.Equal(t, 2*time.Second, updated.Timeout)
		assert.Equal(t, EvaluatorCEL, updated.Kind)
		_, err = s.UpdateEvaluator(ctx, f.project.ID, f.code.ID, EvaluatorUpdate{Expression: ptr(" ")})
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.UpdateEvaluator(ctx, f.other.ID, f.code.ID, EvaluatorUpdate{Expression: ptr("true")})
		assert.ErrorIs(t, err, ErrNotFound)

		list, total, err := s.ListEvaluators(ctx, f.project.ID, 0, 2)
		require.NoError(t, err)
		assert.Equal(t, 3, total)
		assert.Equal(t, []string{"helpfulness", "hook"}, []string{list[0].Name, list[1].Name})

		rule, err := s.CreateEvalRule(ctx, f.project.ID, NewEvalRule{Name: "r", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace})
		require.NoError(t, err)
		assert.ErrorIs(t, s.DeleteEvaluator(ctx, f.project.ID, f.code.ID), ErrConflict, "in use by a rule")
		require.NoError(t, s.DeleteEvalRule(ctx, f.project.ID, rule.ID))
		assert.ErrorIs(t, s.DeleteEvaluator(ctx, f.other.ID, f.code.ID), ErrNotFound)
		require.NoError(t, s.DeleteEvaluator(ctx, f.project.ID, f.code.ID))
	})
}

// An llm evaluator's provider names a connection of its own project; code
// evaluators have none.
func TestEvaluatorProvider(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		f := newEvalFixture(t, s)
		judge := NewEvaluator{Name: "with provider", Kind: EvaluatorLLM, ScoreName: "s", Output: ScoreOutput{DataType: ScoreBoolean},
			Prompt: "{{output}}", Provider: " judge "}
		e, err := s.CreateEvaluator(ctx, f.project.ID, judge)
		require.NoError(t, err)
		assert.Equal(t, "judge", e.Provider)
		got, err := s.GetEvaluator(ctx, f.project.ID, e.ID)
		require.NoError(t, err)
		assert.Equal(t, "judge", got.Provider)
		cn, err := s.GetLLMConnectionByProvider(ctx, f.project.ID, got.Provider)
		require.NoError(t, err)
		assert.Equal(t, f.connection.ID, cn.ID)
		_, err = s.GetLLMConnectionByProvider(ctx, f.other.ID, "judge")
		assert.ErrorIs(t, err, ErrNotFound, "another project's connection")

		judge.Name, judge.Provider = "elsewhere", "judge-of-nobody"
		_, err = s.CreateEvaluator(ctx, f.other.ID, NewEvaluator{Name: "x", Kind: EvaluatorLLM, ScoreName: "s",
			Output: ScoreOutput{DataType: ScoreBoolean}, Prompt: "{{output}}", Provider: "judge"})
		assert.ErrorIs(t, err, ErrInvalid, "the connection is the other project's")
		_, err = s.CreateEvaluator(ctx, f.project.ID, judge)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.UpdateEvaluator(ctx, f.project.ID, e.ID, EvaluatorUpdate{Provider: ptr("judge-of-nobody")})
		assert.ErrorIs(t, err, ErrInvalid)
		cleared, err := s.UpdateEvaluator(ctx, f.project.ID, e.ID, EvaluatorUpdate{Provider: ptr("")})
		require.NoError(t, err)
		assert.Empty(t, cleared.Provider)

		code, err := s.CreateEvaluator(ctx, f.project.ID, NewEvaluator{Name: "cel", Kind: EvaluatorCEL, ScoreName: "s",
			Output: ScoreOutput{DataType: ScoreBoolean}, Expression: "true", Provider: "judge"})
		require.NoError(t, err)
		assert.Empty(t, code.Provider, "code evaluators call no model")
	})
}

func TestResolveVariables(t *testing.T) {
	vars, err := ResolveVariables([]string{"input", "ctx", "expected_output"},
		[]VariableMapping{{Name: "ctx", Source: SourceTrace, Field: FieldMetadata, Key: "a"}},
		[]VariableMapping{{Name: "ctx", Source: SourceObservation, ObservationName: "retrieve", Field: FieldOutput}})
	require.NoError(t, err)
	assert.Equal(t, []VariableMapping{
		{Name: "input", Field: FieldInput},
		{Name: "ctx", Source: SourceObservation, ObservationName: "retrieve", Field: FieldOutput},
		{Name: "expected_output", Source: SourceDatasetItem, Field: FieldExpectedOutput},
	}, vars, "later layers win; defaults fill the rest")
	_, err = ResolveVariables([]string{"unknown"})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, []string{"a", "b c"}, PromptVariables("{{a}} {{ b c }} {{a}}"))
}

func TestEvalRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		f := newEvalFixture(t, s)
		filter := evaljobs.Filter{{Field: evaljobs.FieldTags, Operator: evaljobs.OpAnyOf, Values: []string{"prod"}}}
		rule, err := s.CreateEvalRule(ctx, f.project.ID, NewEvalRule{Name: "judge prod", EvaluatorID: f.judge.ID,
			ConnectionID: f.connection.ID, Target: evaljobs.TargetTrace, Filter: filter, SamplingRate: ptr(0.25)})
		require.NoError(t, err)
		assert.True(t, rule.Active)
		assert.Equal(t, DefaultRuleDelay, rule.Delay)
		assert.Equal(t, 0.25, rule.SamplingRate)
		assert.Equal(t, filter, rule.Filter)

		tests := map[string]NewEvalRule{
			"llm without connection": {Name: "x", EvaluatorID: f.judge.ID, Target: evaljobs.TargetTrace},
			"code with connection":   {Name: "x", EvaluatorID: f.code.ID, ConnectionID: f.connection.ID, Target: evaljobs.TargetTrace},
			"target":                 {Name: "x", EvaluatorID: f.code.ID, Target: "session"},
			"filter": {Name: "x", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace,
				Filter: evaljobs.Filter{{Field: evaljobs.FieldModel, Operator: evaljobs.OpEquals, Value: "x"}}},
			"sampling": {Name: "x", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace, SamplingRate: ptr(1.5)},
			"delay":    {Name: "x", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace, Delay: ptr(-time.Second)},
			"override": {Name: "x", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace, Variables: []VariableMapping{{Name: "x", Field: "cost"}}},
		}
		for name, n := range tests {
			_, err := s.CreateEvalRule(ctx, f.project.ID, n)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
		_, err = s.CreateEvalRule(ctx, f.other.ID, NewEvalRule{Name: "x", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace})
		assert.ErrorIs(t, err, ErrNotFound, "another project's evaluator")
		otherConn, err := s.UpsertLLMConnection(ctx, testBox(t), f.other.ID, LLMConnectionUpsert{Provider: "o", SecretKey: "sk-other-123"})
		require.NoError(t, err)
		_, err = s.CreateEvalRule(ctx, f.project.ID, NewEvalRule{Name: "x", EvaluatorID: f.judge.ID, ConnectionID: otherConn.ID,
			Target: evaljobs.TargetTrace})
		assert.ErrorIs(t, err, ErrNotFound, "another project's connection")

		codeRule, err := s.CreateEvalRule(ctx, f.project.ID, NewEvalRule{Name: "short", EvaluatorID: f.code.ID,
			Target: evaljobs.TargetObservation, Delay: ptr(time.Duration(0)), Active: ptr(false)})
		require.NoError(t, err)
		active, err := s.ActiveEvalRules(ctx)
		require.NoError(t, err)
		require.Len(t, active, 1, "inactive rules are not served")
		assert.Equal(t, evaljobs.Rule{ID: rule.ID, ProjectID: f.project.ID, Target: evaljobs.TargetTrace, Filter: filter,
			SamplingRate: 0.25, Delay: DefaultRuleDelay}, active[0])

		codeRule, err = s.UpdateEvalRule(ctx, f.project.ID, codeRule.ID, EvalRuleUpdate{Active: ptr(true), SamplingRate: ptr(0.5)})
		require.NoError(t, err)
		assert.True(t, codeRule.Active)
		_, err = s.UpdateEvalRule(ctx, f.project.ID, codeRule.ID, EvalRuleUpdate{ConnectionID: ptr(f.connection.ID)})
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.UpdateEvalRule(ctx, f.other.ID, codeRule.ID, EvalRuleUpdate{Active: ptr(false)})
		assert.ErrorIs(t, err, ErrNotFound)
		active, err = s.ActiveEvalRules(ctx)
		require.NoError(t, err)
		assert.Len(t, active, 2)

		assert.ErrorIs(t, s.DeleteLLMConnection(ctx, f.project.ID, f.connection.ID), ErrConflict, "in use by a rule")
		require.NoError(t, s.DeleteProject(ctx, f.project.OrganizationID, f.project.ID))
		active, err = s.ActiveEvalRules(ctx)
		require.NoError(t, err)
		assert.Empty(t, active, "rules of deleted projects are not served")

		list, total, err := s.ListEvalRules(ctx, f.project.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		assert.Equal(t, "judge prod", list[0].Name)
		assert.ErrorIs(t, s.DeleteEvalRule(ctx, f.other.ID, rule.ID), ErrNotFound)
	})
}

func TestExperiments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		f := newEvalFixture(t, s)
		_, err := s.UpsertDataset(ctx, f.project.ID, DatasetUpsert{Name: "qa"})
		require.NoError(t, err)
		for i, status := range []string{ItemActive, ItemActive, ItemArchived} {
			_, err := s.UpsertDatasetItem(ctx, f.project.ID, DatasetItemUpsert{DatasetName: "qa", ID: fmt.Sprintf("item-%d", i),
				Input: json.RawMessage(`{"question":"q"}`), ExpectedOutput: json.RawMessage(`"a"`), Status: status})
			require.NoError(t, err)
		}
		_, err = s.CreatePrompt(ctx, f.project.ID, NewPrompt{Name: "answer", Prompt: json.RawMessage(`"Answer {{question}}"`),
			Labels: []string{LabelProduction}})
		require.NoError(t, err)

		x, err := s.CreateExperiment(ctx, f.project.ID, NewExperiment{DatasetName: "qa", RunName: "run-1", PromptName: "answer",
			ConnectionID: f.connection.ID, EvaluatorIDs: []string{f.judge.ID, f.code.ID}})
		require.NoError(t, err)
		assert.Equal(t, 1, x.PromptVersion, "the production version")
		assert.Equal(t, "qa", x.DatasetName)
		assert.JSONEq(t, `{}`, string(x.ModelParams))
		jobs, total, err := s.ListEvalJobs(ctx, f.project.ID, evalqueue.Filter{ExperimentID: x.ID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 2, total, "one job per active item")
		assert.Equal(t, evalqueue.KindExperimentItem, jobs[0].Kind)

		_, err = s.CreateExperiment(ctx, f.project.ID, NewExperiment{DatasetName: "qa", RunName: "run-1", PromptName: "answer",
			ConnectionID: f.connection.ID})
		assert.ErrorIs(t, err, ErrConflict)
		for name, n := range map[string]NewExperiment{
			"dataset":    {DatasetName: "nope", RunName: "r", PromptName: "answer", ConnectionID: f.connection.ID},
			"prompt":     {DatasetName: "qa", RunName: "r", PromptName: "nope", ConnectionID: f.connection.ID},
			"connection": {DatasetName: "qa", RunName: "r", PromptName: "answer", ConnectionID: "nope"},
			"evaluator":  {DatasetName: "qa", RunName: "r", PromptName: "answer", ConnectionID: f.connection.ID, EvaluatorIDs: []string{"nope"}},
		} {
			_, err := s.CreateExperiment(ctx, f.project.ID, n)
			assert.ErrorIs(t, err, ErrNotFound, name)
		}
		_, err = s.CreateExperiment(ctx, f.other.ID, NewExperiment{DatasetName: "qa", RunName: "r", PromptName: "answer",
			ConnectionID: f.connection.ID})
		assert.ErrorIs(t, err, ErrNotFound, "another project's dataset")

		// An item's run queues its evaluations with the outcome.
		claimed, err := s.ClaimEvalJobs(ctx, "w", 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		item := claimed[0]
		follow := []evalqueue.NewJob{
			{Kind: evalqueue.KindExperimentEval, ExperimentID: x.ID, EvaluatorID: f.judge.ID, TraceID: "trace-x", DatasetItemID: item.DatasetItemID, Due: time.Now()},
			{Kind: evalqueue.KindExperimentEval, ExperimentID: x.ID, EvaluatorID: f.code.ID, TraceID: "trace-x", DatasetItemID: item.DatasetItemID, Due: time.Now()},
		}
		require.NoError(t, s.FinishEvalJob(ctx, item, evalqueue.Outcome{Status: evalqueue.Succeeded, TraceID: "trace-x", FollowUps: follow}))
		got, err := s.GetEvalJob(ctx, f.project.ID, item.ID)
		require.NoError(t, err)
		assert.Equal(t, "trace-x", got.TraceID)
		counts, err := s.CountEvalJobs(ctx, f.project.ID, "", x.ID)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{evalqueue.Pending: 3, evalqueue.Succeeded: 1}, counts)

		_, err = s.CreateDatasetRunItem(ctx, f.project.ID, NewDatasetRunItem{RunName: "run-1", DatasetItemID: item.DatasetItemID, TraceID: "trace-x"})
		require.NoError(t, err)
		linked, err := s.DatasetItemOfTrace(ctx, f.project.ID, "trace-x")
		require.NoError(t, err)
		assert.Equal(t, item.DatasetItemID, linked.ID)
		_, err = s.DatasetItemOfTrace(ctx, f.other.ID, "trace-x")
		assert.ErrorIs(t, err, ErrNotFound)

		list, total, err := s.ListExperiments(ctx, f.project.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, x.ID, list[0].ID)
		_, err = s.GetExperiment(ctx, f.other.ID, x.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteEvaluator(ctx, f.project.ID, f.code.ID), ErrConflict, "in use by an experiment")
	})
}

func TestAnnotationQueues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		cfg, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "quality", DataType: ScoreBoolean})
		require.NoError(t, err)
		archived, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "old", DataType: ScoreBoolean})
		require.NoError(t, err)
		_, err = s.UpdateScoreConfig(ctx, pa.ID, archived.ID, ScoreConfigUpdate{IsArchived: ptr(true)})
		require.NoError(t, err)

		q, err := s.CreateAnnotationQueue(ctx, pa.ID, NewAnnotationQueue{Name: "review", Description: "d", ScoreConfigIDs: []string{cfg.ID}})
		require.NoError(t, err)
		assert.Equal(t, []string{cfg.ID}, q.ScoreConfigIDs)
		_, err = s.CreateAnnotationQueue(ctx, pa.ID, NewAnnotationQueue{Name: "x", ScoreConfigIDs: []string{archived.ID}})
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.CreateAnnotationQueue(ctx, pb.ID, NewAnnotationQueue{Name: "x", ScoreConfigIDs: []string{cfg.ID}})
		assert.ErrorIs(t, err, ErrNotFound, "another project's config")
		_, err = s.CreateAnnotationQueue(ctx, pa.ID, NewAnnotationQueue{Name: "review"})
		assert.ErrorIs(t, err, ErrConflict)

		item, created, err := s.AddAnnotationQueueItem(ctx, pa.ID, q.ID, "trace-1", ObjectTrace, "")
		require.NoError(t, err)
		assert.True(t, created)
		assert.Equal(t, ItemPending, item.Status)
		again, created, err := s.AddAnnotationQueueItem(ctx, pa.ID, q.ID, "trace-1", ObjectTrace, "")
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, item.ID, again.ID)
		done, _, err := s.AddAnnotationQueueItem(ctx, pa.ID, q.ID, "session-1", ObjectSession, ItemCompleted)
		require.NoError(t, err)
		assert.False(t, done.CompletedAt.IsZero())
		_, _, err = s.AddAnnotationQueueItem(ctx, pa.ID, q.ID, "x", "DATASET", "")
		assert.ErrorIs(t, err, ErrInvalid)
		_, _, err = s.AddAnnotationQueueItem(ctx, pb.ID, q.ID, "x", ObjectTrace, "")
		assert.ErrorIs(t, err, ErrNotFound)

		pending, total, err := s.ListAnnotationQueueItems(ctx, pa.ID, q.ID, ItemPending, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, item.ID, pending[0].ID)
		_, total, err = s.ListAnnotationQueueItems(ctx, pa.ID, q.ID, "", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 2, total)
		_, _, err = s.ListAnnotationQueueItems(ctx, pb.ID, q.ID, "", 0, 10)
		assert.ErrorIs(t, err, ErrNotFound)

		completed, err := s.SetAnnotationQueueItemStatus(ctx, pa.ID, q.ID, item.ID, ItemCompleted, "user-1")
		require.NoError(t, err)
		assert.Equal(t, ItemCompleted, completed.Status)
		assert.Equal(t, "user-1", completed.CompletedBy)
		assert.False(t, completed.CompletedAt.IsZero())
		progress, err := s.AnnotationQueueProgress(ctx, pa.ID, q.ID)
		require.NoError(t, err)
		assert.Equal(t, QueueProgress{Pending: 0, Completed: 2, CompletedBy: map[string]int{"user-1": 1, "": 1}}, progress)
		progress, err = s.AnnotationQueueProgress(ctx, pb.ID, q.ID)
		require.NoError(t, err)
		assert.Zero(t, progress.Completed+progress.Pending, "another project sees none of the items")
		reopened, err := s.SetAnnotationQueueItemStatus(ctx, pa.ID, q.ID, item.ID, ItemPending, "")
		require.NoError(t, err)
		assert.True(t, reopened.CompletedAt.IsZero())
		_, err = s.SetAnnotationQueueItemStatus(ctx, pb.ID, q.ID, item.ID, ItemCompleted, "")
		assert.ErrorIs(t, err, ErrNotFound)

		assert.ErrorIs(t, s.DeleteAnnotationQueueItem(ctx, pb.ID, q.ID, item.ID), ErrNotFound)
		require.NoError(t, s.DeleteAnnotationQueueItem(ctx, pa.ID, q.ID, item.ID))

		member, err := s.CreateUser(ctx, NewUser{Email: "m@example.com", Name: "M"})
		require.NoError(t, err)
		require.NoError(t, s.SetMembership(ctx, pa.OrganizationID, member.ID, RoleMember))
		outsider, err := s.CreateUser(ctx, NewUser{Email: "o@example.com", Name: "O"})
		require.NoError(t, err)
		require.NoError(t, s.AssignAnnotationQueue(ctx, pa.ID, q.ID, member.ID))
		require.NoError(t, s.AssignAnnotationQueue(ctx, pa.ID, q.ID, member.ID), "assigning twice is fine")
		assert.ErrorIs(t, s.AssignAnnotationQueue(ctx, pa.ID, q.ID, outsider.ID), ErrNotFound)
		assert.ErrorIs(t, s.AssignAnnotationQueue(ctx, pb.ID, q.ID, member.ID), ErrNotFound)
		assignees, err := s.AnnotationQueueAssignees(ctx, pa.ID, q.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{member.ID}, assignees)
		assert.ErrorIs(t, s.UnassignAnnotationQueue(ctx, pb.ID, q.ID, member.ID), ErrNotFound)
		require.NoError(t, s.UnassignAnnotationQueue(ctx, pa.ID, q.ID, member.ID))

		queues, total, err := s.ListAnnotationQueues(ctx, pa.ID, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, 1, total)
		assert.Equal(t, q.ID, queues[0].ID)
		_, err = s.GetAnnotationQueue(ctx, pb.ID, q.ID)
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
