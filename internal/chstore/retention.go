package chstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// expiringTables are the tables retention deletes from, with the column that
// dates each row. Tombstone tables stay: they are small and keep a later
// re-send of a deleted trace deleted.
var expiringTables = []struct {
	t      table
	column string
}{
	{observationsTable, "start_time"},
	{traceIndexTable, "day"},
	{scoresTable, "timestamp"},
	{scoreTraceIndexTable, "day"},
}

// ExpireBefore deletes every row of a project older than its cutoff, for
// the projects of cutoffs (the trace index by whole days before the
// cutoff's, so that it keeps pointing at the cutoff day's remaining spans).
// Per table it starts one asynchronous ALTER ... DELETE that covers all of
// them, and only when the table holds such rows, so a run with nothing to
// expire costs a few primary-key reads and no mutation. It returns the
// number of mutations started.
func (s *Store) ExpireBefore(ctx context.Context, cutoffs map[string]time.Time) (int, error) {
	if len(cutoffs) == 0 {
		return 0, nil
	}
	mutations := 0
	for _, et := range expiringTables {
		conds := make([]string, 0, len(cutoffs))
		args := make([]any, 0, 2*len(cutoffs))
		for project, cutoff := range cutoffs {
			bound := "toDateTime(?)"
			if et.column == "day" {
				bound = "toDate(toDateTime(?))"
			}
			conds = append(conds, "(project_id = ? AND "+et.column+" < "+bound+")")
			args = append(args, project, cutoff.Unix())
		}
		cond := strings.Join(conds, " OR ")
		var n uint64
		err := s.query(ctx, "SELECT count() FROM "+s.ddl.name(et.t)+" WHERE "+cond, args, func(r rowScanner) error { return r.Scan(&n) })
		if err != nil {
			return mutations, fmt.Errorf("count expired rows of %s: %w", et.t.name, err)
		}
		if n == 0 {
			continue
		}
		if err := s.mutateDelete(ctx, et.t, cond, args); err != nil {
			return mutations, err
		}
		mutations++
	}
	return mutations, nil
}
