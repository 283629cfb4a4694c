package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

func TestBcryptPasswordsUpgradeAtSignIn(t *testing.T) {
	s := openStore(t, "sqlite://"+t.TempDir()+"/cp.db")
	ctx := context.Background()
	u, err := s.CreateUser(ctx, NewUser{Email: "old@example.com"})
	require.NoError(t, err)
	legacy, err := bcrypt.GenerateFromPassword([]byte("from before argon"), bcrypt.MinCost)
	require.NoError(t, err)
	require.NoError(t, s.storePasswordHash(ctx, u.ID, string(legacy)))

	_, err = s.CheckPassword(ctx, "old@example.com", "wrong password")
	assert.Equal(t, ErrInvalidLogin, err)
	_, err = s.CheckPassword(ctx, "old@example.com", "from before argon")
	require.NoError(t, err)
	_, hash, err := s.userWhere(ctx, `id = ?`, u.ID)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(hash.String, "$argon2id$"), "rehashed: %s", hash.String)
	_, err = s.CheckPassword(ctx, "old@example.com", "from before argon")
	assert.NoError(t, err)
}

func TestSessions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		u, err := s.CreateUser(ctx, NewUser{Email: "s@example.com", Password: "session pass"})
		require.NoError(t, err)

		token, sess, err := s.CreateSession(ctx, u.ID, time.Hour)
		require.NoError(t, err)
		assert.Len(t, token, 43)
		assert.Equal(t, clock.Now().Add(time.Hour), sess.ExpiresAt)
		got, _, err := s.SessionUser(ctx, token)
		require.NoError(t, err)
		assert.Equal(t, u.ID, got.ID)

		var stored string
		require.NoError(t, s.conn().queryRow(ctx, `SELECT token_hash FROM ui_sessions`).Scan(&stored))
		assert.NotContains(t, stored, token, "only the hash is stored")

		_, _, err = s.SessionUser(ctx, token+"x")
		assert.ErrorIs(t, err, ErrNotFound)

		clock.Advance(time.Hour)
		_, _, err = s.SessionUser(ctx, token)
		assert.ErrorIs(t, err, ErrNotFound, "expired")

		second, _, err := s.CreateSession(ctx, u.ID, time.Hour)
		require.NoError(t, err)
		var n int
		require.NoError(t, s.conn().queryRow(ctx, `SELECT COUNT(*) FROM ui_sessions`).Scan(&n))
		assert.Equal(t, 1, n, "the expired session was removed")

		require.NoError(t, s.DeleteSession(ctx, second))
		_, _, err = s.SessionUser(ctx, second)
		assert.ErrorIs(t, err, ErrNotFound, "signed out")
		assert.NoError(t, s.DeleteSession(ctx, second), "twice is fine")

		third, _, err := s.CreateSession(ctx, u.ID, time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.SetPassword(ctx, u.ID, "a new password"))
		_, _, err = s.SessionUser(ctx, third)
		assert.ErrorIs(t, err, ErrNotFound, "a new password signs the user out everywhere")
	})
}

func TestInvitations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		owner, err := s.CreateUser(ctx, NewUser{Email: "owner@example.com", Password: "owner pass"})
		require.NoError(t, err)
		org, err := s.CreateOrganizationWithOwner(ctx, " Acme ", owner.ID)
		require.NoError(t, err)
		assert.Equal(t, "Acme", org.Name)
		m, err := s.GetMembership(ctx, org.ID, owner.ID)
		require.NoError(t, err)
		assert.Equal(t, RoleOwner, m.Role)

		invited, needsLink, err := s.InviteMember(ctx, org.ID, "New@Example.com", "", RoleMember)
		require.NoError(t, err)
		assert.True(t, needsLink)
		assert.False(t, invited.HasPassword)
		_, _, err = s.InviteMember(ctx, org.ID, "new@example.com", "", RoleAdmin)
		assert.ErrorIs(t, err, ErrConflict, "already a member")
		_, err = s.CreateUser(ctx, NewUser{Email: "known@example.com", Password: "known pass"})
		require.NoError(t, err)
		_, needsLink, err = s.InviteMember(ctx, org.ID, "known@example.com", "", RoleViewer)
		require.NoError(t, err)
		assert.False(t, needsLink, "an existing user with a password signs in as usual")

		link, err := s.CreateInviteLink(ctx, invited.ID, time.Hour)
		require.NoError(t, err)
		got, err := s.InviteLinkUser(ctx, link)
		require.NoError(t, err)
		assert.Equal(t, invited.ID, got.ID)
		_, err = s.UseInviteLink(ctx, link, "Newcomer", "short")
		assert.ErrorIs(t, err, ErrInvalid)
		got, err = s.UseInviteLink(ctx, link, "Newcomer", "chosen password")
		require.NoError(t, err)
		assert.Equal(t, "Newcomer", got.Name)
		assert.True(t, got.HasPassword)
		_, err = s.UseInviteLink(ctx, link, "Again", "chosen password 2")
		assert.ErrorIs(t, err, ErrNotFound, "a link works once")
		_, err = s.CheckPassword(ctx, "new@example.com", "chosen password")
		assert.NoError(t, err)

		late, err := s.CreateInviteLink(ctx, invited.ID, time.Hour)
		require.NoError(t, err)
		clock.Advance(2 * time.Hour)
		_, err = s.InviteLinkUser(ctx, late)
		assert.ErrorIs(t, err, ErrNotFound, "expired")
	})
}

func TestLastOwnerStays(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, err := s.CreateUser(ctx, NewUser{Email: "a@example.com"})
		require.NoError(t, err)
		b, err := s.CreateUser(ctx, NewUser{Email: "b@example.com"})
		require.NoError(t, err)
		org, err := s.CreateOrganizationWithOwner(ctx, "Org", a.ID)
		require.NoError(t, err)

		assert.ErrorIs(t, s.SetMembership(ctx, org.ID, a.ID, RoleAdmin), ErrLastOwner)
		assert.ErrorIs(t, s.RemoveMembership(ctx, org.ID, a.ID), ErrLastOwner)
		require.NoError(t, s.SetMembership(ctx, org.ID, b.ID, RoleOwner))
		require.NoError(t, s.SetMembership(ctx, org.ID, a.ID, RoleViewer), "another owner exists now")
		assert.ErrorIs(t, s.RemoveMembership(ctx, org.ID, b.ID), ErrLastOwner)
		require.NoError(t, s.SetMembership(ctx, org.ID, b.ID, RoleOwner), "re-setting the owner role is no demotion")
	})
}

func TestLookupProject(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		p, err := s.CreateProject(ctx, "org", NewProject{ID: "proj", Name: "P"})
		require.NoError(t, err)
		got, err := s.LookupProject(ctx, "proj")
		require.NoError(t, err)
		assert.Equal(t, p, got)
		require.NoError(t, s.DeleteProject(ctx, "org", "proj"))
		_, err = s.LookupProject(ctx, "proj")
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
