package chstore

import (
	"context"
	"fmt"
)

// latestTraceScores renders a subquery over the newest version of every
// score of the traces (scores of their observations included), selecting
// columns, and its binds.
//
// The days come from score_trace_index in a plain IN subquery, which 18.16
// turns into a set before it reads scores, so the read is a key range per
// day. The subquery names the node's own index table: in cluster mode each
// shard reads the index rows of its own scores, and a GLOBAL IN, which
// 18.16 does not use for the key, is not needed.
//
// As in Langfuse, versions are filtered by trace before the newest is
// picked: a score rewritten onto another trace under the same id still
// shows its older version under the first trace.
func (s *Store) latestTraceScores(projectID string, traceIDs []string, columns string) (string, []any) {
	in := placeholders(len(traceIDs))
	query := fmt.Sprintf("SELECT %s FROM %s WHERE project_id = ? AND toDate(timestamp) IN (SELECT day FROM %s WHERE project_id = ? AND trace_id IN %s) "+
		"AND trace_id IN %s%s ORDER BY event_ts DESC LIMIT 1 BY id",
		columns, s.ddl.name(scoresTable), s.ddl.local(scoreTraceIndexTable), in, in, s.andRetained(projectID, scoreDated))
	ids := anySlice(traceIDs)
	args := append([]any{projectID, projectID}, ids...)
	return query, append(args, ids...)
}

// TraceScores returns every score of a trace and of its observations, oldest
// first, each id in its newest version. Deleted scores and the scores of a
// deleted trace are left out.
func (s *Store) TraceScores(ctx context.Context, projectID, traceID string) ([]Score, error) {
	if projectID == "" || traceID == "" {
		return nil, fmt.Errorf("%w: project id and trace id are required", ErrInvalid)
	}
	latest, args := s.latestTraceScores(projectID, []string{traceID}, scoreReadColumns)
	visible := &where{}
	s.visibleScores(visible, projectID)
	query := "SELECT " + scoreReadColumns + " FROM (" + latest + ") AS latest WHERE " + visible.String() + " ORDER BY timestamp_us, id"
	scores := []Score{}
	err := s.query(ctx, query, append(args, visible.args...), func(r rowScanner) error {
		sc, err := scanScore(r)
		if err != nil {
			return err
		}
		scores = append(scores, sc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read scores of trace %s: %w", traceID, err)
	}
	return scores, nil
}

// TraceScoreIDs returns, in one read, the score ids of each of the traces
// (scores of their observations included), oldest first. Traces without
// visible scores have no entry.
func (s *Store) TraceScoreIDs(ctx context.Context, projectID string, traceIDs []string) (map[string][]string, error) {
	if projectID == "" {
		return nil, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	out := map[string][]string{}
	if len(traceIDs) == 0 {
		return out, nil
	}
	latest, args := s.latestTraceScores(projectID, traceIDs, "id, trace_id, timestamp_us, event_ts")
	visible := &where{}
	s.visibleScores(visible, projectID)
	query := "SELECT trace_id, arrayMap(sc -> sc.2, arraySort(groupArray((timestamp_us, id)))) FROM (" + latest + ") AS latest WHERE " +
		visible.String() + " GROUP BY trace_id"
	err := s.query(ctx, query, append(args, visible.args...), func(r rowScanner) error {
		var (
			trace string
			ids   []string
		)
		if err := r.Scan(&trace, &ids); err != nil {
			return err
		}
		out[trace] = ids
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read score ids of %d traces: %w", len(traceIDs), err)
	}
	return out, nil
}
