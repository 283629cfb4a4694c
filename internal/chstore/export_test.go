package chstore

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// MigrateAddingColumn runs the schema history plus one more version that adds
// a column to observations, to exercise the add-column step.
func (s *Store) MigrateAddingColumn(ctx context.Context, column, typ string) error {
	history := append(migrations[:len(migrations):len(migrations)],
		migration{version: migrations[len(migrations)-1].version + 1, steps: []step{addColumn(observationsTable, column, typ)}})
	return s.migrate(ctx, history)
}

// MigrateTo applies the schema history up to and including version.
func (s *Store) MigrateTo(ctx context.Context, version uint32) error {
	var history []migration
	for _, m := range migrations {
		if m.version <= version {
			history = append(history, m)
		}
	}
	return s.migrate(ctx, history)
}

// StoredObservationRows counts a trace's stored rows, deleted or not.
func (s *Store) StoredObservationRows(ctx context.Context, projectID, traceID string) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND trace_id = ?",
		[]any{projectID, traceID}, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// StoredScoreRows counts a score's stored versions, deleted or not.
func (s *Store) StoredScoreRows(ctx context.Context, projectID, id string) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM "+s.ddl.name(scoresTable)+" WHERE project_id = ? AND id = ?",
		[]any{projectID, id}, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// ColumnCount reports how many columns of a table carry a name (0 or 1).
func (s *Store) ColumnCount(ctx context.Context, table, column string) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
		[]any{s.cfg.Database, table, column}, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// SetObservationsLayout swaps the observations sort key and index granularity
// for a layout comparison run; the returned func restores the real layout.
func SetObservationsLayout(orderBy string, granularity int) (restore func()) {
	savedStep, savedTable := migrations[0].steps[0], observationsTable
	observationsTable.orderBy, observationsTable.granularity = orderBy, granularity
	migrations[0].steps[0] = createTable(observationsTable)
	return func() { migrations[0].steps[0], observationsTable = savedStep, savedTable }
}

// ActiveParts counts the data parts of observations and trace_index.
func (s *Store) ActiveParts(ctx context.Context) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM system.parts WHERE database = ? AND active AND table IN ('observations', 'trace_index')",
		[]any{s.cfg.Database}, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// LoggedStatement is a statement as the server logged it, binds filled in.
type LoggedStatement struct {
	SQL        string
	ResultRows uint64
}

// LoggedStatements returns the finished statements that named the store's
// database, as 18.16's query_log recorded them (the connection must set
// log_queries=1).
func (s *Store) LoggedStatements(ctx context.Context) ([]LoggedStatement, error) {
	if err := s.exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
		return nil, err
	}
	var out []LoggedStatement
	err := s.query(ctx, "SELECT query, result_rows FROM system.query_log WHERE type = 2 AND is_initial_query = 1 "+
		"AND position(query, ?) > 0 AND position(query, 'system.query_log') = 0 ORDER BY event_time, query_start_time",
		[]any{s.cfg.Database}, func(r rowScanner) error {
			var st LoggedStatement
			if err := r.Scan(&st.SQL, &st.ResultRows); err != nil {
				return err
			}
			out = append(out, st)
			return nil
		})
	return out, err
}

// ValuesInsert renders every row of a table as one INSERT ... VALUES statement.
func (s *Store) ValuesInsert(ctx context.Context, table string) (string, error) {
	qualified := quote(s.cfg.Database) + "." + quote(table)
	rows, err := s.conn.Query(ctx, "SELECT * FROM "+qualified)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var tuples []string
	for rows.Next() {
		vals := make([]any, len(rows.ColumnTypes()))
		for i, ct := range rows.ColumnTypes() {
			vals[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(vals...); err != nil {
			return "", err
		}
		lits := make([]string, len(vals))
		for i, v := range vals {
			if lits[i], err = sqlLiteral(reflect.ValueOf(v).Elem().Interface()); err != nil {
				return "", fmt.Errorf("%s.%s: %w", table, rows.Columns()[i], err)
			}
		}
		tuples = append(tuples, "("+strings.Join(lits, ", ")+")")
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(tuples) == 0 {
		return "", nil
	}
	return insertInto(qualified, rows.Columns()) + " VALUES " + strings.Join(tuples, ", "), nil
}

func sqlLiteral(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\t", `\t`).Replace(x) + "'", nil
	case time.Time:
		return "'" + x.UTC().Format(time.DateTime) + "'", nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case int64, uint64, uint32, uint8:
		return fmt.Sprint(x), nil
	case *float64: // Nullable(Float64)
		if x == nil {
			return "NULL", nil
		}
		return sqlLiteral(*x)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return "", fmt.Errorf("no literal for %T", v)
	}
	items := make([]string, rv.Len())
	for i := range items {
		lit, err := sqlLiteral(rv.Index(i).Interface())
		if err != nil {
			return "", err
		}
		items[i] = lit
	}
	return "[" + strings.Join(items, ", ") + "]", nil
}

// MergeScores merges the parts of the scores table now, folding the rows a
// background merge would fold at a moment of its own choosing.
func (s *Store) MergeScores(ctx context.Context) error {
	return s.exec(ctx, "OPTIMIZE TABLE "+s.ddl.name(scoresTable)+" FINAL")
}

// Mutations counts the ALTER ... DELETE mutations started on the store's tables.
func (s *Store) Mutations(ctx context.Context) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM system.mutations WHERE database = ?",
		[]any{s.cfg.Database}, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// RawRows runs a logged SELECT again and returns its rows as JSON values:
// what the replay on a current release must answer too.
func (s *Store) RawRows(ctx context.Context, query string) ([][]any, error) {
	rows, err := s.conn.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out [][]any
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		row := make([]any, len(dest))
		for i, d := range dest {
			v := reflect.ValueOf(d).Elem()
			for v.Kind() == reflect.Pointer {
				if v.IsNil() {
					break
				}
				v = v.Elem()
			}
			if v.Kind() == reflect.Pointer {
				row[i] = nil
			} else {
				row[i] = v.Interface()
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// CountObservations counts the stored observation rows of every project.
func (s *Store) CountObservations(ctx context.Context) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM "+s.ddl.name(observationsTable), nil, func(r rowScanner) error { return r.Scan(&n) })
	return int(n), err
}

// ActivePartitions lists the partitions of observations that hold parts.
func (s *Store) ActivePartitions(ctx context.Context) ([]string, error) {
	var out []string
	err := s.query(ctx, "SELECT DISTINCT partition FROM system.parts WHERE database = ? AND table = ? AND active ORDER BY partition",
		[]any{s.ddl.db, observationsTable.name}, func(r rowScanner) error {
			var p string
			if err := r.Scan(&p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	return out, err
}

// StoredText returns an observation's input and output columns as stored,
// before input_value and output_value resolve them.
func (s *Store) StoredText(ctx context.Context, projectID, traceID, id string) (input, output string, err error) {
	err = s.query(ctx, "SELECT input, output FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND trace_id = ? AND id = ?",
		[]any{projectID, traceID, id}, func(r rowScanner) error { return r.Scan(&input, &output) })
	return input, output, err
}

// InsertUnflaggedRoot stores a root span as writers did before
// input_is_trace_input: its input and output written again as the trace's.
func (s *Store) InsertUnflaggedRoot(ctx context.Context, projectID, traceID, id string, startUs int64, input, output string) error {
	return s.insert(ctx, s.ddl.name(observationsTable), []string{"project_id", "trace_id", "id", "start_time", "start_time_us",
		"is_root", "input", "output", "trace_input", "trace_output", "metadata", "trace_metadata", "event_ts"}, 1,
		func(int) []any {
			return []any{projectID, traceID, id, time.UnixMicro(startUs).UTC(), startUs,
				uint8(1), input, output, input, output, "{}", "{}", uint64(1)}
		})
}
