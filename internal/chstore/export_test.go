package chstore

import "context"

// MigrateAddingColumn runs the schema history plus one more version that adds
// a column to observations, to exercise the add-column step.
func (s *Store) MigrateAddingColumn(ctx context.Context, column, typ string) error {
	history := append(migrations[:len(migrations):len(migrations)],
		migration{version: migrations[len(migrations)-1].version + 1, steps: []step{addColumn(observationsTable, column, typ)}})
	return s.migrate(ctx, history)
}

// StoredObservationRows counts a trace's stored rows, deleted or not.
func (s *Store) StoredObservationRows(ctx context.Context, projectID, traceID string) (int, error) {
	var n uint64
	err := s.query(ctx, "SELECT count() FROM "+s.ddl.name(observationsTable)+" WHERE project_id = ? AND trace_id = ?",
		[]any{projectID, traceID}, func(r rowScanner) error { return r.Scan(&n) })
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
