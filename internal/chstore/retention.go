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

// dropExpiredPartitions drops the monthly partitions of t whose every row
// is past its project's cutoff: a metadata operation, where a mutation would
// rewrite the parts. It applies when one instance-wide or organization-wide
// retention covers every project of a month, the common case; partitions
// shared with projects that keep their data are left to the mutation. In
// cluster mode each node holds its own parts, so the mutation does it all.
func (s *Store) dropExpiredPartitions(ctx context.Context, t table, dated string, cutoffs map[string]time.Time) error {
	if s.ddl.cluster != "" {
		return nil
	}
	var latest time.Time
	for _, c := range cutoffs {
		if c.After(latest) {
			latest = c
		}
	}
	// Only partitions up to the latest cutoff's month can be wholly expired.
	type projectMax struct {
		project string
		max     time.Time
	}
	byPartition := map[uint32][]projectMax{}
	err := s.query(ctx, fmt.Sprintf("SELECT toYYYYMM(%[1]s) AS p, project_id, toDateTime(max(%[1]s)) FROM %[2]s "+
		"WHERE toYYYYMM(%[1]s) <= toYYYYMM(toDateTime(?)) GROUP BY p, project_id", dated, s.ddl.local(t)),
		[]any{latest.Unix()}, func(r rowScanner) error {
			var p uint32
			var pm projectMax
			if err := r.Scan(&p, &pm.project, &pm.max); err != nil {
				return err
			}
			byPartition[p] = append(byPartition[p], pm)
			return nil
		})
	if err != nil {
		return fmt.Errorf("read the partitions of %s: %w", t.name, err)
	}
	for p, projects := range byPartition {
		expired := true
		for _, pm := range projects {
			// A day column holds whole days: the day must end before the cutoff.
			end := pm.max
			if dated == dayColumn {
				end = end.AddDate(0, 0, 1)
			}
			if c, ok := cutoffs[pm.project]; !ok || !end.Before(c) {
				expired = false
				break
			}
		}
		if !expired {
			continue
		}
		if err := s.exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %d", s.ddl.local(t), p)); err != nil {
			return fmt.Errorf("drop expired partition %d of %s: %w", p, t.name, err)
		}
	}
	return nil
}

// SetRetention sets the projects' retention in days (absent or 0: kept
// without limit). From then on every read leaves out a project's rows
// dated before now minus its retention, so expired data disappears at
// once, before ExpireBefore removes it.
func (s *Store) SetRetention(days map[string]int) {
	s.retention.Store(&days)
}

// retainedSince returns the start of a project's retention window as Unix
// seconds, or 0 when the project keeps its data without limit.
func (s *Store) retainedSince(projectID string) int64 {
	days := s.retention.Load()
	if days == nil || (*days)[projectID] <= 0 {
		return 0
	}
	return time.Now().AddDate(0, 0, -(*days)[projectID]).Unix()
}

// retainedCond is the condition that keeps a project's rows within its
// retention, on the column that dates them ("" when there is no limit).
// The bound is a number this process computed, so it is written into the
// SQL, which lets it join queries whatever their placeholders.
func (s *Store) retainedCond(projectID, dated string) string {
	since := s.retainedSince(projectID)
	if since == 0 || dated == "" {
		return ""
	}
	if dated == dayColumn {
		return fmt.Sprintf("%s >= toDate(toDateTime(%d))", dated, since)
	}
	return fmt.Sprintf("%s >= toDateTime(%d)", dated, since)
}

// andRetained is retainedCond as a further AND condition, or "".
func (s *Store) andRetained(projectID, dated string) string {
	if cond := s.retainedCond(projectID, dated); cond != "" {
		return " AND " + cond
	}
	return ""
}

// The columns that date the rows of each table, for retention.
const (
	observationDated = "start_time"
	scoreDated       = "timestamp"
	dayColumn        = "day" // the trace indexes
)

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
		if err := s.dropExpiredPartitions(ctx, et.t, et.column, cutoffs); err != nil {
			return mutations, err
		}
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
