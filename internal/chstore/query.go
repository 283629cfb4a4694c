package chstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
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
		return unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return unavailable(rows.Err())
}

// async starts read beside the caller's next read and returns a function
// that waits for its result: two single-threaded statements of one request
// run on two of the server's cores instead of one after the other.
func async[T any](read func() (T, error)) func() (T, error) {
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read()
		done <- result{v, err}
	}()
	return func() (T, error) {
		r := <-done
		return r.value, r.err
	}
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

// insert sends n rows as one batch INSERT with an explicit column list; row
// returns the values of row i in column order.
func (s *Store) insert(ctx context.Context, table string, columns []string, n int, row func(i int) []any) error {
	return s.insertColumns(ctx, table, columns, func(batch driver.Batch) error {
		for i := range n {
			if err := batch.Append(row(i)...); err != nil {
				return fmt.Errorf("%w: row %d: %w", ErrInvalid, i, err)
			}
		}
		return nil
	})
}

// insertColumns sends one batch INSERT with an explicit column list, filled
// by fill.
func (s *Store) insertColumns(ctx context.Context, table string, columns []string, fill func(driver.Batch) error) error {
	batch, detach, err := s.prepareInsert(ctx, table, columns)
	if err != nil {
		return err
	}
	defer detach()
	defer batch.Close()
	if err := fill(batch); err != nil {
		return err
	}
	return unavailable(batch.Send())
}

// prepareInsert starts a batch INSERT; the caller calls detach when done.
//
// clickhouse-go's batch Send closes its connection when the batch context
// ends, from a goroutine that can notice the end only after Send has handed
// the connection back to the pool, where another call may already use it. So
// the driver gets a context detached from the caller's that ends only at its
// deadline, long after that goroutine is gone; the caller's cancellation still
// reaches it while the insert runs.
func (s *Store) prepareInsert(ctx context.Context, table string, columns []string) (driver.Batch, func() bool, error) {
	batchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.QueryTimeout)
	detach := context.AfterFunc(ctx, cancel)
	batch, err := s.conn.PrepareBatch(batchCtx, insertInto(table, columns))
	if err != nil {
		detach()
		return nil, nil, fmt.Errorf("prepare insert: %w", unavailable(err))
	}
	return batch, detach, nil
}
