package chstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDDLSingleNode(t *testing.T) {
	d := ddl{db: "gb"}
	stmts := d.createTable(observationsTable)
	require.Len(t, stmts, 1)
	assert.True(t, strings.HasPrefix(stmts[0], "CREATE TABLE IF NOT EXISTS `gb`.`observations` ("), stmts[0])
	assert.Contains(t, stmts[0], "ENGINE = ReplacingMergeTree(event_ts)\nPARTITION BY toYYYYMM(start_time)\nORDER BY (project_id, toDate(start_time), trace_id, id)")
	assert.NotContains(t, stmts[0], "ON CLUSTER")
	assert.Equal(t, "CREATE DATABASE IF NOT EXISTS `gb`", d.createDatabase())
	assert.Contains(t, d.createTable(traceIndexTable)[0], "ENGINE = MergeTree()")
}

func TestDDLCluster(t *testing.T) {
	d := ddl{db: "gb", cluster: "c1"}
	stmts := d.createTable(observationsTable)
	require.Len(t, stmts, 2)
	assert.True(t, strings.HasPrefix(stmts[0], "CREATE TABLE IF NOT EXISTS `gb`.`observations_local` ON CLUSTER `c1` ("), stmts[0])
	assert.Contains(t, stmts[0], "ENGINE = ReplacingMergeTree(event_ts)")
	assert.Equal(t, "CREATE TABLE IF NOT EXISTS `gb`.`observations` ON CLUSTER `c1` AS `gb`.`observations_local` "+
		"ENGINE = Distributed(`c1`, `gb`, `observations_local`, cityHash64(trace_id))", stmts[1])

	// The migrations table stays per node.
	stmts = d.createTable(migrationsTable)
	require.Len(t, stmts, 1)
	assert.Contains(t, stmts[0], "`gb`.`schema_migrations` ON CLUSTER `c1`")

	assert.Equal(t, "CREATE MATERIALIZED VIEW IF NOT EXISTS `gb`.`trace_index_mv` ON CLUSTER `c1` TO `gb`.`trace_index_local` "+
		"AS SELECT project_id, trace_id, toDate(start_time) AS day FROM `gb`.`observations_local`", d.createTraceIndexView()[0])
	assert.Equal(t, []string{
		"ALTER TABLE `gb`.`observations_local` ON CLUSTER `c1` ADD COLUMN `note` String",
		"ALTER TABLE `gb`.`observations` ON CLUSTER `c1` ADD COLUMN `note` String",
	}, d.addColumn(observationsTable, "note", "String"))
}

func TestDDLReplicated(t *testing.T) {
	d := ddl{db: "gb", cluster: "c1", replicated: true}
	assert.Equal(t, []string{
		"ALTER TABLE `gb`.`observations_local` ON CLUSTER `c1` ADD COLUMN `note` String",
		"DROP TABLE IF EXISTS `gb`.`observations` ON CLUSTER `c1`",
		d.createTable(observationsTable)[1],
	}, d.addColumn(observationsTable, "note", "String"))
	assert.Contains(t, d.createTable(observationsTable)[0],
		"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gb/observations_local', '{replica}', event_ts)")
	assert.Contains(t, d.createTable(traceIndexTable)[0],
		"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/gb/trace_index_local', '{replica}')")
	assert.Contains(t, d.createTable(migrationsTable)[0],
		"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/gb/schema_migrations', '{replica}')")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{DSN: "clickhouse://127.0.0.1:9000"}.Validate())
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "dsn is required"},
		{Config{DSN: "http://127.0.0.1:8123"}, "only the native protocol"},
		{Config{DSN: "clickhouse://127.0.0.1:9000", Database: "a-b"}, `database "a-b"`},
		{Config{DSN: "clickhouse://127.0.0.1:9000", Cluster: "x y"}, `cluster "x y"`},
		{Config{DSN: "clickhouse://127.0.0.1:9000", QueryTimeout: -1}, "timeouts must not be negative"},
	} {
		assert.ErrorContains(t, tc.cfg.Validate(), tc.want)
	}
	_, err := Open(context.Background(), Config{})
	require.ErrorContains(t, err, "dsn is required")
}

func TestMergeJSONObjects(t *testing.T) {
	assert.JSONEq(t, `{"a":1,"b":{"x":2},"c":"z"}`, mergeJSONObjects([]string{`{"a":0,"b":1}`, `not json`, `[1]`, `{"a":1,"b":{"x":2},"c":"z"}`}))
	assert.Equal(t, "{}", mergeJSONObjects(nil))
}

func TestPermanent(t *testing.T) {
	assert.True(t, Permanent(fmt.Errorf("insert: %w", &clickhouse.Exception{Code: 53, Message: "Type mismatch"})))
	assert.True(t, Permanent(fmt.Errorf("%w: bad row", ErrInvalid)))
	assert.False(t, Permanent(&clickhouse.Exception{Code: 241, Message: "Memory limit exceeded"}))
	assert.False(t, Permanent(&clickhouse.Exception{Code: 60, Message: "Table gb.observations doesn't exist"}))
	assert.False(t, Permanent(context.DeadlineExceeded))
}

func TestPlaceholdersAndPages(t *testing.T) {
	assert.Equal(t, "(?, ?, ?)", placeholders(3))
	off, n := pageOf(0, 0, 50)
	assert.Equal(t, [2]int{0, 50}, [2]int{off, n})
	off, n = pageOf(3, 20, 50)
	assert.Equal(t, [2]int{40, 20}, [2]int{off, n})
}
