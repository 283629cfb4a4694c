package controlplane

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/sampling"
)

func TestSamplingSettings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := twoOrgs(t, s)

		got, err := s.GetSampling(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, sampling.Rates{}, got, "nothing set: the collector decides")

		rate := 0.25
		got, err = s.SetSampling(ctx, a.ID, sampling.Rates{Rate: &rate, Environments: map[string]float64{" Production ": 0.1}})
		require.NoError(t, err)
		require.NotNil(t, got.Rate)
		assert.Equal(t, 0.25, *got.Rate)
		assert.Equal(t, map[string]float64{"production": 0.1}, got.Environments)

		got, err = s.SetSampling(ctx, a.ID, sampling.Rates{Environments: map[string]float64{"dev": 0}})
		require.NoError(t, err, "replaced, not merged")
		assert.Nil(t, got.Rate)
		assert.Equal(t, map[string]float64{"dev": 0}, got.Environments)

		one := 1.0
		_, err = s.SetSampling(ctx, b.ID, sampling.Rates{Rate: &one})
		require.NoError(t, err)
		all, err := s.ProjectSampling(ctx)
		require.NoError(t, err)
		assert.Len(t, all, 2)
		assert.Equal(t, map[string]float64{"dev": 0}, all[a.ID].Environments)
		assert.Equal(t, 1.0, *all[b.ID].Rate)

		require.NoError(t, s.DeleteProject(ctx, "b", b.ID))
		all, err = s.ProjectSampling(ctx)
		require.NoError(t, err)
		assert.NotContains(t, all, b.ID)
	})
}

func TestSamplingSettingsValidate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, _ := twoOrgs(t, s)
		over := 1.5
		for _, r := range []sampling.Rates{
			{Rate: &over},
			{Environments: map[string]float64{"prod": -0.1}},
			{Environments: map[string]float64{" ": 0.5}},
		} {
			_, err := s.SetSampling(ctx, a.ID, r)
			assert.ErrorIs(t, err, ErrInvalid)
		}
		_, err := s.SetSampling(ctx, "missing-project", sampling.Rates{})
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
