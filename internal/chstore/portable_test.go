package chstore_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// portableSuiteEnv names the file TestPortableSuite writes for chdbcheck.
const portableSuiteEnv = "GLASSBOX_CHDB_SUITE"

// suiteStatement is one line of the suite: a statement and, for a SELECT,
// the number of rows 18.16 returned.
type suiteStatement struct {
	SQL  string  `json:"sql"`
	Rows *uint64 `json:"rows,omitempty"`
	// Values are the rows of a metrics query, which the replay must equal.
	Values [][]any `json:"values,omitempty"`
}

// TestPortableSuite runs every read the store offers on 18.16 and captures the
// statements as the server received them (binds filled in), plus the data as
// INSERT ... VALUES. chdbcheck replays the suite on ClickHouse 26.7 (chDB) and
// compares the row counts, which proves the same SQL on a current release:
//
//	GLASSBOX_CHDB_SUITE=/tmp/suite.jsonl go test -run TestPortableSuite ./internal/chstore/
//	cd internal/chstore/chdbcheck && npm ci && node check.mjs /tmp/suite.jsonl
func TestPortableSuite(t *testing.T) {
	// chDB replays single-server DDL, so this layout is single-server even
	// when the other tests run against a cluster.
	cfg := chtest.Config(t)
	cfg.Cluster, cfg.ReplicatedEngines = "", false
	if strings.Contains(cfg.DSN, "?") {
		cfg.DSN += "&log_queries=1"
	} else {
		cfg.DSN += "?log_queries=1"
	}
	ctx := context.Background()
	s, err := chstore.Open(ctx, cfg)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Migrate(ctx))

	runEveryRead(t, s)
	runMetricsReads(t, s)

	logged, err := s.LoggedStatements(ctx)
	require.NoError(t, err)
	var ddl, alters, selects []suiteStatement
	metrics := 0
	for _, st := range logged {
		switch {
		case strings.HasPrefix(st.SQL, "CREATE "):
			ddl = append(ddl, suiteStatement{SQL: st.SQL})
		case strings.HasPrefix(st.SQL, "ALTER "):
			alters = append(alters, suiteStatement{SQL: st.SQL})
		case (strings.Contains(st.SQL, "schema_migrations") || strings.Contains(st.SQL, "system.columns")) && strings.HasPrefix(st.SQL, "SELECT "):
			// Their answers depend on when during Migrate they ran; they only have to run.
			selects = append(selects, suiteStatement{SQL: st.SQL})
		case strings.Contains(st.SQL, "argMax(purged") || strings.HasPrefix(st.SQL, "SELECT DISTINCT trace_id FROM") ||
			strings.Contains(st.SQL, "GROUP BY project_id, day"):
			// The purge and the rollup job read across projects, before their
			// own marks, mutations and rollups, which the replay's data
			// already holds; they only have to run.
			selects = append(selects, suiteStatement{SQL: st.SQL})
		case strings.HasPrefix(st.SQL, "SELECT "):
			assert.Contains(t, st.SQL, "project_id = '", "every read names its project")
			if strings.Contains(st.SQL, "'"+deletedScore+"'") {
				// DeleteScore's lookup ran before the tombstone that the
				// replay's data already holds; it only has to run.
				selects = append(selects, suiteStatement{SQL: st.SQL})
				continue
			}
			rows := st.ResultRows
			next := suiteStatement{SQL: st.SQL, Rows: &rows}
			if strings.Contains(st.SQL, " AS m0") {
				next.Values, err = s.RawRows(ctx, st.SQL)
				require.NoError(t, err)
				metrics++
			}
			selects = append(selects, next)
		}
	}
	// Databases first, then tables, then the view that reads them.
	kind := func(sql string) int {
		switch {
		case strings.HasPrefix(sql, "CREATE DATABASE"):
			return 0
		case strings.HasPrefix(sql, "CREATE MATERIALIZED VIEW"):
			return 2
		}
		return 1
	}
	slices.SortStableFunc(ddl, func(a, b suiteStatement) int { return kind(a.SQL) - kind(b.SQL) })
	assert.Len(t, ddl, 14, "database, 11 tables, 2 views")
	assert.Len(t, alters, 5, "the trace and score deletions' mutations")
	assert.Greater(t, len(selects), 40)
	assert.Greater(t, metrics, 100, "metrics queries whose values the replay compares")

	suite := ddl
	// trace_index and score_trace_index are left out: the views fill them.
	for _, table := range []string{"observations", "deleted_traces", "scores", "deleted_scores", "schema_migrations", "metrics_daily", "metrics_daily_days"} {
		insert, err := s.ValuesInsert(ctx, table)
		require.NoError(t, err)
		require.NotEmpty(t, insert, table)
		suite = append(suite, suiteStatement{SQL: insert})
	}
	suite = append(append(suite, alters...), selects...)

	path := os.Getenv(portableSuiteEnv)
	if path == "" {
		path = filepath.Join(t.TempDir(), "suite.jsonl")
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, st := range suite {
		require.NoError(t, enc.Encode(st))
	}
	require.NoError(t, f.Close())
	t.Logf("%d statements in %s", len(suite), path)
}

// runMetricsReads stores the property test's data and runs every metrics
// field, measure and filter over it, plus random queries and the lists'
// filters.
func runMetricsReads(t *testing.T, s *chstore.Store) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	propData(t, s, r, start)
	// Closed days: the eligible queries below read them from the rollups.
	_, err := s.RefreshRollups(ctx, 0)
	require.NoError(t, err)
	for _, q := range chstore.EveryMetricsQuery() {
		q.From, q.To = start, start.Add(72*time.Hour)
		_, err := s.Metrics(ctx, "p1", q)
		require.NoError(t, err, "%+v", q)
	}
	for range 40 {
		q := randomMetricsQuery(r, start)
		_, err := s.Metrics(ctx, "p1", q)
		require.NoError(t, err, "%+v", q)
	}
	metadata := chstore.Filter{Column: "metadata", Type: "stringObject", Key: "a.b", Operator: "=", Value: "x"}
	_, _, err = s.ListTraces(ctx, chstore.TraceFilter{ProjectID: "p1", Filters: []chstore.Filter{metadata,
		{Column: "scores_avg", Type: "numberObject", Key: "quality", Operator: ">", Value: 0.5}}})
	require.NoError(t, err)
	_, err = s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "p1", Limit: 10, Filters: []chstore.Filter{metadata,
		{Column: "traceName", Type: "string", Operator: "contains", Value: "a"}}})
	require.NoError(t, err)
	_, _, err = s.SearchScores(ctx, chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: "p1"}, Filters: []chstore.Filter{
		{Column: "traceName", Type: "string", Operator: "=", Value: "chat"}}})
	require.NoError(t, err)
}

// deletedScore is the id of the score runEveryRead deletes; no read names it.
const deletedScore = "s-deleted"

// runEveryRead stores the test fixtures, deletes one trace and calls every read
// with each kind of filter.
func runEveryRead(t *testing.T, s *chstore.Store) {
	ctx := context.Background()
	ids := listFixture(t, s)
	dup := traceOf("proj", "d0d00000000000000000000000000000", base+30*60*second)
	require.NoError(t, s.InsertObservations(ctx, dup))
	require.NoError(t, s.InsertObservations(ctx, dup))
	gone := traceOf("proj", "90e00000000000000000000000000000", base+40*60*second)
	require.NoError(t, s.InsertObservations(ctx, gone))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{
		score("proj", "s1", ids[1]), score("proj", "s2", "90e00000000000000000000000000000"),
		{ProjectID: "proj", ID: "s3", Timestamp: base, Name: "resolved", Value: 1, DataType: chstore.ScoreBoolean,
			Source: chstore.SourceEval, SessionID: "s0", QueueID: "q1", Metadata: "{}"},
	}))
	require.NoError(t, s.DeleteTraces(ctx, "proj", []string{"90e00000000000000000000000000000"}))
	require.NoError(t, s.InsertScores(ctx, []chstore.Score{score("proj", deletedScore, ids[2])}))
	require.NoError(t, s.DeleteScore(ctx, "proj", deletedScore))
	purged, err := s.PurgeDeleted(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, purged.Mutations)

	minute := 60 * second
	for _, f := range []chstore.TraceFilter{
		{}, {UserID: "u1"}, {Name: "n0"}, {SessionID: "s1"}, {Tags: []string{"vip"}}, {Environment: []string{"staging"}},
		{Release: "r1", Version: "v1"}, {From: base + 2*minute, To: base + 9*minute, UserID: "u0"}, {Page: 2, Limit: 5},
		{OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderName}}, {OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderPublic, Desc: true}},
	} {
		f.ProjectID = "proj"
		_, _, err := s.ListTraces(ctx, f)
		require.NoError(t, err)
	}
	_, err = s.GetTrace(ctx, "proj", "d0d00000000000000000000000000000")
	require.NoError(t, err)
	_, err = s.GetTrace(ctx, "proj", "90e00000000000000000000000000000")
	require.ErrorIs(t, err, chstore.ErrNotFound)

	page, err := s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Limit: 5})
	require.NoError(t, err)
	require.NotNil(t, page.Next)
	_, err = s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Limit: 5, Cursor: page.Next})
	require.NoError(t, err)
	_, err = s.ListObservations(ctx, chstore.ObservationFilter{
		ProjectID: "proj", Page: 1, TraceID: ids[2], Name: "root", UserID: "u2", Type: "SPAN", Level: "DEFAULT",
		Environment: []string{"production"}, From: base, To: base + 10*minute, Version: "v1",
	})
	require.NoError(t, err)
	_, err = s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Page: 1, ParentID: ids[3][:4] + "root"})
	require.NoError(t, err)
	for _, root := range []bool{true, false} {
		_, err = s.ListObservations(ctx, chstore.ObservationFilter{ProjectID: "proj", Limit: 5, SessionID: "s1", Root: &root})
		require.NoError(t, err)
	}
	_, err = s.GetObservation(ctx, "proj", ids[4][:4]+"kid")
	require.NoError(t, err)

	_, _, err = s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "proj"})
	require.NoError(t, err)
	_, _, err = s.ListSessions(ctx, chstore.SessionFilter{ProjectID: "proj", From: base, To: base + 5*minute, Environment: []string{"staging"}})
	require.NoError(t, err)
	_, err = s.GetSession(ctx, "proj", "s1")
	require.NoError(t, err)

	_, _, err = s.ListScores(ctx, chstore.ScoreFilter{ProjectID: "proj", TraceID: ids[1], From: base, To: base + minute})
	require.NoError(t, err)
	_, _, err = s.SearchScores(ctx, chstore.ScoreSearch{
		ScoreFilter: chstore.ScoreFilter{ProjectID: "proj"}, IDs: []string{"s1", "s3"}, QueueID: "q1", Operator: ">=", Value: 0.5,
	})
	require.NoError(t, err)
	_, _, err = s.SearchScores(ctx, chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: "proj"}, UserID: "u1", TraceTags: []string{"all"}})
	require.NoError(t, err)
	_, err = s.GetScore(ctx, "proj", "s1")
	require.NoError(t, err)
	_, err = s.TraceScores(ctx, "proj", ids[1])
	require.NoError(t, err)
	_, err = s.TraceScoreIDs(ctx, "proj", ids[:3])
	require.NoError(t, err)
}
