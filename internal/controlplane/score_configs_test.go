package controlplane

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScoreConfigs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)

		num, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "accuracy", DataType: ScoreNumeric,
			MinValue: ptr(0.0), MaxValue: ptr(1.0), Description: "share correct"})
		require.NoError(t, err)
		assert.Equal(t, 0.0, *num.MinValue)
		assert.Equal(t, 1.0, *num.MaxValue)
		assert.Nil(t, num.Categories)
		assert.False(t, num.IsArchived)
		assert.Equal(t, "share correct", num.Description)

		open, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "latency", DataType: ScoreNumeric, MinValue: ptr(0.0)})
		require.NoError(t, err)
		assert.Nil(t, open.MaxValue, "a bound may be left open")

		cat, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "tone", DataType: ScoreCategorical,
			Categories: []ScoreCategory{{Value: 0, Label: "rude"}, {Value: 1, Label: "polite"}}})
		require.NoError(t, err)
		assert.Equal(t, []ScoreCategory{{Value: 0, Label: "rude"}, {Value: 1, Label: "polite"}}, cat.Categories)

		boolean, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "correct", DataType: ScoreBoolean})
		require.NoError(t, err)
		assert.Equal(t, BooleanCategories, boolean.Categories, "boolean categories are implied")

		got, err := s.GetScoreConfig(ctx, pa.ID, cat.ID)
		require.NoError(t, err)
		assert.Equal(t, cat, got)

		list, total, err := s.ListScoreConfigs(ctx, pa.ID, 1, 2)
		require.NoError(t, err)
		assert.Equal(t, 4, total)
		require.Len(t, list, 2)
		assert.Equal(t, open.ID, list[0].ID)

		archived, err := s.UpdateScoreConfig(ctx, pa.ID, num.ID, ScoreConfigUpdate{IsArchived: ptr(true), Name: ptr("acc")})
		require.NoError(t, err)
		assert.True(t, archived.IsArchived)
		assert.Equal(t, "acc", archived.Name)
		assert.Equal(t, 1.0, *archived.MaxValue, "unset fields are kept")
		widened, err := s.UpdateScoreConfig(ctx, pa.ID, num.ID, ScoreConfigUpdate{SetRange: true, MinValue: ptr(-1.0)})
		require.NoError(t, err)
		assert.Equal(t, -1.0, *widened.MinValue)
		assert.Nil(t, widened.MaxValue)
		_, err = s.UpdateScoreConfig(ctx, pa.ID, cat.ID, ScoreConfigUpdate{Categories: []ScoreCategory{}})
		assert.ErrorIs(t, err, ErrInvalid, "the updated config is validated")
		_, err = s.UpdateScoreConfig(ctx, pa.ID, "missing", ScoreConfigUpdate{Name: ptr("x")})
		assert.ErrorIs(t, err, ErrNotFound)

		// Project b neither reads nor changes a's configs.
		_, err = s.GetScoreConfig(ctx, pb.ID, cat.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.UpdateScoreConfig(ctx, pb.ID, cat.ID, ScoreConfigUpdate{IsArchived: ptr(true)})
		assert.ErrorIs(t, err, ErrNotFound)
		list, total, err = s.ListScoreConfigs(ctx, pb.ID, 0, 10)
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.Zero(t, total)
		got, err = s.GetScoreConfig(ctx, pa.ID, cat.ID)
		require.NoError(t, err)
		assert.False(t, got.IsArchived)
	})
}

func TestScoreConfigValidation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		two := []ScoreCategory{{Value: 0, Label: "a"}, {Value: 1, Label: "b"}}
		for name, n := range map[string]NewScoreConfig{
			"no name":             {DataType: ScoreNumeric},
			"unknown type":        {Name: "x", DataType: "TEXT"},
			"min above max":       {Name: "x", DataType: ScoreNumeric, MinValue: ptr(2.0), MaxValue: ptr(1.0)},
			"infinite bound":      {Name: "x", DataType: ScoreNumeric, MaxValue: ptr(math.Inf(1))},
			"numeric categories":  {Name: "x", DataType: ScoreNumeric, Categories: two},
			"no categories":       {Name: "x", DataType: ScoreCategorical},
			"categorical range":   {Name: "x", DataType: ScoreCategorical, Categories: two, MinValue: ptr(0.0)},
			"duplicate label":     {Name: "x", DataType: ScoreCategorical, Categories: []ScoreCategory{{0, "a"}, {1, "a"}}},
			"duplicate value":     {Name: "x", DataType: ScoreCategorical, Categories: []ScoreCategory{{0, "a"}, {0, "b"}}},
			"empty label":         {Name: "x", DataType: ScoreCategorical, Categories: []ScoreCategory{{0, ""}}},
			"boolean categories":  {Name: "x", DataType: ScoreBoolean, Categories: two},
			"boolean with bounds": {Name: "x", DataType: ScoreBoolean, MaxValue: ptr(1.0)},
		} {
			_, err := s.CreateScoreConfig(ctx, pa.ID, n)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
		_, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "b", DataType: ScoreBoolean, Categories: []ScoreCategory{
			{Value: 0, Label: "False"}, {Value: 1, Label: "True"}}})
		assert.NoError(t, err, "the implied boolean categories may be spelled out")
	})
}

func TestScoreConfigTimestamps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		clock := &fakeClock{now: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		cfg, err := s.CreateScoreConfig(ctx, pa.ID, NewScoreConfig{Name: "x", DataType: ScoreBoolean})
		require.NoError(t, err)
		clock.Advance(time.Hour)
		up, err := s.UpdateScoreConfig(ctx, pa.ID, cfg.ID, ScoreConfigUpdate{Description: ptr("d")})
		require.NoError(t, err)
		assert.Equal(t, cfg.CreatedAt, up.CreatedAt)
		assert.Equal(t, cfg.CreatedAt.Add(time.Hour), up.UpdatedAt)
	})
}
