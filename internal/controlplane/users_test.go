package controlplane

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUsersAndPasswords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		u, err := s.CreateUser(ctx, NewUser{Email: " Ada@Example.COM ", Name: " Ada ", Password: "analytical engine"})
		require.NoError(t, err)
		assert.Equal(t, "ada@example.com", u.Email)
		assert.Equal(t, "Ada", u.Name)

		got, err := s.GetUser(ctx, u.ID)
		require.NoError(t, err)
		assert.Equal(t, u, got)
		got, err = s.GetUserByEmail(ctx, "ADA@example.com")
		require.NoError(t, err)
		assert.Equal(t, u, got)

		_, err = s.CreateUser(ctx, NewUser{Email: "ada@EXAMPLE.com"})
		assert.ErrorIs(t, err, ErrConflict)

		got, err = s.CheckPassword(ctx, "Ada@example.com", "analytical engine")
		require.NoError(t, err)
		assert.Equal(t, u.ID, got.ID)
		for _, attempt := range [][2]string{
			{"ada@example.com", "analytical enginE"},
			{"ada@example.com", ""},
			{"nobody@example.com", "analytical engine"},
		} {
			_, err = s.CheckPassword(ctx, attempt[0], attempt[1])
			assert.Equal(t, ErrInvalidLogin, err, "%q", attempt)
		}

		sso, err := s.CreateUser(ctx, NewUser{Email: "sso@example.com"})
		require.NoError(t, err)
		_, err = s.CheckPassword(ctx, sso.Email, "")
		assert.Equal(t, ErrInvalidLogin, err, "a user without password cannot sign in by password")

		require.NoError(t, s.SetPassword(ctx, sso.ID, "now with password"))
		_, err = s.CheckPassword(ctx, sso.Email, "now with password")
		assert.NoError(t, err)
		assert.ErrorIs(t, s.SetPassword(ctx, "missing", "long enough pw"), ErrNotFound)
		assert.ErrorIs(t, s.SetPassword(ctx, sso.ID, "short"), ErrInvalid)

		for _, bad := range []NewUser{
			{Email: "not-an-email"},
			{Email: "Ada <x@example.com>"},
			{Email: "x@example.com", Password: "short"},
			{Email: "x@example.com", ID: "a/b"},
		} {
			_, err = s.CreateUser(ctx, bad)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", bad)
		}
		_, err = s.GetUser(ctx, "missing")
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestMemberships(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		ada, err := s.CreateUser(ctx, NewUser{Email: "ada@example.com", Name: "Ada"})
		require.NoError(t, err)
		bob, err := s.CreateUser(ctx, NewUser{Email: "bob@example.com"})
		require.NoError(t, err)

		require.NoError(t, s.SetMembership(ctx, "a", ada.ID, RoleOwner))
		require.NoError(t, s.SetMembership(ctx, "a", bob.ID, RoleMember))
		require.NoError(t, s.SetMembership(ctx, "b", bob.ID, RoleViewer))
		require.NoError(t, s.SetMembership(ctx, "a", bob.ID, RoleAdmin), "changing a role")
		assert.ErrorIs(t, s.SetMembership(ctx, "a", ada.ID, Role("ROOT")), ErrInvalid)
		assert.ErrorIs(t, s.SetMembership(ctx, "missing", ada.ID, RoleViewer), ErrNotFound)
		assert.ErrorIs(t, s.SetMembership(ctx, "a", "missing", RoleViewer), ErrNotFound)

		require.NoError(t, s.SetProjectRole(ctx, "a", pa.ID, bob.ID, RoleViewer))
		assert.ErrorIs(t, s.SetProjectRole(ctx, "b", pa.ID, bob.ID, RoleViewer), ErrNotFound, "project of another organization")
		assert.ErrorIs(t, s.SetProjectRole(ctx, "b", pb.ID, ada.ID, RoleViewer), ErrNotFound, "not a member of b")
		assert.ErrorIs(t, s.SetProjectRole(ctx, "a", pa.ID, bob.ID, Role("")), ErrInvalid)

		members, err := s.ListMembers(ctx, "a")
		require.NoError(t, err)
		require.Len(t, members, 2)
		assert.Equal(t, "ada@example.com", members[0].Email)
		assert.Equal(t, "Ada", members[0].UserName)
		assert.Equal(t, RoleOwner, members[0].Role)
		assert.Nil(t, members[0].ProjectRoles)
		assert.Equal(t, RoleAdmin, members[1].Role)
		assert.Equal(t, map[string]Role{pa.ID: RoleViewer}, members[1].ProjectRoles)
		assert.Equal(t, RoleViewer, members[1].RoleIn(pa.ID))
		assert.Equal(t, RoleAdmin, members[1].RoleIn("other"))

		inB, err := s.ListMembers(ctx, "b")
		require.NoError(t, err)
		require.Len(t, inB, 1)
		assert.Equal(t, bob.ID, inB[0].UserID)
		assert.Nil(t, inB[0].ProjectRoles, "project roles in a do not show in b")

		_, err = s.GetMembership(ctx, "b", ada.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		m, err := s.GetMembership(ctx, "a", bob.ID)
		require.NoError(t, err)
		assert.Equal(t, "Org a", m.OrganizationName)
		assert.Equal(t, RoleViewer, m.RoleIn(pa.ID))

		mine, err := s.ListUserMemberships(ctx, bob.ID)
		require.NoError(t, err)
		require.Len(t, mine, 2)
		assert.Equal(t, []string{"a", "b"}, []string{mine[0].OrganizationID, mine[1].OrganizationID})
		assert.Equal(t, RoleViewer, mine[1].Role)

		assert.ErrorIs(t, s.RemoveProjectRole(ctx, "b", pa.ID, bob.ID), ErrNotFound)
		require.NoError(t, s.RemoveProjectRole(ctx, "a", pa.ID, bob.ID))
		m, err = s.GetMembership(ctx, "a", bob.ID)
		require.NoError(t, err)
		assert.Equal(t, RoleAdmin, m.RoleIn(pa.ID))

		require.NoError(t, s.SetProjectRole(ctx, "a", pa.ID, bob.ID, RoleMember))
		require.NoError(t, s.DeleteProject(ctx, "a", pa.ID))
		m, err = s.GetMembership(ctx, "a", bob.ID)
		require.NoError(t, err)
		assert.Nil(t, m.ProjectRoles, "roles in deleted projects are not listed")

		assert.ErrorIs(t, s.RemoveMembership(ctx, "b", ada.ID), ErrNotFound)
		require.NoError(t, s.RemoveMembership(ctx, "a", bob.ID))
		_, err = s.GetMembership(ctx, "a", bob.ID)
		assert.ErrorIs(t, err, ErrNotFound)
		var roles int
		require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM project_memberships`).Scan(&roles))
		assert.Zero(t, roles, "removing a member removes their project roles")
		_, err = s.GetMembership(ctx, "b", bob.ID)
		assert.NoError(t, err, "membership in b is untouched")
	})
}
