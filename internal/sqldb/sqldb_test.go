package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRebind(t *testing.T) {
	q := `SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)`
	assert.Equal(t, `SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)`, Rebind(q, true))
	assert.Equal(t, q, Rebind(q, false))
}

func openSQLite(t *testing.T) *DB {
	t.Helper()
	raw, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db")+"?_pragma=foreign_keys(1)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, raw.Close()) })
	db := New(raw, false)
	_, err = db.Conn().Exec(context.Background(), `CREATE TABLE parent (id TEXT PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = db.Conn().Exec(context.Background(), `CREATE TABLE child (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL REFERENCES parent (id))`)
	require.NoError(t, err)
	return db
}

func TestInTxCommitsOrRollsBack(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	assert.False(t, db.Postgres())
	require.NoError(t, db.InTx(ctx, func(c Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO parent (id) VALUES (?)`, "a")
		return err
	}))
	failing := errors.New("stop")
	err := db.InTx(ctx, func(c Conn) error {
		if _, err := c.Exec(ctx, `INSERT INTO parent (id) VALUES (?)`, "b"); err != nil {
			return err
		}
		return failing
	})
	assert.ErrorIs(t, err, failing)
	var n int
	require.NoError(t, db.Conn().QueryRow(ctx, `SELECT COUNT(*) FROM parent`).Scan(&n))
	assert.Equal(t, 1, n, "the failed transaction left nothing")
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	_, err := db.Conn().Exec(ctx, `INSERT INTO parent (id) VALUES ('a')`)
	require.NoError(t, err)
	_, err = db.Conn().Exec(ctx, `INSERT INTO parent (id) VALUES ('a')`)
	assert.ErrorIs(t, Classify(err), ErrConflict)
	_, err = db.Conn().Exec(ctx, `INSERT INTO child (id, parent_id) VALUES ('c', 'missing')`)
	assert.ErrorIs(t, Classify(err), ErrNotFound)
	other := errors.New("other")
	assert.Equal(t, other, Classify(other))
	assert.NoError(t, Classify(nil))
}
