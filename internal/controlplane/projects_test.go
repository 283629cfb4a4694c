package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoOrgs creates organizations "a" and "b" with one project each.
func twoOrgs(t *testing.T, s *Store) (a, b Project) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		_, err := s.CreateOrganization(ctx, id, "Org "+id)
		require.NoError(t, err)
	}
	a, err := s.CreateProject(ctx, "a", NewProject{ID: "pa", Name: "project"})
	require.NoError(t, err)
	b, err = s.CreateProject(ctx, "b", NewProject{ID: "pb", Name: "project"})
	require.NoError(t, err, "names are unique per organization only")
	return a, b
}

func TestOrganizations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		org, err := s.CreateOrganization(ctx, "", "  Acme  ")
		require.NoError(t, err)
		assert.True(t, validID(org.ID), "generated id %q", org.ID)
		assert.Equal(t, "Acme", org.Name)

		got, err := s.GetOrganization(ctx, org.ID)
		require.NoError(t, err)
		assert.Equal(t, org, got)

		_, err = s.CreateOrganization(ctx, org.ID, "again")
		assert.ErrorIs(t, err, ErrConflict)
		_, err = s.CreateOrganization(ctx, "x", " ")
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.CreateOrganization(ctx, "bad id", "x")
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.GetOrganization(ctx, "missing")
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestProjectCRUD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "a", "Org A")
		require.NoError(t, err)

		p, err := s.CreateProject(ctx, "a", NewProject{Name: "web", Metadata: json.RawMessage(` {"team": "x", "n": 1} `), RetentionDays: 30})
		require.NoError(t, err)
		assert.Equal(t, "a", p.OrganizationID)
		assert.Equal(t, "Org A", p.OrganizationName)
		assert.JSONEq(t, `{"team":"x","n":1}`, string(p.Metadata))
		assert.Equal(t, `{"team":"x","n":1}`, string(p.Metadata), "stored compact")
		assert.Equal(t, 30, p.RetentionDays)
		assert.False(t, p.CreatedAt.IsZero())

		plain, err := s.CreateProject(ctx, "a", NewProject{ID: "api", Name: "api"})
		require.NoError(t, err)
		assert.Equal(t, `{}`, string(plain.Metadata))

		list, err := s.ListProjects(ctx, "a")
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, p, list[0])

		name, retention := "web2", 0
		up, err := s.UpdateProject(ctx, "a", p.ID, ProjectUpdate{Name: &name, RetentionDays: &retention})
		require.NoError(t, err)
		assert.Equal(t, "web2", up.Name)
		assert.Equal(t, 0, up.RetentionDays)
		assert.Equal(t, p.Metadata, up.Metadata, "unset fields are kept")
		up, err = s.UpdateProject(ctx, "a", p.ID, ProjectUpdate{Metadata: json.RawMessage(`{"k":"v"}`)})
		require.NoError(t, err)
		assert.Equal(t, `{"k":"v"}`, string(up.Metadata))
		assert.Equal(t, "web2", up.Name)

		taken := "api"
		_, err = s.UpdateProject(ctx, "a", p.ID, ProjectUpdate{Name: &taken})
		assert.ErrorIs(t, err, ErrConflict)
		_, err = s.CreateProject(ctx, "a", NewProject{Name: "api"})
		assert.ErrorIs(t, err, ErrConflict)

		for _, bad := range []NewProject{
			{Name: ""},
			{Name: "m", Metadata: json.RawMessage(`[1]`)},
			{Name: "m", Metadata: json.RawMessage(`{`)},
			{Name: "r", RetentionDays: -1},
			{ID: "a b", Name: "id"},
			{ID: ".", Name: "dot"},
			{ID: "..", Name: "parent"}, // media of such a project landed beside the database
		} {
			_, err = s.CreateProject(ctx, "a", bad)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", bad)
		}
		_, err = s.CreateProject(ctx, "missing-org", NewProject{Name: "x"})
		assert.ErrorIs(t, err, ErrNotFound)

		require.NoError(t, s.DeleteProject(ctx, "a", "api"))
		_, err = s.GetProject(ctx, "a", "api")
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteProject(ctx, "a", "api"), ErrNotFound)
		_, err = s.UpdateProject(ctx, "a", "api", ProjectUpdate{Name: &name})
		assert.ErrorIs(t, err, ErrNotFound)
		list, err = s.ListProjects(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, list, 1)

		_, err = s.CreateProject(ctx, "a", NewProject{Name: "api"})
		assert.NoError(t, err, "a deleted project's name is free again")
		_, err = s.CreateProject(ctx, "a", NewProject{ID: "api", Name: "other"})
		assert.ErrorIs(t, err, ErrConflict, "a deleted project's id is never reused")
	})
}

func TestProjectIsolation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)

		_, err := s.GetProject(ctx, "b", pa.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		name := "stolen"
		_, err = s.UpdateProject(ctx, "b", pa.ID, ProjectUpdate{Name: &name})
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeleteProject(ctx, "b", pa.ID), ErrNotFound)

		list, err := s.ListProjects(ctx, "b")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, pb.ID, list[0].ID)

		got, err := s.GetProject(ctx, "a", pa.ID)
		require.NoError(t, err)
		assert.Equal(t, pa, got, "project a is untouched")
	})
}
