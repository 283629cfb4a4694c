package chstore

import (
	"fmt"
	"strings"
)

// The schema keeps to the SQL that ClickHouse 18.16 and current releases share:
// microsecond Int64 timestamps next to a DateTime for partitions and filters,
// maps as parallel arrays, JSON as String, ReplacingMergeTree with dedupe on
// read, no codecs, skip indexes, TTL or Map/DateTime64/JSON types.

// table describes one logical table. In cluster mode it becomes <name>_local
// on every node plus a Distributed <name>; otherwise just <name>.
type table struct {
	name      string
	columns   string
	version   string // ReplacingMergeTree version column; "" means plain MergeTree
	partition string
	orderBy   string
	// granularity is the index granularity: small where reads look up single
	// traces, so that a point read decompresses little (docs/storage.md).
	granularity int
	// shardKey is the Distributed sharding expression; "" keeps the table node-local.
	shardKey string
}

const observationColumns = `
	project_id String,
	trace_id String,
	id String,
	parent_id String,
	type LowCardinality(String),
	name String,
	start_time DateTime('UTC'),
	start_time_us Int64,
	end_time_us Int64,
	completion_start_time_us Int64,
	level LowCardinality(String),
	status_message String,
	input String,
	output String,
	metadata String,
	model LowCardinality(String),
	model_parameters String,
	usage_keys Array(String),
	usage_values Array(Int64),
	cost_keys Array(String),
	cost_values Array(Float64),
	total_cost Float64,
	prompt_name String,
	prompt_version Int64,
	environment LowCardinality(String),
	release String,
	version String,
	trace_name String,
	user_id String,
	session_id String,
	tags Array(String),
	public UInt8,
	trace_metadata String,
	trace_input String,
	trace_output String,
	is_root UInt8,
	service_name LowCardinality(String),
	scope_name String,
	scope_version String,
	sample_rate Float64,
	event_ts UInt64,
	experiment_id String,
	experiment_name String,
	experiment_dataset_id String,
	experiment_item_id String,
	experiment_item_root_id String,
	experiment_description String,
	experiment_metadata String,
	experiment_item_metadata String,
	experiment_item_expected_output String,
	input_is_trace_input UInt8,
	output_is_trace_output UInt8,
	input_value String ALIAS ` + inputValue + `,
	output_value String ALIAS ` + outputValue

// A root span's input and output usually stand for its trace's as well. Such
// text is stored once, in trace_input, with input left empty and
// input_is_trace_input set (the same for output): writing it twice made a
// fifth of what an agent span costs on disk and about a fifth of ClickHouse's
// CPU per span. It is kept in trace_input because that column is sparse, and
// trace lists read it for many traces at once; reads of an observation's
// input take the ALIAS column input_value, which resolves either form (rows
// written before the flags have them unset).
const (
	inputValue  = "if(input_is_trace_input = 1, trace_input, input)"
	outputValue = "if(output_is_trace_output = 1, trace_output, output)"
)

var (
	// observations: one immutable row per span. Sorted by day then trace, so a
	// project's time window is a key range and, within a day, a trace is
	// contiguous (docs/storage.md has the measurements behind this choice).
	observationsTable = table{
		name:        "observations",
		columns:     observationColumns,
		version:     "event_ts",
		partition:   "toYYYYMM(start_time)",
		orderBy:     "project_id, toDate(start_time), trace_id, id",
		granularity: 2048,
		shardKey:    "cityHash64(trace_id)",
	}
	// traceIndex maps a trace to the days its spans started on, so a point read
	// of a trace becomes a key-range read of observations.
	traceIndexTable = table{
		name:        "trace_index",
		columns:     "project_id String, trace_id String, day Date",
		partition:   "toYYYYMM(day)",
		orderBy:     "project_id, trace_id, day",
		granularity: 1024,
		shardKey:    "cityHash64(trace_id)",
	}
	// deletedTraces holds tombstones: every read excludes these trace ids at
	// once; PurgeDeleted removes the rows later and writes the tombstone again
	// with purged = 1.
	deletedTracesTable = table{
		name:        "deleted_traces",
		columns:     "project_id String, trace_id String, deleted_at DateTime('UTC'), purged UInt8",
		version:     "deleted_at",
		orderBy:     "project_id, trace_id",
		granularity: 8192,
		shardKey:    "cityHash64(trace_id)",
	}
	scoresTable = table{
		name: "scores",
		columns: `
	project_id String,
	id String,
	timestamp DateTime('UTC'),
	timestamp_us Int64,
	name String,
	value Float64,
	string_value String,
	data_type LowCardinality(String),
	source LowCardinality(String),
	comment String,
	metadata String,
	config_id String,
	queue_id String,
	author_user_id String,
	environment LowCardinality(String),
	trace_id String,
	observation_id String,
	session_id String,
	dataset_run_id String,
	event_ts UInt64`,
		version:     "event_ts",
		partition:   "toYYYYMM(timestamp)",
		orderBy:     "project_id, toDate(timestamp), id",
		granularity: 8192,
		shardKey:    "cityHash64(id)",
	}
	// scoreTraceIndex maps a trace to the days its scores' timestamps fall on,
	// so that reading a trace's scores is a key-range read of scores. It keeps
	// the score id so that its rows are sharded like the scores they index.
	scoreTraceIndexTable = table{
		name:        "score_trace_index",
		columns:     "project_id String, trace_id String, day Date, id String",
		partition:   "toYYYYMM(day)",
		orderBy:     "project_id, trace_id, day",
		granularity: 1024,
		shardKey:    "cityHash64(id)",
	}
	// deletedScores holds score tombstones: the version of a score that was
	// deleted, by its event_ts. Reads leave out a score whose newest version
	// is tombstoned, at once, until PurgeDeleted removes the rows; writing the
	// id again later stores a newer version, which shows.
	deletedScoresTable = table{
		name:        "deleted_scores",
		columns:     "project_id String, id String, event_ts UInt64, deleted_at DateTime('UTC'), purged UInt8",
		version:     "deleted_at",
		orderBy:     "project_id, id, event_ts",
		granularity: 8192,
		shardKey:    "cityHash64(id)",
	}
	// migrationsTable records applied schema versions, per node.
	migrationsTable = table{
		name:        "schema_migrations",
		columns:     "version UInt32, applied_at DateTime('UTC')",
		orderBy:     "version",
		granularity: 8192,
	}
)

// ddl renders statements for one database layout.
type ddl struct {
	db         string
	cluster    string
	replicated bool
}

func quote(ident string) string { return "`" + ident + "`" }

func (d ddl) onCluster() string {
	if d.cluster == "" {
		return ""
	}
	return " ON CLUSTER " + quote(d.cluster)
}

// distributed reports whether t is split into a local and a Distributed table.
func (d ddl) distributed(t table) bool { return d.cluster != "" && t.shardKey != "" }

// local is the qualified name of the table that holds t's rows on a node.
func (d ddl) local(t table) string {
	if d.distributed(t) {
		return quote(d.db) + "." + quote(t.name+"_local")
	}
	return quote(d.db) + "." + quote(t.name)
}

// name is the qualified name that reads and inserts use.
func (d ddl) name(t table) string { return quote(d.db) + "." + quote(t.name) }

func (d ddl) createDatabase() string {
	return "CREATE DATABASE IF NOT EXISTS " + quote(d.db) + d.onCluster()
}

func (d ddl) engine(t table) string {
	kind := "MergeTree"
	if t.version != "" {
		kind = "ReplacingMergeTree"
	}
	var args []string
	if d.replicated {
		localName := t.name
		if d.distributed(t) {
			localName += "_local"
		}
		kind = "Replicated" + kind
		args = append(args, fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s'", d.db, localName), "'{replica}'")
	}
	if t.version != "" {
		args = append(args, t.version)
	}
	return fmt.Sprintf("%s(%s)", kind, strings.Join(args, ", "))
}

// createTable renders the CREATE statements for t: the storage table and, in
// cluster mode, the Distributed table over it.
func (d ddl) createTable(t table) []string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s%s (%s\n) ENGINE = %s", d.local(t), d.onCluster(), t.columns, d.engine(t))
	if t.partition != "" {
		fmt.Fprintf(&b, "\nPARTITION BY %s", t.partition)
	}
	fmt.Fprintf(&b, "\nORDER BY (%s)\nSETTINGS index_granularity = %d", t.orderBy, t.granularity)
	stmts := []string{b.String()}
	if d.distributed(t) {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s%s AS %s ENGINE = Distributed(%s, %s, %s, %s)",
			d.name(t), d.onCluster(), d.local(t), quote(d.cluster), quote(d.db), quote(t.name+"_local"), t.shardKey))
	}
	return stmts
}

// createTraceIndexView feeds trace_index from every observations insert. In
// cluster mode it sits on each node's local tables; both are sharded by trace
// id, so a trace's index rows land on the shard that holds its spans.
func (d ddl) createTraceIndexView() []string {
	return []string{fmt.Sprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s%s TO %s AS SELECT project_id, trace_id, toDate(start_time) AS day FROM %s",
		quote(d.db)+"."+quote("trace_index_mv"), d.onCluster(), d.local(traceIndexTable), d.local(observationsTable))}
}

// createScoreTraceIndexView feeds score_trace_index from every insert of
// scores with a trace. In cluster mode it sits on each node's local tables,
// so a node's index rows describe that node's scores.
func (d ddl) createScoreTraceIndexView() []string {
	return []string{fmt.Sprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s%s TO %s AS "+
		"SELECT project_id, trace_id, toDate(timestamp) AS day, id FROM %s WHERE trace_id != ''",
		quote(d.db)+"."+quote("score_trace_index_mv"), d.onCluster(), d.local(scoreTraceIndexTable), d.local(scoresTable))}
}

// backfillScoreTraceIndex indexes the scores stored before the view
// existed. Through the Distributed tables in cluster mode, each index row
// lands on its score's shard. Rows the view indexed as well are duplicates
// that change no day range.
func (d ddl) backfillScoreTraceIndex() string {
	return fmt.Sprintf("INSERT INTO %s (project_id, trace_id, day, id) SELECT project_id, trace_id, toDate(timestamp), id FROM %s WHERE trace_id != ''",
		d.name(scoreTraceIndexTable), d.name(scoresTable))
}

// addColumn renders the statements that add a column to t, the local and, in
// cluster mode, the Distributed table. 18.16 refuses ALTER ON CLUSTER of a
// non-replicated table when the cluster's shards have replicas, so with
// Replicated engines the Distributed table, which holds no data, is re-created
// over the altered local table instead.
func (d ddl) addColumn(t table, column, typ string) []string {
	stmts := []string{fmt.Sprintf("ALTER TABLE %s%s ADD COLUMN %s %s", d.local(t), d.onCluster(), quote(column), typ)}
	switch {
	case !d.distributed(t):
	case d.replicated:
		stmts = append(stmts, "DROP TABLE IF EXISTS "+d.name(t)+d.onCluster(), d.createTable(t)[1])
	default:
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s%s ADD COLUMN %s %s", d.name(t), d.onCluster(), quote(column), typ))
	}
	return stmts
}
