package controlplane

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

func TestVerifyPublicKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		projectKey, _, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		require.NoError(t, err)
		orgKey, _, err := s.CreateAPIKey(ctx, "a", "", NewAPIKey{})
		require.NoError(t, err)

		p, err := s.VerifyPublicKey(ctx, projectKey.PublicKey)
		require.NoError(t, err)
		assert.Equal(t, apikey.Principal{PublicKey: projectKey.PublicKey, ProjectID: pa.ID, OrganizationID: "a",
			Scope: apikey.ScopeProject}, p)
		list, err := s.ListAPIKeys(ctx, "a", pa.ID)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.False(t, list[0].LastUsedAt.IsZero(), "use through the public key is recorded")

		p, err = s.VerifyPublicKey(ctx, orgKey.PublicKey)
		require.NoError(t, err)
		assert.Equal(t, apikey.ScopeOrganization, p.Scope, "the caller decides what an organization key may do")
		assert.Empty(t, p.ProjectID)

		for _, unknown := range []string{"", "pk-lf-unknown", projectKey.ID} {
			_, err = s.VerifyPublicKey(ctx, unknown)
			assert.Equal(t, apikey.ErrInvalidCredentials, err, unknown)
		}

		require.NoError(t, s.RevokeAPIKey(ctx, "a", pa.ID, projectKey.ID))
		_, err = s.VerifyPublicKey(ctx, projectKey.PublicKey)
		assert.Equal(t, apikey.ErrInvalidCredentials, err, "revoked keys are refused")
	})
}
