package chstore

import (
	"context"
	"fmt"
	"time"
)

// DeleteTraces hides traces from every read at once and starts removing their
// observations, scores and index rows in the background.
//
// The tombstones make the deletion visible immediately and keep it in force
// for spans of these traces that arrive later. The rows themselves go with an
// asynchronous ALTER ... DELETE (18.16 has neither lightweight deletes nor
// synchronous mutations); reads never wait for it.
func (s *Store) DeleteTraces(ctx context.Context, projectID string, traceIDs []string) error {
	if projectID == "" {
		return fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	if len(traceIDs) == 0 {
		return nil
	}
	if err := s.insertTombstones(ctx, projectID, traceIDs); err != nil {
		return err
	}
	for _, t := range []table{observationsTable, traceIndexTable, scoresTable, scoreTraceIndexTable} {
		stmt := fmt.Sprintf("ALTER TABLE %s%s DELETE WHERE project_id = ? AND has(?, trace_id)", s.ddl.local(t), s.ddl.onCluster())
		if err := s.exec(ctx, stmt, projectID, traceIDs); err != nil {
			return fmt.Errorf("start removing rows of deleted traces from %s: %w", t.name, err)
		}
	}
	return nil
}

func (s *Store) insertTombstones(ctx context.Context, projectID string, traceIDs []string) error {
	now := time.Now().UTC()
	err := s.insert(ctx, s.ddl.name(deletedTracesTable), []string{"project_id", "trace_id", "deleted_at"}, len(traceIDs),
		func(i int) []any { return []any{projectID, traceIDs[i], now} })
	if err != nil {
		return fmt.Errorf("write %d trace tombstones: %w", len(traceIDs), err)
	}
	return nil
}
