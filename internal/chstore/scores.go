package chstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

var scoreInsertColumns = []string{
	"project_id", "id", "timestamp", "timestamp_us", "name", "value", "string_value", "data_type", "source",
	"comment", "metadata", "config_id", "queue_id", "author_user_id", "environment",
	"trace_id", "observation_id", "session_id", "dataset_run_id", "event_ts",
}

// scoreReadColumns are read in ListScores' scan order.
var scoreReadColumns = strings.Join(slices.DeleteFunc(slices.Clone(scoreInsertColumns), func(c string) bool { return c == "timestamp" }), ", ")

// validateScore checks what the storage relies on; the API layer validates
// values against score configs.
func validateScore(sc *Score) error {
	var problems []string
	if sc.ProjectID == "" || sc.ID == "" || sc.Name == "" {
		problems = append(problems, "project id, id and name are required")
	}
	targets := 0
	for _, t := range []string{sc.TraceID, sc.SessionID, sc.DatasetRunID} {
		if t != "" {
			targets++
		}
	}
	if targets != 1 {
		problems = append(problems, "exactly one of trace id, session id and dataset run id is required")
	}
	if sc.ObservationID != "" && sc.TraceID == "" {
		problems = append(problems, "an observation score needs its trace id")
	}
	switch sc.DataType {
	case ScoreNumeric, ScoreCategorical, ScoreBoolean:
	default:
		problems = append(problems, fmt.Sprintf("data type %q is not NUMERIC, CATEGORICAL or BOOLEAN", sc.DataType))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: score %q: %s", ErrInvalid, sc.ID, strings.Join(problems, "; "))
	}
	return nil
}

// InsertScores writes scores in one batch. Writing a score id again replaces
// the earlier version on read.
func (s *Store) InsertScores(ctx context.Context, scores []Score) error {
	if len(scores) == 0 {
		return nil
	}
	for i := range scores {
		if err := validateScore(&scores[i]); err != nil {
			return err
		}
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	batch, err := s.conn.PrepareBatch(ctx, insertInto(s.ddl.name(scoresTable), scoreInsertColumns))
	if err != nil {
		return fmt.Errorf("prepare scores insert: %w", err)
	}
	defer batch.Close()
	storedAt := uint64(time.Now().UnixMicro())
	for i := range scores {
		sc := &scores[i]
		err := batch.Append(
			sc.ProjectID, sc.ID, time.Unix(sc.Timestamp/1e6, 0).UTC(), sc.Timestamp, sc.Name, sc.Value, sc.StringValue, sc.DataType, sc.Source,
			sc.Comment, jsonObject(sc.Metadata), sc.ConfigID, sc.QueueID, sc.AuthorUserID, sc.Environment,
			sc.TraceID, sc.ObservationID, sc.SessionID, sc.DatasetRunID, storedAt,
		)
		if err != nil {
			return fmt.Errorf("%w: score %s: %w", ErrInvalid, sc.ID, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d scores: %w", len(scores), err)
	}
	return nil
}

// ScoreFilter selects a project's scores. Zero-valued fields do not filter.
type ScoreFilter struct {
	ProjectID     string
	TraceID       string
	ObservationID string
	SessionID     string
	DatasetRunID  string
	Name          string
	Source        string
	DataType      string
	ConfigID      string
	// Environment matches any of the listed environments.
	Environment []string
	// From (inclusive) and To (exclusive) bound the score timestamp, Unix µs.
	From int64
	To   int64
	// Page is 1-based; Limit defaults to 50.
	Page  int
	Limit int
}

// ListScores returns one page of a project's scores, newest first, and the
// number of scores that match. Scores of deleted traces are not listed.
func (s *Store) ListScores(ctx context.Context, f ScoreFilter) ([]Score, int, error) {
	if f.ProjectID == "" {
		return nil, 0, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	// The newest version of each score id first, then the filters, so that a
	// rewritten score is judged by its current values.
	inner := &where{}
	inner.add("project_id = ?", f.ProjectID)
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
		{"data_type", f.DataType}, {"config_id", f.ConfigID},
	} {
		if c.value != "" {
			outer.add(c.column+" = ?", c.value)
		}
	}
	if len(f.Environment) > 0 {
		outer.add("has(?, environment)", f.Environment)
	}
	s.notDeleted(outer, f.ProjectID)
	query := "FROM (" + latest + ") AS latest WHERE " + outer.String()
	args := append(inner.args[:len(inner.args):len(inner.args)], outer.args...)

	var total uint64
	if err := s.query(ctx, "SELECT count() "+query, args, func(r rowScanner) error { return r.Scan(&total) }); err != nil {
		return nil, 0, fmt.Errorf("count scores: %w", err)
	}
	offset, limit := pageOf(f.Page, f.Limit, defaultLimit)
	scores := []Score{}
	err := s.query(ctx, "SELECT "+scoreReadColumns+" "+query+" ORDER BY timestamp_us DESC, id DESC LIMIT ?, ?",
		append(args, offset, limit), func(r rowScanner) error {
			var (
				sc       Score
				storedAt uint64
			)
			err := r.Scan(&sc.ProjectID, &sc.ID, &sc.Timestamp, &sc.Name, &sc.Value, &sc.StringValue, &sc.DataType, &sc.Source,
				&sc.Comment, &sc.Metadata, &sc.ConfigID, &sc.QueueID, &sc.AuthorUserID, &sc.Environment,
				&sc.TraceID, &sc.ObservationID, &sc.SessionID, &sc.DatasetRunID, &storedAt)
			if err != nil {
				return err
			}
			sc.StoredAt = int64(storedAt)
			scores = append(scores, sc)
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("list scores: %w", err)
	}
	return scores, int(total), nil
}
