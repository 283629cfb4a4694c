package controlplane

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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

// A project's retention is its own, else its organization's, else the
// instance default; a change wakes this process's readers.
func TestProjectRetentions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		got, err := s.ProjectRetentions(ctx, 0)
		require.NoError(t, err)
		assert.Empty(t, got, "nothing set anywhere keeps everything")
		got, err = s.ProjectRetentions(ctx, 90)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{pa.ID: 90, pb.ID: 90}, got, "the instance default")

		changed := s.Changed(ChangeRetention)
		thirty := 30
		_, err = s.UpdateOrganization(ctx, "a", OrganizationUpdate{RetentionDays: &thirty})
		require.NoError(t, err)
		select {
		case <-changed:
		default:
			t.Fatal("an organization's retention change wakes the readers")
		}
		changed = s.Changed(ChangeRetention)
		seven := 7
		_, err = s.UpdateProject(ctx, "b", pb.ID, ProjectUpdate{RetentionDays: &seven})
		require.NoError(t, err)
		select {
		case <-changed:
		default:
			t.Fatal("a project's retention change wakes the readers")
		}
		got, err = s.ProjectRetentions(ctx, 90)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{pa.ID: 30, pb.ID: 7}, got, "the organization's, then the project's own")
		negative := -1
		_, err = s.UpdateOrganization(ctx, "a", OrganizationUpdate{RetentionDays: &negative})
		assert.ErrorIs(t, err, ErrInvalid)
	})
}

// Headless init sets the retention of the project it creates.
func TestInitProjectRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		env := map[string]string{EnvInitOrgID: "org-r", EnvInitProjectID: "proj-r", EnvInitProjectRetentionDays: "14"}
		require.NoError(t, s.InitFromEnv(ctx, func(k string) string { return env[k] }))
		p, err := s.GetProject(ctx, "org-r", "proj-r")
		require.NoError(t, err)
		assert.Equal(t, 14, p.RetentionDays)
		for _, bad := range []string{"2", "-1", "two weeks"} {
			env[EnvInitProjectRetentionDays] = bad
			err := s.InitFromEnv(ctx, func(k string) string { return env[k] })
			assert.ErrorIs(t, err, ErrInvalid, bad)
		}
	})
}

// Media last used before the cutoff go; media sent again since stay.
func TestExpireMedia(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		for _, p := range []string{pa.ID, pb.ID} {
			for _, id := range []string{"old", "reused"} {
				_, err := s.PutMedia(ctx, p, NewMedia{ID: id, SHA256: "h-" + id, ContentType: "image/png", ContentLength: 1})
				require.NoError(t, err)
			}
		}
		time.Sleep(5 * time.Millisecond)
		cutoff := time.Now()
		time.Sleep(5 * time.Millisecond)
		_, err := s.PutMedia(ctx, pa.ID, NewMedia{ID: "reused", SHA256: "h-reused", ContentType: "image/png", ContentLength: 1})
		require.NoError(t, err)

		ids, err := s.ExpireMedia(ctx, pa.ID, cutoff)
		require.NoError(t, err)
		assert.Equal(t, []string{"old"}, ids)
		_, err = s.GetMedia(ctx, pa.ID, "old")
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.GetMedia(ctx, pa.ID, "reused")
		assert.NoError(t, err, "sent again after the cutoff")
		_, err = s.GetMedia(ctx, pb.ID, "old")
		assert.NoError(t, err, "another project's media stay")
	})
}
