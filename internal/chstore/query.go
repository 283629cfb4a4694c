package chstore

import (
	"context"
	"strings"
)

type rowScanner interface {
	Scan(dest ...any) error
}

// query runs a SELECT and calls each for every row, all under one deadline.
func (s *Store) query(ctx context.Context, query string, args []any, each func(rowScanner) error) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// where collects conditions joined by AND and their client-side binds.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) String() string { return strings.Join(w.conds, " AND ") }

// placeholders renders "(?, ?, ...)" for n values: an IN list of literals
// narrows the primary key, which has(?, col) does not on 18.16.
func placeholders(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

// pageOf turns a 1-based page and a limit into LIMIT offset, count. The
// offset form is the one 18.16 accepts after LIMIT BY.
func pageOf(page, limit, defaultLimit int) (offset, count int) {
	if limit <= 0 {
		limit = defaultLimit
	}
	if page < 1 {
		page = 1
	}
	return (page - 1) * limit, limit
}

func anySlice[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
