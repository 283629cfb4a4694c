package chstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// migration is one schema version. Every step is idempotent, so collectors
// that start at the same time may run the same version concurrently, and a
// version that failed half-way is simply run again.
type migration struct {
	version uint32
	steps   []step
}

type step func(ctx context.Context, s *Store) error

// migrations is the schema history; append, never edit.
var migrations = []migration{
	{version: 1, steps: []step{
		createTable(observationsTable),
		createTable(traceIndexTable),
		createStatements(ddl.createTraceIndexView),
		createTable(deletedTracesTable),
		createTable(scoresTable),
	}},
	{version: 2, steps: []step{
		createTable(deletedScoresTable),
	}},
	{version: 3, steps: []step{
		createTable(scoreTraceIndexTable),
		createStatements(ddl.createScoreTraceIndexView),
		// After the view, so that no score stored in between is missed.
		func(ctx context.Context, s *Store) error {
			if err := s.exec(ctx, s.ddl.backfillScoreTraceIndex()); err != nil {
				return fmt.Errorf("index the stored scores by trace: %w", err)
			}
			return nil
		},
	}},
	{version: 4, steps: []step{
		addColumn(deletedTracesTable, "purged", "UInt8"),
		addColumn(deletedScoresTable, "purged", "UInt8"),
	}},
	{version: 5, steps: experimentColumns()},
	{version: 6, steps: []step{
		createTable(metricsDailyTable),
		createTable(metricsDailyDaysTable),
	}},
	{version: 7, steps: []step{
		createTable(scoreTracesDailyTable),
		createTable(scoreTracesDailyDaysTable),
	}},
	{version: 8, steps: []step{
		addColumn(observationsTable, "input_is_trace_input", "UInt8"),
		addColumn(observationsTable, "output_is_trace_output", "UInt8"),
		addColumn(observationsTable, "input_value", "String ALIAS "+inputValue),
		addColumn(observationsTable, "output_value", "String ALIAS "+outputValue),
	}},
}

// experimentColumns are the steps that add the experiment runner's fields
// (model.Experiment) to observations stored before they existed.
func experimentColumns() []step {
	var steps []step
	for _, c := range experimentInsertColumns {
		steps = append(steps, addColumn(observationsTable, c, "String"))
	}
	return steps
}

// ClickHouse error codes that mean "someone else already did it".
const (
	codeDuplicateColumn      = 15
	codeIllegalColumn        = 44 // 18.16 reports a duplicate ADD COLUMN with this code
	codeTableAlreadyExists   = 57
	codeDatabaseAlreadyExist = 82
)

// Migrate creates the database and brings the schema to the newest version.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, migrations)
}

func (s *Store) migrate(ctx context.Context, history []migration) error {
	if err := s.create(ctx, s.ddl.createDatabase()); err != nil {
		return fmt.Errorf("create database %s: %w", s.cfg.Database, err)
	}
	if err := createTable(migrationsTable)(ctx, s); err != nil {
		return err
	}
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return err
	}
	for _, m := range history {
		if applied[m.version] {
			continue
		}
		for i, st := range m.steps {
			if err := st(ctx, s); err != nil {
				return fmt.Errorf("schema version %d, step %d: %w", m.version, i+1, err)
			}
		}
		if err := s.recordVersion(ctx, m.version); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion is the newest schema version applied on the connected node.
func (s *Store) SchemaVersion(ctx context.Context) (uint32, error) {
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return 0, err
	}
	var newest uint32
	for v := range applied {
		newest = max(newest, v)
	}
	return newest, nil
}

func (s *Store) appliedVersions(ctx context.Context) (map[uint32]bool, error) {
	applied := map[uint32]bool{}
	err := s.query(ctx, "SELECT DISTINCT version FROM "+s.ddl.local(migrationsTable), nil, func(r rowScanner) error {
		var v uint32
		if err := r.Scan(&v); err != nil {
			return err
		}
		applied[v] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read applied schema versions: %w", err)
	}
	return applied, nil
}

func (s *Store) recordVersion(ctx context.Context, version uint32) error {
	err := s.insert(ctx, s.ddl.local(migrationsTable), []string{"version", "applied_at"}, 1,
		func(int) []any { return []any{version, time.Now().UTC()} })
	if err != nil {
		return fmt.Errorf("record schema version %d: %w", version, err)
	}
	return nil
}

func createTable(t table) step {
	return createStatements(func(d ddl) []string { return d.createTable(t) })
}

func createStatements(render func(ddl) []string) step {
	return func(ctx context.Context, s *Store) error {
		for _, stmt := range render(s.ddl) {
			if err := s.create(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}
}

// addColumn adds a column unless system.columns already lists it; a concurrent
// migrator adding it first is not an error.
func addColumn(t table, column, typ string) step {
	return func(ctx context.Context, s *Store) error {
		var n uint64
		err := s.query(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
			[]any{s.cfg.Database, t.name, column}, func(r rowScanner) error { return r.Scan(&n) })
		if err != nil {
			return fmt.Errorf("look up column %s.%s: %w", t.name, column, err)
		}
		if n > 0 {
			return nil
		}
		for _, stmt := range s.ddl.addColumn(t, column, typ) {
			err := s.exec(ctx, stmt)
			if err != nil && !isException(err, "already exists", codeDuplicateColumn, codeIllegalColumn, codeTableAlreadyExists) {
				return fmt.Errorf("add column %s.%s: %w", t.name, column, err)
			}
		}
		return nil
	}
}

// create runs an IF NOT EXISTS statement. Two servers racing on the same name
// can still see "already exists"; that means the work is done.
func (s *Store) create(ctx context.Context, stmt string) error {
	err := s.exec(ctx, stmt)
	if err != nil && !isException(err, "already exists", codeTableAlreadyExists, codeDatabaseAlreadyExist) {
		return err
	}
	return nil
}

// isException reports whether err is a server exception with one of codes and
// a message containing text; the codes alone are broader than "already exists".
func isException(err error, text string, codes ...int32) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return false
	}
	for _, c := range codes {
		if ex.Code == c && strings.Contains(ex.Message, text) {
			return true
		}
	}
	return false
}

// DropDatabase removes the database and everything in it.
func (s *Store) DropDatabase(ctx context.Context) error {
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+quote(s.cfg.Database)+s.ddl.onCluster()); err != nil {
		return fmt.Errorf("drop database %s: %w", s.cfg.Database, err)
	}
	return nil
}
