package chstore

import (
	"context"
	"fmt"
	"time"
)

// Score value comparisons SearchScores accepts, as the public API spells them.
var scoreOperators = map[string]bool{"<": true, ">": true, "<=": true, ">=": true, "=": true, "!=": true}

// ScoreSearch is a ScoreFilter plus the other filters of the public score
// list. Zero-valued fields do not filter.
type ScoreSearch struct {
	ScoreFilter
	IDs     []string
	QueueID string
	// Operator (<, >, <=, >=, = or !=) compares the score value with Value.
	Operator string
	Value    float64
	// ValueIn keeps scores whose value is one of these.
	ValueIn []float64
	// UserID keeps scores of traces that carried this user id; TraceTags
	// keeps scores of traces that carry all these tags.
	UserID    string
	TraceTags []string
	// Filters are the structured `filter` parameter, over every score.
	Filters []Filter
	// Keyset pages by position rather than offset, without counting a
	// total: the first Limit scores after After (from the start when nil).
	Keyset bool
	After  *ScoreCursor
}

// ScoreCursor is a position in the scores listing (newest first, then by
// id): the last score of a page.
type ScoreCursor struct {
	Timestamp int64
	ID        string
}

// SearchScores returns one page of a project's scores, newest first, and the
// number that match. Like ListScores it judges each score id by its newest
// version and leaves out deleted scores and the scores of deleted traces.
func (s *Store) SearchScores(ctx context.Context, q ScoreSearch) ([]Score, int, error) {
	f := q.ScoreFilter
	if f.ProjectID == "" {
		return nil, 0, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	if q.Operator != "" && !scoreOperators[q.Operator] {
		return nil, 0, fmt.Errorf("%w: score value operator %q", ErrInvalid, q.Operator)
	}
	inner := &where{}
	inner.add("project_id = ?"+s.andRetained(f.ProjectID, scoreDated), f.ProjectID)
	if len(q.IDs) > 0 {
		inner.add("id IN "+placeholders(len(q.IDs)), anySlice(q.IDs)...)
	}
	if f.From > 0 {
		inner.add("timestamp >= toDateTime(?)", f.From/1e6)
	}
	if f.To > 0 {
		inner.add("timestamp < toDateTime(?)", ceilSeconds(f.To))
	}
	latest := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY event_ts DESC LIMIT 1 BY id",
		scoreReadColumns, s.ddl.name(scoresTable), inner)

	outer := &where{}
	if f.From > 0 {
		outer.add("timestamp_us >= ?", f.From)
	}
	if f.To > 0 {
		outer.add("timestamp_us < ?", f.To)
	}
	for _, c := range []struct{ column, value string }{
		{"trace_id", f.TraceID}, {"observation_id", f.ObservationID}, {"session_id", f.SessionID},
		{"dataset_run_id", f.DatasetRunID}, {"name", f.Name}, {"source", f.Source},
		{"data_type", f.DataType}, {"config_id", f.ConfigID}, {"queue_id", q.QueueID},
	} {
		if c.value != "" {
			outer.add(c.column+" = ?", c.value)
		}
	}
	if len(f.Environment) > 0 {
		outer.add("has(?, environment)", f.Environment)
	}
	if q.Operator != "" {
		outer.add("value "+q.Operator+" ?", q.Value)
	}
	if len(q.ValueIn) > 0 {
		outer.add("has(?, value)", q.ValueIn)
	}
	observations := s.ddl.name(observationsTable)
	if q.UserID != "" {
		outer.add("trace_id GLOBAL IN (SELECT trace_id FROM "+observations+" WHERE project_id = ? AND user_id = ?)",
			f.ProjectID, q.UserID)
	}
	if len(q.TraceTags) > 0 {
		outer.add("trace_id GLOBAL IN (SELECT trace_id FROM "+observations+
			" WHERE project_id = ? GROUP BY trace_id HAVING hasAll(groupUniqArrayArray(tags), ?))", f.ProjectID, q.TraceTags)
	}
	s.visibleScores(outer, f.ProjectID)
	if len(q.Filters) > 0 {
		cond, args, err := s.filteredKeys(viewScores, f.ProjectID, window{from: f.From, to: f.To}, q.Filters, "id")
		if err != nil {
			return nil, 0, err
		}
		outer.add(cond, args...)
	}
	if q.After != nil {
		outer.add("(timestamp_us < ? OR (timestamp_us = ? AND id < ?))", q.After.Timestamp, q.After.Timestamp, q.After.ID)
	}
	query := "FROM (" + latest + ") AS latest WHERE " + outer.String()
	args := append(inner.args[:len(inner.args):len(inner.args)], outer.args...)

	var total uint64
	if !q.Keyset {
		if err := s.query(ctx, "SELECT count() "+query, args, func(r rowScanner) error { return r.Scan(&total) }); err != nil {
			return nil, 0, fmt.Errorf("count scores: %w", err)
		}
	}
	offset, limit := pageOf(f.Page, f.Limit, defaultLimit)
	if q.Keyset {
		offset = 0
	}
	scores := []Score{}
	err := s.query(ctx, "SELECT "+scoreReadColumns+" "+query+" ORDER BY timestamp_us DESC, id DESC LIMIT ?, ?",
		append(args, offset, limit), func(r rowScanner) error {
			sc, err := scanScore(r)
			if err != nil {
				return err
			}
			scores = append(scores, sc)
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("search scores: %w", err)
	}
	return scores, int(total), nil
}

func scanScore(r rowScanner) (Score, error) {
	var (
		sc       Score
		storedAt uint64
	)
	err := r.Scan(&sc.ProjectID, &sc.ID, &sc.Timestamp, &sc.Name, &sc.Value, &sc.StringValue, &sc.DataType, &sc.Source,
		&sc.Comment, &sc.Metadata, &sc.ConfigID, &sc.QueueID, &sc.AuthorUserID, &sc.Environment,
		&sc.TraceID, &sc.ObservationID, &sc.SessionID, &sc.DatasetRunID, &storedAt)
	sc.StoredAt = int64(storedAt)
	return sc, err
}

// GetScore returns the newest version of one score of the project.
func (s *Store) GetScore(ctx context.Context, projectID, id string) (Score, error) {
	scores, _, err := s.SearchScores(ctx, ScoreSearch{ScoreFilter: ScoreFilter{ProjectID: projectID, Limit: 1}, IDs: []string{id}})
	if err != nil {
		return Score{}, err
	}
	if len(scores) == 0 {
		return Score{}, fmt.Errorf("score %s: %w", id, ErrNotFound)
	}
	return scores[0], nil
}

// visibleScores leaves out deleted scores and the scores of deleted traces.
// It applies to rows already narrowed to each id's newest version, the
// version a score tombstone names, and to the project's retention (the
// reads of the scores table add andRetained(projectID, scoreDated)).
func (s *Store) visibleScores(w *where, projectID string) {
	s.notDeleted(w, projectID, "")
	w.add("(id, event_ts) GLOBAL NOT IN (SELECT id, event_ts FROM "+s.ddl.name(deletedScoresTable)+" WHERE project_id = ?)", projectID)
}

// DeleteScore hides a score of the project from every read at once;
// PurgeDeleted removes its stored versions later.
//
// The tombstone names the newest version, so the deletion is visible
// immediately. The tombstone and the purge stop at that version: writing the
// id again afterwards stores a newer one, which reads show.
func (s *Store) DeleteScore(ctx context.Context, projectID, id string) error {
	sc, err := s.GetScore(ctx, projectID, id)
	if err != nil {
		return err
	}
	err = s.insert(ctx, s.ddl.name(deletedScoresTable), []string{"project_id", "id", "event_ts", "deleted_at"}, 1,
		func(int) []any { return []any{projectID, id, uint64(sc.StoredAt), time.Now().UTC()} }) //nolint:gosec // a stored time, never negative
	if err != nil {
		return fmt.Errorf("write tombstone of score %s: %w", id, err)
	}
	return nil
}
