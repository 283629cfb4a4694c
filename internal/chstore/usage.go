package chstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MonthUsage counts what a project stored in one month: the seed's billing
// units are its traces, observations and scores.
type MonthUsage struct {
	ProjectID    string
	Month        time.Time // the first day, UTC
	Traces       uint64
	Observations uint64
	Scores       uint64
}

// Units is the month's billing units.
func (u MonthUsage) Units() uint64 { return u.Traces + u.Observations + u.Scores }

// Usage counts the projects' traces, observations and scores per month
// since from (by observation start and score time), as stored: a row
// written twice counts once.
func (s *Store) Usage(ctx context.Context, projectIDs []string, from time.Time) ([]MonthUsage, error) {
	if len(projectIDs) == 0 {
		return nil, nil
	}
	ids := anySlice(projectIDs)
	byKey := map[string]*MonthUsage{}
	var order []string
	row := func(project string, month time.Time) *MonthUsage {
		key := project + "|" + month.Format(time.DateOnly)
		if byKey[key] == nil {
			byKey[key] = &MonthUsage{ProjectID: project, Month: month.UTC()}
			order = append(order, key)
		}
		return byKey[key]
	}
	obs := "SELECT project_id, toStartOfMonth(start_time) AS m, uniqExact(trace_id), uniqExact(id) FROM " + s.ddl.name(observationsTable) +
		" WHERE project_id IN " + placeholders(len(ids)) + " AND start_time >= toDateTime(?) GROUP BY project_id, m ORDER BY project_id, m"
	err := s.query(ctx, obs, append(ids, from.Unix()), func(r rowScanner) error {
		var (
			project string
			month   time.Time
			t, o    uint64
		)
		if err := r.Scan(&project, &month, &t, &o); err != nil {
			return err
		}
		u := row(project, month)
		u.Traces, u.Observations = t, o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage of observations: %w", err)
	}
	scores := "SELECT project_id, toStartOfMonth(timestamp) AS m, uniqExact(id) FROM " + s.ddl.name(scoresTable) +
		" WHERE project_id IN " + placeholders(len(ids)) + " AND timestamp >= toDateTime(?) GROUP BY project_id, m ORDER BY project_id, m"
	err = s.query(ctx, scores, append(anySlice(projectIDs), from.Unix()), func(r rowScanner) error {
		var (
			project string
			month   time.Time
			n       uint64
		)
		if err := r.Scan(&project, &month, &n); err != nil {
			return err
		}
		row(project, month).Scores = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage of scores: %w", err)
	}
	out := make([]MonthUsage, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	// Months with scores only came last.
	slices.SortFunc(out, func(a, b MonthUsage) int {
		return cmp.Or(strings.Compare(a.ProjectID, b.ProjectID), a.Month.Compare(b.Month))
	})
	return out, nil
}
