package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/pricing"
)

func testModel(name string, start time.Time) pricing.Model {
	return pricing.Model{
		Name: name, MatchPattern: "(?i)^" + name + "$", StartDate: start,
		TokenizerID: pricing.TokenizerOpenAI, TokenizerConfig: &pricing.TokenizerConfig{TokenizerModel: "gpt-4o", TokensPerMessage: 3},
		Tiers: []pricing.Tier{
			{Name: "Standard", IsDefault: true, Prices: map[string]float64{"input": 1e-6, "output": 2e-6}},
			{Name: "Long", Priority: 1, Prices: map[string]float64{"input": 2e-6},
				Conditions: []pricing.Condition{{UsageDetailPattern: "input", Operator: pricing.OpGT, Value: 1000}}},
		},
	}
}

func TestModelCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := twoOrgs(t, s)
		start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

		m, err := s.CreateModel(ctx, a.ID, testModel("acme-llm", start))
		require.NoError(t, err)
		assert.NotEmpty(t, m.ID)
		assert.Equal(t, a.ID, m.ProjectID)
		assert.Equal(t, "TOKENS", m.Unit, "default unit")
		assert.True(t, start.Equal(m.StartDate))
		assert.Equal(t, &pricing.TokenizerConfig{TokenizerModel: "gpt-4o", TokensPerMessage: 3}, m.TokenizerConfig)
		require.Len(t, m.Tiers, 2)
		assert.NotEmpty(t, m.Tiers[0].ID, "tier ids are generated")
		assert.Equal(t, []pricing.Condition{}, m.Tiers[0].Conditions)
		assert.Equal(t, 2e-6, m.Tiers[1].Prices["input"])
		assert.Equal(t, 1000.0, m.Tiers[1].Conditions[0].Value)
		assert.False(t, m.CreatedAt.IsZero())

		got, err := s.GetModel(ctx, a.ID, m.ID)
		require.NoError(t, err)
		assert.Equal(t, m, got)
		_, err = s.GetModel(ctx, b.ID, m.ID)
		assert.ErrorIs(t, err, ErrNotFound, "other projects do not see it")

		_, err = s.CreateModel(ctx, a.ID, testModel("acme-llm", start))
		assert.ErrorIs(t, err, ErrConflict, "same name and start date")
		later, err := s.CreateModel(ctx, a.ID, testModel("acme-llm", start.AddDate(0, 3, 0)))
		require.NoError(t, err, "a price change is a later start date")
		always := testModel("acme-llm", time.Time{})
		always.ID = "acme-always"
		first, err := s.CreateModel(ctx, a.ID, always)
		require.NoError(t, err)
		assert.True(t, first.StartDate.IsZero(), "no start date stays none")
		assert.Equal(t, "acme-always", first.ID)

		list, err := s.ListModels(ctx, a.ID)
		require.NoError(t, err)
		require.Len(t, list, 3)
		assert.Equal(t, []string{later.ID, m.ID, first.ID}, []string{list[0].ID, list[1].ID, list[2].ID}, "latest start first")

		require.NoError(t, s.DeleteModel(ctx, a.ID, later.ID))
		assert.ErrorIs(t, s.DeleteModel(ctx, a.ID, later.ID), ErrNotFound)
		assert.ErrorIs(t, s.DeleteModel(ctx, b.ID, m.ID), ErrNotFound)
		list, err = s.ListModels(ctx, a.ID)
		require.NoError(t, err)
		assert.Len(t, list, 2)
	})
}

func TestCreateModelValidates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, _ := twoOrgs(t, s)
		bad := testModel("x", time.Time{})
		bad.MatchPattern = "("
		_, err := s.CreateModel(ctx, a.ID, bad)
		assert.ErrorIs(t, err, ErrInvalid)
		assert.ErrorIs(t, err, pricing.ErrInvalidModel)
		noTiers := testModel("y", time.Time{})
		noTiers.Tiers = nil
		_, err = s.CreateModel(ctx, a.ID, noTiers)
		assert.ErrorIs(t, err, ErrInvalid)
		badID := testModel("z", time.Time{})
		badID.ID = "a b"
		_, err = s.CreateModel(ctx, a.ID, badID)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.CreateModel(ctx, "missing-project", testModel("w", time.Time{}))
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestProjectModelsServeThePricer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := twoOrgs(t, s)
		_, err := s.CreateModel(ctx, a.ID, testModel("gpt-4o", time.Time{}))
		require.NoError(t, err)
		_, err = s.CreateModel(ctx, b.ID, testModel("other", time.Time{}))
		require.NoError(t, err)

		all, err := s.ProjectModels(ctx)
		require.NoError(t, err)
		assert.Len(t, all, 2)
		require.Len(t, all[a.ID], 1)

		builtin, err := pricing.Builtin()
		require.NoError(t, err)
		p := pricing.NewPricer(builtin, 10)
		require.NoError(t, p.SetProjectModels(all))
		price, ok := p.Find(a.ID, "GPT-4O", time.Now())
		require.True(t, ok)
		assert.Equal(t, all[a.ID][0].ID, price.ID(), "the stored definition overrides the built-in one")

		require.NoError(t, s.DeleteProject(ctx, "b", b.ID))
		all, err = s.ProjectModels(ctx)
		require.NoError(t, err)
		assert.NotContains(t, all, b.ID, "deleted projects' models no longer apply")
	})
}
