package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

func TestOrganizationMetadataAndUpdate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		org, err := s.AddOrganization(ctx, NewOrganization{Name: "Acme", Metadata: json.RawMessage(` {"tier": "gold"} `)})
		require.NoError(t, err)
		assert.JSONEq(t, `{"tier":"gold"}`, string(org.Metadata))
		_, err = s.AddOrganization(ctx, NewOrganization{Name: "x", Metadata: json.RawMessage(`[1]`)})
		assert.ErrorIs(t, err, ErrInvalid, "metadata is an object")

		name := "Acme Corp"
		got, err := s.UpdateOrganization(ctx, org.ID, OrganizationUpdate{Name: &name})
		require.NoError(t, err)
		assert.Equal(t, "Acme Corp", got.Name)
		assert.JSONEq(t, `{"tier":"gold"}`, string(got.Metadata), "omitted metadata is kept")
		got, err = s.UpdateOrganization(ctx, org.ID, OrganizationUpdate{Metadata: json.RawMessage(`{"tier":"free"}`)})
		require.NoError(t, err)
		assert.Equal(t, "Acme Corp", got.Name)
		assert.JSONEq(t, `{"tier":"free"}`, string(got.Metadata))
		blank := " "
		_, err = s.UpdateOrganization(ctx, org.ID, OrganizationUpdate{Name: &blank})
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.UpdateOrganization(ctx, "missing", OrganizationUpdate{Name: &name})
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

// Deleting an organization needs its projects gone first; then every key
// of it stops verifying, its members lose it, and nothing new is made in it.
func TestDeleteOrganization(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := twoOrgs(t, s)
		_, projectSecret, err := s.CreateAPIKey(ctx, "a", a.ID, NewAPIKey{})
		require.NoError(t, err)
		projectKeys, err := s.ListAPIKeys(ctx, "a", a.ID)
		require.NoError(t, err)
		orgKey, orgSecret, err := s.CreateAPIKey(ctx, "a", "", NewAPIKey{})
		require.NoError(t, err)
		_, bSecret, err := s.CreateAPIKey(ctx, "b", b.ID, NewAPIKey{})
		require.NoError(t, err)
		bKeys, err := s.ListAPIKeys(ctx, "b", b.ID)
		require.NoError(t, err)
		u, err := s.CreateUser(ctx, NewUser{Email: "owner@example.com", Name: "Owner"})
		require.NoError(t, err)
		require.NoError(t, s.SetMembership(ctx, "a", u.ID, RoleOwner))

		err = s.DeleteOrganization(ctx, "a")
		require.ErrorIs(t, err, ErrOrganizationHasProjects)
		_, err = s.GetOrganization(ctx, "a")
		require.NoError(t, err, "a refused deletion changes nothing")
		_, err = s.Verify(ctx, orgKey.PublicKey, orgSecret)
		require.NoError(t, err)

		require.NoError(t, s.DeleteProject(ctx, "a", a.ID))
		require.NoError(t, s.DeleteOrganization(ctx, "a"))

		_, err = s.GetOrganization(ctx, "a")
		assert.ErrorIs(t, err, ErrNotFound)
		orgs, err := s.ListOrganizations(ctx)
		require.NoError(t, err)
		require.Len(t, orgs, 1)
		assert.Equal(t, "b", orgs[0].ID)
		_, err = s.Verify(ctx, orgKey.PublicKey, orgSecret)
		assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)
		_, err = s.Verify(ctx, projectKeys[0].PublicKey, projectSecret)
		assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)
		ms, err := s.ListUserMemberships(ctx, u.ID)
		require.NoError(t, err)
		assert.Empty(t, ms)

		_, err = s.CreateProject(ctx, "a", NewProject{Name: "again"})
		assert.ErrorIs(t, err, ErrNotFound)
		_, _, err = s.CreateAPIKey(ctx, "a", "", NewAPIKey{})
		assert.ErrorIs(t, err, ErrNotFound)
		name := "back"
		_, err = s.UpdateOrganization(ctx, "a", OrganizationUpdate{Name: &name})
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteOrganization(ctx, "a"), ErrNotFound)
		_, err = s.CreateOrganization(ctx, "a", "reused")
		assert.ErrorIs(t, err, ErrConflict, "the id of a deleted organization is not reused")

		_, err = s.Verify(ctx, bKeys[0].PublicKey, bSecret)
		assert.NoError(t, err, "other organizations keep their keys")
	})
}
