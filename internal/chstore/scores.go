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
	case ScoreNumeric, ScoreCategorical, ScoreBoolean, ScoreText, ScoreCorrection:
	default:
		problems = append(problems, fmt.Sprintf("data type %q is not NUMERIC, CATEGORICAL, BOOLEAN, TEXT or CORRECTION", sc.DataType))
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
	storedAt := uint64(time.Now().UnixMicro())
	err := s.insert(ctx, s.ddl.name(scoresTable), scoreInsertColumns, len(scores), func(i int) []any {
		sc := &scores[i]
		return []any{
			sc.ProjectID, sc.ID, time.Unix(sc.Timestamp/1e6, 0).UTC(), sc.Timestamp, sc.Name, sc.Value, sc.StringValue, sc.DataType, sc.Source,
			sc.Comment, jsonObject(sc.Metadata), sc.ConfigID, sc.QueueID, sc.AuthorUserID, sc.Environment,
			sc.TraceID, sc.ObservationID, sc.SessionID, sc.DatasetRunID, storedAt,
		}
	})
	if err != nil {
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
// number of scores that match. Deleted scores and the scores of deleted
// traces are not listed.
func (s *Store) ListScores(ctx context.Context, f ScoreFilter) ([]Score, int, error) {
	return s.SearchScores(ctx, ScoreSearch{ScoreFilter: f})
}
