package controlplane

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func migrationCount(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n))
	return n
}

func TestMigrationsAreIdempotent(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		_, err := s.CreateOrganization(ctx, "org", "Org")
		require.NoError(t, err)
		require.Equal(t, len(migrations), migrationCount(t, s))

		again := openStore(t, dsn)
		assert.Equal(t, len(migrations), migrationCount(t, again))
		org, err := again.GetOrganization(ctx, "org")
		require.NoError(t, err, "reopening keeps the data")
		assert.Equal(t, "Org", org.Name)
	})
}

func TestMigrationVersionsAscend(t *testing.T) {
	for i := 1; i < len(migrations); i++ {
		assert.Greater(t, migrations[i].version, migrations[i-1].version)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		_, err := s.conn().exec(context.Background(),
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, int64(1<<40), "future", int64(0))
		require.NoError(t, err)
		_, err = Open(context.Background(), dsn)
		assert.ErrorContains(t, err, "newer than this build knows")
	})
}

// Replicas starting together must not race on creating the schema.
func TestConcurrentOpen(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		const openers = 6
		var wg sync.WaitGroup
		stores := make([]*Store, openers)
		errs := make([]error, openers)
		for i := range openers {
			wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
		}
		wg.Wait()
		for i := range openers {
			require.NoError(t, errs[i], "opener %d", i)
			assert.Equal(t, len(migrations), migrationCount(t, stores[i]))
			require.NoError(t, stores[i].Close())
		}
	})
}

// Migration 46 widens the adapters of llm_connections, which SQLite can
// only do by editing its schema text: the rows, their sealed secrets and the
// rules' foreign keys to them survive.
func TestMigrationLLMAdaptersKeepsConnections(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		all := migrations
		t.Cleanup(func() { migrations = all })
		migrations = slices.DeleteFunc(slices.Clone(all), func(m migration) bool { return m.version == 46 })
		old := openStore(t, dsn)
		pa, _ := twoOrgs(t, old)
		box := testBox(t)
		sealed, err := box.Seal("sk-old-123456789", "c1\nopenai\nhttps://api.openai.com/v1")
		require.NoError(t, err)
		headers, err := box.Seal("{}", "c1\nopenai\nhttps://api.openai.com/v1")
		require.NoError(t, err)
		for _, stmt := range []string{
			`INSERT INTO llm_connections (id, project_id, provider, adapter, base_url, secret_key, display_secret, extra_headers,
				header_keys, custom_models, default_model, default_params, max_concurrency, timeout_ms, created_at, updated_at)
				VALUES ('c1', '` + pa.ID + `', 'judge', 'openai', 'https://api.openai.com/v1', '` + sealed + `', '...6789', '` + headers + `',
				'[]', '["m1"]', 'm1', '{}', 4, 60000, 1, 1)`,
			`INSERT INTO evaluators (id, project_id, name, kind, score_name, definition, created_at, updated_at)
				VALUES ('e1', '` + pa.ID + `', 'ev', 'llm', 's', '{}', 1, 1)`,
			`INSERT INTO eval_rules (id, project_id, name, evaluator_id, connection_id, target, filter, sampling_rate, delay_ms,
				active, variables, created_at, updated_at) VALUES ('r1', '` + pa.ID + `', 'rule', 'e1', 'c1', 'trace', '[]', 1, 0, 1, '{}', 1, 1)`,
		} {
			_, err := old.conn().exec(ctx, stmt)
			require.NoError(t, err)
		}
		require.NoError(t, old.Close())

		migrations = all
		s := openStore(t, dsn)
		creds, err := s.LLMCredentials(ctx, box, pa.ID, "c1")
		require.NoError(t, err, "secrets sealed before open after")
		assert.Equal(t, "sk-old-123456789", creds.SecretKey)
		assert.Equal(t, []string{"m1"}, creds.CustomModels)
		assert.True(t, creds.WithDefaultModels)
		assert.JSONEq(t, `{}`, string(creds.Config))

		_, err = s.conn().exec(ctx, `DELETE FROM llm_connections WHERE id = 'c1'`)
		assert.Error(t, err, "the rule's foreign key still refers to the connection")
		assert.ErrorIs(t, s.DeleteLLMConnection(ctx, pa.ID, "c1"), ErrConflict)

		_, err = s.UpsertLLMConnection(ctx, box, pa.ID, LLMConnectionUpsert{Provider: "aws", Adapter: AdapterBedrock,
			SecretKey: `{"accessKeyId":"AKIA1234","secretAccessKey":"s"}`, Config: json.RawMessage(`{"region":"us-east-1"}`)})
		require.NoError(t, err, "the new adapters pass the check constraint")
		_, err = s.conn().exec(ctx, `UPDATE llm_connections SET adapter = 'cohere' WHERE id = 'c1'`)
		assert.Error(t, err, "other adapters do not")
	})
}
