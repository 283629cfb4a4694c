package controlplane

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

var _ apikey.Verifier = (*Store)(nil)

func TestAPIKeyLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)

		key, secret, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{Note: " ci "})
		require.NoError(t, err)
		assert.Regexp(t, `^pk-lf-[0-9a-f-]{36}$`, key.PublicKey)
		assert.Regexp(t, `^sk-lf-[0-9a-f-]{36}$`, secret)
		assert.Equal(t, apikey.DisplaySecret(secret), key.DisplaySecret)
		assert.Equal(t, "ci", key.Note)
		assert.Equal(t, apikey.ScopeProject, key.Scope)
		assert.True(t, key.LastUsedAt.IsZero())

		p, err := s.Verify(ctx, key.PublicKey, secret)
		require.NoError(t, err)
		assert.Equal(t, apikey.Principal{PublicKey: key.PublicKey, ProjectID: pa.ID, OrganizationID: "a", Scope: apikey.ScopeProject}, p)

		for _, pair := range [][2]string{
			{key.PublicKey, secret + "x"},
			{key.PublicKey, strings.ToUpper(secret)},
			{key.PublicKey, ""},
			{"pk-lf-unknown", secret},
			{"", secret},
		} {
			_, err := s.Verify(ctx, pair[0], pair[1])
			assert.Equal(t, apikey.ErrInvalidCredentials, err, "%q", pair)
		}

		list, err := s.ListAPIKeys(ctx, "a", pa.ID)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, key.ID, list[0].ID)
		assert.Equal(t, key.DisplaySecret, list[0].DisplaySecret)
		assert.False(t, list[0].LastUsedAt.IsZero(), "verification recorded use")

		require.NoError(t, s.RevokeAPIKey(ctx, "a", pa.ID, key.ID))
		_, err = s.Verify(ctx, key.PublicKey, secret)
		assert.Equal(t, apikey.ErrInvalidCredentials, err)
		list, err = s.ListAPIKeys(ctx, "a", pa.ID)
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.ErrorIs(t, s.RevokeAPIKey(ctx, "a", pa.ID, key.ID), ErrNotFound)
	})
}

func TestOrganizationAPIKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		orgKey, orgSecret, err := s.CreateAPIKey(ctx, "a", "", NewAPIKey{})
		require.NoError(t, err)
		assert.Equal(t, apikey.ScopeOrganization, orgKey.Scope)
		_, _, err = s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		require.NoError(t, err)

		p, err := s.Verify(ctx, orgKey.PublicKey, orgSecret)
		require.NoError(t, err)
		assert.Equal(t, apikey.Principal{PublicKey: orgKey.PublicKey, OrganizationID: "a", Scope: apikey.ScopeOrganization}, p)

		orgKeys, err := s.ListAPIKeys(ctx, "a", "")
		require.NoError(t, err)
		require.Len(t, orgKeys, 1, "project keys are not the organization's own")
		assert.Equal(t, orgKey.ID, orgKeys[0].ID)

		assert.ErrorIs(t, s.RevokeAPIKey(ctx, "a", pa.ID, orgKey.ID), ErrNotFound, "not a key of the project")
		require.NoError(t, s.RevokeAPIKey(ctx, "a", "", orgKey.ID))
		_, err = s.Verify(ctx, orgKey.PublicKey, orgSecret)
		assert.Equal(t, apikey.ErrInvalidCredentials, err)

		_, _, err = s.CreateAPIKey(ctx, "missing", "", NewAPIKey{})
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestAPIKeyIsolation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		key, secret, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		require.NoError(t, err)

		for _, scope := range [][2]string{{"b", pa.ID}, {"b", pb.ID}, {"a", pb.ID}, {"b", ""}, {"a", ""}} {
			list, err := s.ListAPIKeys(ctx, scope[0], scope[1])
			require.NoError(t, err)
			assert.Empty(t, list, "%q", scope)
			assert.ErrorIs(t, s.RevokeAPIKey(ctx, scope[0], scope[1], key.ID), ErrNotFound, "%q", scope)
		}
		_, err = s.Verify(ctx, key.PublicKey, secret)
		assert.NoError(t, err, "failed revocations in other scopes leave the key valid")

		_, _, err = s.CreateAPIKey(ctx, "b", pa.ID, NewAPIKey{})
		assert.ErrorIs(t, err, ErrNotFound, "a project of another organization")
	})
}

func TestChosenKeyPair(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		pk, sk := "pk-lf-chosen", "sk-lf-0123456789abcdef-0123456789abcdef0"
		key, secret, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{PublicKey: pk, SecretKey: sk})
		require.NoError(t, err)
		assert.Equal(t, pk, key.PublicKey)
		assert.Equal(t, sk, secret)
		_, err = s.Verify(ctx, pk, sk)
		require.NoError(t, err)

		_, _, err = s.CreateAPIKey(ctx, "b", pb.ID, NewAPIKey{PublicKey: pk, SecretKey: "sk-lf-fedcba9876543210-0123456789abcdef0"})
		assert.ErrorIs(t, err, ErrConflict, "public keys are globally unique")

		for _, bad := range []NewAPIKey{
			{PublicKey: "pk-lf-x"},
			{SecretKey: sk},
			{PublicKey: "pk-x", SecretKey: sk},
			{PublicKey: "pk-lf-x", SecretKey: "sk-lf-short"},
			{PublicKey: "pk-lf-x", SecretKey: "sk-lf-" + strings.Repeat("x", 31)}, // one character short
			{PublicKey: "pk-lf-x", SecretKey: "xx-lf-0123456789abcdef"},
			{PublicKey: "pk-lf-x", SecretKey: "sk-lf-0123456789-0123456789abcdef0123456:abcdef"},
			{PublicKey: "pk-lf-a b", SecretKey: sk},
		} {
			_, _, err = s.CreateAPIKey(ctx, "a", pa.ID, bad)
			assert.ErrorIs(t, err, ErrInvalid, "%+v", bad)
		}
	})
}

// With GLASSBOX_HASH_KEY set, secret hashes are keyed with it: hashes stored
// before are keyed at start, keys keep verifying, the same secret hashes
// differently under another pepper, and a store whose hashes are keyed does
// not open without the pepper.
func TestSecretHashesArePeppered(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		const secret = "sk-lf-0123456789abcdef-0123456789abcdef0"
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		pa, _ := twoOrgs(t, s)
		before, _, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{PublicKey: "pk-lf-before", SecretKey: secret})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		hashOf := func(s *Store, public string) string {
			var h string
			require.NoError(t, s.conn().queryRow(ctx, `SELECT secret_hash FROM api_keys WHERE public_key = ?`, public).Scan(&h))
			return h
		}

		t.Setenv(apikey.HashKeyEnv, strings.Repeat("ab", 32))
		s = openStore(t, dsn)
		assert.True(t, apikey.IsPeppered(hashOf(s, before.PublicKey)), "keyed at start")
		assert.NotEqual(t, apikey.HashSecret(secret), strings.TrimPrefix(hashOf(s, before.PublicKey), "hmac-sha256:"))
		_, err = s.Verify(ctx, before.PublicKey, secret)
		require.NoError(t, err, "a key stored before the pepper still verifies")
		_, err = s.Verify(ctx, before.PublicKey, secret+"x")
		assert.ErrorIs(t, err, apikey.ErrInvalidCredentials)
		after, _, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{PublicKey: "pk-lf-after", SecretKey: secret})
		require.NoError(t, err)
		assert.Equal(t, hashOf(s, before.PublicKey), hashOf(s, after.PublicKey))
		other := apikey.NewHasher([]byte(strings.Repeat("c", 32)))
		assert.NotEqual(t, other.Hash(secret), hashOf(s, after.PublicKey), "another deployment's pepper")
		_, err = s.Verify(ctx, after.PublicKey, secret)
		require.NoError(t, err)

		t.Setenv(apikey.HashKeyEnv, "")
		_, err = Open(ctx, dsn)
		require.ErrorIs(t, err, ErrInvalid)
		assert.ErrorContains(t, err, apikey.HashKeyEnv)
		t.Setenv(apikey.HashKeyEnv, "not-a-key")
		_, err = Open(ctx, dsn)
		assert.ErrorContains(t, err, apikey.HashKeyEnv)
	})
}

func TestDeleteProjectRevokesItsKeys(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		ka, sa, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		require.NoError(t, err)
		kb, sb, err := s.CreateAPIKey(ctx, "b", pb.ID, NewAPIKey{})
		require.NoError(t, err)

		require.NoError(t, s.DeleteProject(ctx, "a", pa.ID))
		_, err = s.Verify(ctx, ka.PublicKey, sa)
		assert.Equal(t, apikey.ErrInvalidCredentials, err)
		_, err = s.Verify(ctx, kb.PublicKey, sb)
		assert.NoError(t, err, "other projects keep their keys")
		_, _, err = s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		assert.ErrorIs(t, err, ErrNotFound, "no new keys for a deleted project")
	})
}

// Plaintext secrets and passwords must appear in no column of any table.
func TestSecretsAreNotStored(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		var secrets []string
		for _, project := range []string{pa.ID, ""} {
			_, secret, err := s.CreateAPIKey(ctx, "a", project, NewAPIKey{})
			require.NoError(t, err)
			secrets = append(secrets, secret, strings.TrimPrefix(secret, secretKeyPrefix))
		}
		const password = "correct horse battery staple"
		_, err := s.CreateUser(ctx, NewUser{Email: "u@example.com", Password: password})
		require.NoError(t, err)
		secrets = append(secrets, password)

		var hashes []string
		for _, table := range []string{"organizations", "projects", "users", "organization_memberships",
			"project_memberships", "api_keys", "schema_migrations"} {
			for _, row := range dumpTable(t, s.db, table) {
				for _, secret := range secrets {
					assert.NotContains(t, row, secret, "table %s", table)
				}
				if table == "api_keys" {
					hashes = append(hashes, row)
				}
			}
		}
		require.Len(t, hashes, 2)
		assert.Contains(t, hashes[0]+hashes[1], apikey.HashSecret(secrets[0]), "the stored form is the shared hash")
	})
}

// dumpTable renders every row of a table as text.
func dumpTable(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM ` + table)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		var b strings.Builder
		for _, v := range vals {
			if raw, ok := v.([]byte); ok {
				v = string(raw)
			}
			fmt.Fprintf(&b, "%v|", v)
		}
		out = append(out, b.String())
	}
	require.NoError(t, rows.Err())
	return out
}

func TestLastUsedAtIsWrittenAtMostOncePerMinute(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		s.now = clock.Now
		pa, _ := twoOrgs(t, s)
		key, secret, err := s.CreateAPIKey(ctx, "a", pa.ID, NewAPIKey{})
		require.NoError(t, err)
		lastUsed := func() time.Time {
			list, err := s.ListAPIKeys(ctx, "a", pa.ID)
			require.NoError(t, err)
			require.Len(t, list, 1)
			return list[0].LastUsedAt
		}
		first := clock.Now()
		_, err = s.Verify(ctx, key.PublicKey, secret)
		require.NoError(t, err)
		assert.Equal(t, first, lastUsed())

		clock.Advance(30 * time.Second)
		_, err = s.Verify(ctx, key.PublicKey, secret)
		require.NoError(t, err)
		assert.Equal(t, first, lastUsed(), "within a minute nothing is written")

		// A replica with no memory of the write still sees the stored value.
		replica := openStore(t, dsn)
		replica.now = clock.Now
		_, err = replica.Verify(ctx, key.PublicKey, secret)
		require.NoError(t, err)
		assert.Equal(t, first, lastUsed())

		clock.Advance(31 * time.Second)
		_, err = s.Verify(ctx, key.PublicKey, secret)
		require.NoError(t, err)
		assert.Equal(t, clock.Now(), lastUsed(), "after a minute the use is recorded")

		// A failed verification is no use.
		clock.Advance(2 * time.Minute)
		_, err = s.Verify(ctx, key.PublicKey, "sk-lf-wrong")
		require.Error(t, err)
		assert.Equal(t, clock.Now().Add(-2*time.Minute), lastUsed())
	})
}
