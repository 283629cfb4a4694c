package chstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DeleteTraces hides traces from every read at once; PurgeDeleted removes
// their rows later.
//
// The tombstones make the deletion visible immediately and keep it in force
// for spans of these traces that arrive later. Removing rows takes an
// ALTER ... DELETE, which rewrites every part of a table that every tenant
// shares (18.16 has no lightweight deletes), so requests never issue one.
func (s *Store) DeleteTraces(ctx context.Context, projectID string, traceIDs []string) error {
	if projectID == "" {
		return fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	if len(traceIDs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	err := s.insert(ctx, s.ddl.name(deletedTracesTable), []string{"project_id", "trace_id", "deleted_at"}, len(traceIDs),
		func(i int) []any { return []any{projectID, traceIDs[i], now} })
	if err != nil {
		return fmt.Errorf("write %d trace tombstones: %w", len(traceIDs), err)
	}
	return nil
}

// purgeBatch bounds the tombstones one purge turns into mutations, which
// keeps each mutation's statement well under the server's max_query_size.
const purgeBatch = 1000

// PurgeStats says what one PurgeDeleted call did.
type PurgeStats struct {
	// Traces and Scores are the tombstones handled, whether or not they
	// matched stored rows.
	Traces, Scores int
	// Mutations is the number of ALTER ... DELETE statements issued.
	Mutations int
}

// PurgeDeleted removes the rows of deleted traces and scores: at most one
// mutation per table for up to purgeBatch pending tombstones, none for
// tombstones whose ids match no stored row, and nothing at all when no
// tombstone is pending (one small read). Handled tombstones stay, marked
// purged, so that reads keep hiding spans that arrive late.
func (s *Store) PurgeDeleted(ctx context.Context) (PurgeStats, error) {
	var st PurgeStats
	traces, err := s.purgeTraces(ctx, &st)
	if err != nil {
		return st, err
	}
	scores, err := s.purgeScores(ctx, &st)
	if err != nil {
		return st, err
	}
	st.Traces, st.Scores = traces, scores
	return st, nil
}

// pendingTombstones reads up to purgeBatch unpurged tombstones of t, keyed by
// keyCols. A tombstone row written again as purged (same deleted_at,
// purged = 1) outranks its original; a later delete of the same id outranks
// both.
func (s *Store) pendingTombstones(ctx context.Context, t table, keyCols string, scan func(rowScanner) error) error {
	q := fmt.Sprintf(`SELECT %[1]s, max(deleted_at) FROM %[2]s GROUP BY %[1]s
		HAVING argMax(purged, toUInt64(toUInt32(deleted_at)) * 2 + purged) = 0 LIMIT %[3]d`, keyCols, s.ddl.name(t), purgeBatch)
	return s.query(ctx, q, nil, scan)
}

type traceTombstone struct {
	project, trace string
	deletedAt      time.Time
}

func (s *Store) purgeTraces(ctx context.Context, st *PurgeStats) (int, error) {
	var pending []traceTombstone
	err := s.pendingTombstones(ctx, deletedTracesTable, "project_id, trace_id", func(r rowScanner) error {
		var t traceTombstone
		if err := r.Scan(&t.project, &t.trace, &t.deletedAt); err != nil {
			return err
		}
		pending = append(pending, t)
		return nil
	})
	if err != nil || len(pending) == 0 {
		return 0, wrapPurge(err, "read pending trace tombstones")
	}
	byProject := map[string][]string{}
	for _, t := range pending {
		byProject[t.project] = append(byProject[t.project], t.trace)
	}
	// Only ids with stored rows cost a mutation: the span side through
	// trace_index, the score side through score_trace_index.
	for _, side := range [][]table{{traceIndexTable, observationsTable}, {scoreTraceIndexTable, scoresTable}} {
		stored, err := s.storedTraceIDs(ctx, side[0], byProject)
		if err != nil {
			return 0, err
		}
		if len(stored) == 0 {
			continue
		}
		cond, args := projectIDsCondition("trace_id", stored)
		for _, t := range side {
			if err := s.mutateDelete(ctx, t, cond, args); err != nil {
				return 0, err
			}
			st.Mutations++
		}
	}
	err = s.insert(ctx, s.ddl.name(deletedTracesTable), []string{"project_id", "trace_id", "deleted_at", "purged"}, len(pending),
		func(i int) []any { return []any{pending[i].project, pending[i].trace, pending[i].deletedAt, uint8(1)} })
	return len(pending), wrapPurge(err, "mark trace tombstones purged")
}

// storedTraceIDs returns, per project, the ids of byProject that index
// (trace_index or score_trace_index) has rows for.
func (s *Store) storedTraceIDs(ctx context.Context, index table, byProject map[string][]string) (map[string][]string, error) {
	stored := map[string][]string{}
	for project, ids := range byProject {
		err := s.query(ctx, "SELECT DISTINCT trace_id FROM "+s.ddl.name(index)+" WHERE project_id = ? AND has(?, trace_id)",
			[]any{project, ids}, func(r rowScanner) error {
				var id string
				if err := r.Scan(&id); err != nil {
					return err
				}
				stored[project] = append(stored[project], id)
				return nil
			})
		if err != nil {
			return nil, wrapPurge(err, "look up stored rows of deleted traces in "+index.name)
		}
	}
	return stored, nil
}

type scoreTombstone struct {
	project, id string
	eventTS     uint64
	deletedAt   time.Time
}

// purgeScores removes the versions of deleted scores up to the version each
// tombstone names; DeleteScore wrote a tombstone only for a stored score.
func (s *Store) purgeScores(ctx context.Context, st *PurgeStats) (int, error) {
	var pending []scoreTombstone
	err := s.pendingTombstones(ctx, deletedScoresTable, "project_id, id, event_ts", func(r rowScanner) error {
		var t scoreTombstone
		if err := r.Scan(&t.project, &t.id, &t.eventTS, &t.deletedAt); err != nil {
			return err
		}
		pending = append(pending, t)
		return nil
	})
	if err != nil || len(pending) == 0 {
		return 0, wrapPurge(err, "read pending score tombstones")
	}
	conds := make([]string, len(pending))
	args := make([]any, 0, 3*len(pending))
	for i, t := range pending {
		conds[i] = "(project_id = ? AND id = ? AND event_ts <= ?)"
		args = append(args, t.project, t.id, t.eventTS)
	}
	if err := s.mutateDelete(ctx, scoresTable, strings.Join(conds, " OR "), args); err != nil {
		return 0, err
	}
	st.Mutations++
	err = s.insert(ctx, s.ddl.name(deletedScoresTable), []string{"project_id", "id", "event_ts", "deleted_at", "purged"}, len(pending),
		func(i int) []any {
			return []any{pending[i].project, pending[i].id, pending[i].eventTS, pending[i].deletedAt, uint8(1)}
		})
	return len(pending), wrapPurge(err, "mark score tombstones purged")
}

// projectIDsCondition matches column against ids, project by project.
func projectIDsCondition(column string, ids map[string][]string) (string, []any) {
	conds := make([]string, 0, len(ids))
	args := make([]any, 0, 2*len(ids))
	for project, list := range ids {
		conds = append(conds, "(project_id = ? AND has(?, "+column+"))")
		args = append(args, project, list)
	}
	return strings.Join(conds, " OR "), args
}

// mutateDelete starts one asynchronous ALTER ... DELETE on t's local tables.
func (s *Store) mutateDelete(ctx context.Context, t table, cond string, args []any) error {
	stmt := fmt.Sprintf("ALTER TABLE %s%s DELETE WHERE %s", s.ddl.local(t), s.ddl.onCluster(), cond)
	return wrapPurge(s.exec(ctx, stmt, args...), "start removing deleted rows from "+t.name)
}

func wrapPurge(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
