package controlplane

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

func initEnv(overrides map[string]string) func(string) string {
	env := map[string]string{
		EnvInitOrgID:        "org-init",
		EnvInitOrgName:      "Init Org",
		EnvInitProjectID:    "proj-init",
		EnvInitProjectName:  "Init Project",
		EnvInitPublicKey:    "pk-lf-init",
		EnvInitSecretKey:    "sk-lf-init-0123456789abcdef-0123456789ab",
		EnvInitUserEmail:    "Owner@Example.com",
		EnvInitUserName:     "Owner",
		EnvInitUserPassword: "owner password",
	}
	for k, v := range overrides {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// snapshot renders the rows InitFromEnv may touch, to compare runs.
func snapshot(t *testing.T, s *Store) map[string][]string {
	out := map[string][]string{}
	for _, table := range []string{"organizations", "projects", "users", "organization_memberships", "api_keys"} {
		out[table] = dumpTable(t, s.db, table)
	}
	return out
}

func TestInitFromEnv(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		require.NoError(t, s.InitFromEnv(ctx, initEnv(nil)))

		p, err := s.Verify(ctx, "pk-lf-init", "sk-lf-init-0123456789abcdef-0123456789ab")
		require.NoError(t, err)
		assert.Equal(t, apikey.Principal{PublicKey: "pk-lf-init", ProjectID: "proj-init", OrganizationID: "org-init",
			Scope: apikey.ScopeProject}, p)
		project, err := s.GetProject(ctx, "org-init", "proj-init")
		require.NoError(t, err)
		assert.Equal(t, "Init Project", project.Name)
		assert.Equal(t, "Init Org", project.OrganizationName)
		user, err := s.CheckPassword(ctx, "owner@example.com", "owner password")
		require.NoError(t, err)
		assert.Equal(t, "Owner", user.Name)
		m, err := s.GetMembership(ctx, "org-init", user.ID)
		require.NoError(t, err)
		assert.Equal(t, RoleOwner, m.Role)

		// Changes made afterwards through the store survive a restart.
		newName := "Renamed"
		_, err = s.UpdateProject(ctx, "org-init", "proj-init", ProjectUpdate{Name: &newName})
		require.NoError(t, err)
		second, err := s.CreateUser(ctx, NewUser{Email: "second@example.com"})
		require.NoError(t, err)
		require.NoError(t, s.SetMembership(ctx, "org-init", second.ID, RoleOwner))
		require.NoError(t, s.SetMembership(ctx, "org-init", user.ID, RoleAdmin))
		require.NoError(t, s.SetPassword(ctx, user.ID, "changed password"))
		before := snapshot(t, s)

		restarted := openStore(t, dsn)
		require.NoError(t, restarted.InitFromEnv(ctx, initEnv(nil)))
		require.NoError(t, restarted.InitFromEnv(ctx, initEnv(nil)))
		assert.Equal(t, before, snapshot(t, restarted), "a second run changes nothing")
	})
}

func TestInitFromEnvPartial(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		require.NoError(t, s.InitFromEnv(ctx, func(string) string { return "" }))
		assert.Empty(t, snapshot(t, s)["organizations"], "no variables, nothing created")

		require.NoError(t, s.InitFromEnv(ctx, initEnv(map[string]string{
			EnvInitOrgName: "", EnvInitProjectName: "", EnvInitPublicKey: "", EnvInitSecretKey: "",
			EnvInitUserEmail: "", EnvInitUserName: "", EnvInitUserPassword: "",
		})))
		project, err := s.GetProject(ctx, "org-init", "proj-init")
		require.NoError(t, err)
		assert.Equal(t, "proj-init", project.Name, "names default to ids")
		assert.Equal(t, "org-init", project.OrganizationName)
		snap := snapshot(t, s)
		assert.Empty(t, snap["api_keys"])
		assert.Empty(t, snap["users"])
	})
}

func TestInitFromEnvRejectsContradictions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		require.NoError(t, s.InitFromEnv(ctx, initEnv(nil)))
		_, err := s.CreateOrganization(ctx, "other", "Other")
		require.NoError(t, err)

		for _, tc := range []struct {
			overrides map[string]string
			want      string
		}{
			{map[string]string{EnvInitSecretKey: "sk-lf-another-0123456789abcdef-012345678"}, "different secret"},
			{map[string]string{EnvInitProjectID: "proj-2", EnvInitProjectName: "Second"}, "belongs to another project"},
			{map[string]string{EnvInitOrgID: "other"}, "belongs to another organization"},
			{map[string]string{EnvInitProjectID: "proj-3", EnvInitPublicKey: "pk-lf-3"}, "create project"},
		} {
			err := s.InitFromEnv(ctx, initEnv(tc.overrides))
			assert.ErrorIs(t, err, ErrConflict, tc.want)
			assert.ErrorContains(t, err, tc.want)
		}
		_, err = s.Verify(ctx, "pk-lf-init", "sk-lf-init-0123456789abcdef-0123456789ab")
		assert.NoError(t, err, "the existing key is untouched")

		require.NoError(t, s.RevokeAPIKey(ctx, "org-init", "proj-init", onlyKeyID(t, s)))
		assert.ErrorContains(t, s.InitFromEnv(ctx, initEnv(nil)), "was revoked")
		require.NoError(t, s.DeleteProject(ctx, "org-init", "proj-init"))
		assert.ErrorContains(t, s.InitFromEnv(ctx, initEnv(nil)), "was deleted")
	})
}

func onlyKeyID(t *testing.T, s *Store) string {
	t.Helper()
	keys, err := s.ListAPIKeys(context.Background(), "org-init", "proj-init")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	return keys[0].ID
}

func TestInitFromEnvValidates(t *testing.T) {
	s := openStore(t, t.TempDir()+"/cp.db")
	for name, overrides := range map[string]map[string]string{
		"org name without id":     {EnvInitOrgID: ""},
		"project name without id": {EnvInitProjectID: "", EnvInitPublicKey: "", EnvInitSecretKey: ""},
		"public key alone":        {EnvInitSecretKey: ""},
		"secret key alone":        {EnvInitPublicKey: ""},
		"user without email":      {EnvInitUserEmail: ""},
		"short password":          {EnvInitUserPassword: "short"},
		"bad key":                 {EnvInitPublicKey: "not-a-key"},
	} {
		err := s.InitFromEnv(context.Background(), initEnv(overrides))
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
}

// Replicas starting together with the same environment all succeed.
func TestInitFromEnvConcurrent(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		const replicas = 4
		stores := make([]*Store, replicas)
		for i := range stores {
			stores[i] = openStore(t, dsn)
		}
		errs := make([]error, replicas)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() { errs[i] = s.InitFromEnv(context.Background(), initEnv(nil)) })
		}
		wg.Wait()
		for i, err := range errs {
			assert.NoError(t, err, "replica %d", i)
		}
		snap := snapshot(t, stores[0])
		assert.Len(t, snap["organizations"], 1)
		assert.Len(t, snap["projects"], 1)
		assert.Len(t, snap["api_keys"], 1)
		assert.Len(t, snap["users"], 1)
		assert.Len(t, snap["organization_memberships"], 1)
	})
}
