package chstore

import (
	"context"
	"fmt"
)

// SessionFilter selects a project's sessions. Zero-valued fields do not filter.
type SessionFilter struct {
	ProjectID string
	// From (inclusive) and To (exclusive) bound the session's creation, Unix µs.
	From int64
	To   int64
	// Environment matches any of the listed environments.
	Environment []string
	// Page is 1-based; Limit defaults to 50.
	Page  int
	Limit int
}

// ListSessions returns one page of a project's sessions, newest first, and the
// number of sessions that match.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]Session, int, error) {
	if f.ProjectID == "" {
		return nil, 0, fmt.Errorf("%w: project id is required", ErrInvalid)
	}
	rows := &where{}
	rows.add("project_id = ? AND session_id != ''", f.ProjectID)
	if f.From > 0 {
		rows.add("start_time >= toDateTime(?)", f.From/1e6)
	}
	if f.To > 0 {
		rows.add("start_time < toDateTime(?) AND start_time_us < ?", ceilSeconds(f.To), f.To)
	}
	s.notDeleted(rows, f.ProjectID, observationDated)
	having := &where{}
	if f.From > 0 {
		having.add("s_start >= ?", f.From)
	}
	if len(f.Environment) > 0 {
		having.add("has(?, s_environment)", f.Environment)
	}
	grouped := "SELECT session_id, min(start_time_us) AS s_start, argMin(environment, start_time_us) AS s_environment FROM " +
		s.ddl.name(observationsTable) + " WHERE " + rows.String() + " GROUP BY session_id"
	args := rows.args
	if len(having.conds) > 0 {
		grouped += " HAVING " + having.String()
		args = append(args, having.args...)
	}

	var total uint64
	err := s.query(ctx, "SELECT count() FROM ("+grouped+") AS matching", args, func(r rowScanner) error { return r.Scan(&total) })
	if err != nil {
		return nil, 0, fmt.Errorf("count sessions: %w", err)
	}
	offset, limit := pageOf(f.Page, f.Limit, defaultLimit)
	sessions := []Session{}
	err = s.query(ctx, grouped+" ORDER BY s_start DESC, session_id DESC LIMIT ?, ?", append(args, offset, limit), func(r rowScanner) error {
		ss := Session{ProjectID: f.ProjectID}
		if err := r.Scan(&ss.ID, &ss.CreatedAt, &ss.Environment); err != nil {
			return err
		}
		sessions = append(sessions, ss)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list sessions: %w", err)
	}
	return sessions, int(total), nil
}

// GetSession returns a session with the ids of its traces, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, projectID, sessionID string) (Session, error) {
	if projectID == "" || sessionID == "" {
		return Session{}, fmt.Errorf("%w: project id and session id are required", ErrInvalid)
	}
	w := &where{}
	w.add("project_id = ? AND session_id = ?", projectID, sessionID)
	s.notDeleted(w, projectID, observationDated)
	ss := Session{ProjectID: projectID, ID: sessionID, TraceIDs: []string{}}
	query := "SELECT trace_id, min(start_time_us) AS ts, argMin(environment, start_time_us) FROM " + s.ddl.name(observationsTable) +
		" WHERE " + w.String() + " GROUP BY trace_id ORDER BY ts, trace_id"
	err := s.query(ctx, query, w.args, func(r rowScanner) error {
		var (
			id, env string
			ts      int64
		)
		if err := r.Scan(&id, &ts, &env); err != nil {
			return err
		}
		if len(ss.TraceIDs) == 0 {
			ss.CreatedAt, ss.Environment = ts, env
		}
		ss.TraceIDs = append(ss.TraceIDs, id)
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	if len(ss.TraceIDs) == 0 {
		return Session{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	return ss, nil
}
