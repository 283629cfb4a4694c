package diskqueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, dir string, opts Options) *Queue {
	t.Helper()
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 1 << 30
	}
	q, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func records(t *testing.T, q *Queue, maxBytes int64) (Batch, []string) {
	t.Helper()
	b, _, err := q.Read(context.Background(), nil, maxBytes)
	require.NoError(t, err)
	var out []string
	for _, r := range b.Records {
		out = append(out, string(r))
	}
	return b, out
}

func TestReadsInOrderInBatchesUntilCommitted(t *testing.T) {
	q := open(t, t.TempDir(), Options{SegmentBytes: 64})
	for i := range 10 {
		require.NoError(t, q.Append(fmt.Appendf(nil, "record-%d", i)))
	}
	// Each record is 8 bytes of framing and 8 of payload: three fit in 48.
	b, got := records(t, q, 48)
	assert.Equal(t, []string{"record-0", "record-1", "record-2"}, got)
	assert.Equal(t, int64(48), b.Bytes)
	assert.Equal(t, int64(160), q.Size())

	second, got := records(t, q, 1<<20)
	assert.Equal(t, []string{"record-3", "record-4", "record-5", "record-6", "record-7", "record-8", "record-9"}, got,
		"records across segment files come back in order")

	require.NoError(t, q.Commit(second))
	assert.Equal(t, int64(160), q.Size(), "a batch delivered before an earlier one waits for it")
	require.NoError(t, q.Commit(b))
	assert.Zero(t, q.Size())
}

func TestBatchesNotCommittedAreReadAgainAfterReopen(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, Options{MaxBytes: 1 << 20})
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, q.Append(fmt.Appendf(nil, "r%d", i)))
	}
	first, _ := records(t, q, 10)
	second, _ := records(t, q, 10)
	_, _ = records(t, q, 10)
	require.NoError(t, q.Commit(second)) // delivered, but after a batch that is not
	require.NoError(t, q.Close())

	q = open(t, dir, Options{})
	_, got := records(t, q, 1<<20)
	assert.Equal(t, []string{"r0", "r1", "r2"}, got, "delivery is at least once")
	_ = first
}

func TestAFirstRecordLargerThanTheBatchIsReadAlone(t *testing.T) {
	q := open(t, t.TempDir(), Options{})
	require.NoError(t, q.Append(make([]byte, 1000)))
	require.NoError(t, q.Append([]byte("small")))
	b, _ := records(t, q, 10)
	require.Len(t, b.Records, 1)
	assert.Len(t, b.Records[0], 1000)
}

func TestCommittedSegmentsAreDeleted(t *testing.T) {
	dir := t.TempDir()
	q := open(t, dir, Options{SegmentBytes: 100})
	for range 20 {
		require.NoError(t, q.Append(make([]byte, 42)))
	}
	segments := func() int {
		m, err := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
		require.NoError(t, err)
		return len(m)
	}
	assert.Equal(t, 10, segments(), "two 50-byte records per 100-byte segment")
	b, _ := records(t, q, 1<<20)
	require.NoError(t, q.Commit(b))
	assert.Equal(t, 1, segments(), "only the segment being appended to stays")
	assert.Zero(t, q.Size())
}

func TestReopenResumesAfterTheLastCommit(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, Options{MaxBytes: 1 << 20, SegmentBytes: 64})
	require.NoError(t, err)
	for i := range 6 {
		require.NoError(t, q.Append(fmt.Appendf(nil, "r%d", i)))
	}
	b, _ := records(t, q, 20) // r0, r1
	require.NoError(t, q.Commit(b))
	_, _ = records(t, q, 20) // read, not committed
	require.NoError(t, q.Close())

	q = open(t, dir, Options{SegmentBytes: 64})
	_, got := records(t, q, 1<<20)
	assert.Equal(t, []string{"r2", "r3", "r4", "r5"}, got)
	require.NoError(t, q.Append([]byte("r6")))
	_, got = records(t, q, 1<<20)
	assert.Equal(t, []string{"r6"}, got)
}

func TestATornLastRecordIsDropped(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, Options{MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.NoError(t, q.Append([]byte("whole")))
	require.NoError(t, q.Append([]byte("torn-record")))
	require.NoError(t, q.Close())
	seg := filepath.Join(dir, fmt.Sprintf("%020d%s", 0, segmentSuffix))
	info, err := os.Stat(seg)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg, info.Size()-3)) // a crash mid-write

	q = open(t, dir, Options{})
	_, got := records(t, q, 1<<20)
	assert.Equal(t, []string{"whole"}, got)
	require.NoError(t, q.Append([]byte("next")))
	_, got = records(t, q, 1<<20)
	assert.Equal(t, []string{"next"}, got, "appends continue after the last whole record")
}

func TestADamagedSegmentIsSkippedAndCounted(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, Options{MaxBytes: 1 << 20, SegmentBytes: 32})
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, q.Append(fmt.Appendf(nil, "record-%d", i))) // 16 bytes each: 2 per segment
	}
	require.NoError(t, q.Close())
	seg := filepath.Join(dir, fmt.Sprintf("%020d%s", 0, segmentSuffix))
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	data[10] ^= 0xff // first record's payload
	require.NoError(t, os.WriteFile(seg, data, 0o600))

	q = open(t, dir, Options{SegmentBytes: 32})
	b, got := records(t, q, 1<<20)
	assert.Equal(t, []string{"record-2", "record-3"}, got)
	assert.Equal(t, int64(32), b.Corrupt)
}

func TestAppendRefusesBeyondMaxBytes(t *testing.T) {
	q := open(t, t.TempDir(), Options{MaxBytes: 40})
	require.NoError(t, q.Append(make([]byte, 12)))
	require.NoError(t, q.Append(make([]byte, 12)))
	require.ErrorIs(t, q.Append(make([]byte, 1)), ErrFull)
	b, _ := records(t, q, 1<<20)
	require.NoError(t, q.Commit(b))
	require.NoError(t, q.Append(make([]byte, 12)), "committing makes room")
	require.Error(t, q.Append(nil), "an empty record could never be read back apart from the next")
}

func TestOneProcessPerDirectory(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, Options{})
	_, err := Open(dir, Options{MaxBytes: 1 << 20})
	require.ErrorContains(t, err, "in use")
}

func TestReadWaitsForRecords(t *testing.T) {
	q := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := q.Read(ctx, nil, 100)
	require.ErrorIs(t, err, context.DeadlineExceeded, "nothing queued: Read waits")

	go func() {
		time.Sleep(20 * time.Millisecond)
		assert.NoError(t, q.Append([]byte("a")))
	}()
	b, _, err := q.Read(context.Background(), nil, 1<<20)
	require.NoError(t, err)
	assert.Len(t, b.Records, 1, "the first record queued ends the wait")
}

func TestReadByWaitsForTheDeadlineOrAFullBatch(t *testing.T) {
	q := open(t, t.TempDir(), Options{})
	start := time.Now()
	b, _, err := q.ReadBy(context.Background(), nil, 100, start.Add(50*time.Millisecond))
	require.NoError(t, err)
	assert.Empty(t, b.Records, "nothing queued by the deadline: an empty batch")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	require.NoError(t, q.Append([]byte("a")))
	start = time.Now()
	b, _, err = q.ReadBy(context.Background(), nil, 1<<20, start.Add(100*time.Millisecond))
	require.NoError(t, err)
	assert.Len(t, b.Records, 1, "what is queued at the deadline")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "a small batch waits for the deadline")

	require.NoError(t, q.Append(make([]byte, 100)))
	start = time.Now()
	_, _, err = q.ReadBy(context.Background(), nil, 50, start.Add(time.Hour))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "a full batch does not wait")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = q.ReadBy(ctx, nil, 50, time.Now().Add(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
}

func TestConcurrentAppendsAreEachReadOnce(t *testing.T) {
	q := open(t, t.TempDir(), Options{SegmentBytes: 4096})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				assert.NoError(t, q.Append(fmt.Appendf(nil, "%d-%d", w, i)))
			}
		})
	}
	seen := map[string]int{}
	var buf []byte
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for len(seen) < 1600 {
		var b Batch
		var err error
		b, buf, err = q.Read(context.Background(), buf, 1000)
		require.NoError(t, err)
		for _, r := range b.Records {
			seen[string(r)]++
		}
		require.NoError(t, q.Commit(b))
	}
	<-done
	for k, n := range seen {
		require.Equal(t, 1, n, k)
	}
	assert.Zero(t, q.Size())
}

func TestCloseEndsAWaitingRead(t *testing.T) {
	q, err := Open(t.TempDir(), Options{MaxBytes: 1 << 20})
	require.NoError(t, err)
	errc := make(chan error)
	go func() {
		_, _, err := q.Read(context.Background(), nil, 100)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-errc, ErrClosed)
}

func TestReadByNowAndReread(t *testing.T) {
	q := open(t, t.TempDir(), Options{})
	b, _, err := q.ReadBy(context.Background(), nil, 100, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, b.Records, "nothing queued: an empty batch at once")

	for i := range 4 {
		require.NoError(t, q.Append(fmt.Appendf(nil, "r%d", i)))
	}
	first, _, err := q.ReadBy(context.Background(), nil, 20, time.Time{})
	require.NoError(t, err)
	second, _, err := q.ReadBy(context.Background(), nil, 1<<20, time.Time{})
	require.NoError(t, err)
	require.Len(t, second.Records, 2)

	again, _, err := q.Reread(first, nil)
	require.NoError(t, err)
	assert.Equal(t, first.Records, again.Records, "the same records, for a retry")
	assert.Equal(t, first.Bytes, again.Bytes)

	require.NoError(t, q.Commit(first))
	_, _, err = q.Reread(first, nil)
	require.Error(t, err, "a committed batch is gone")
	again, _, err = q.Reread(second, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("r2"), []byte("r3")}, again.Records)
}

func TestEveryWaitingReaderWakesUp(t *testing.T) {
	q := open(t, t.TempDir(), Options{})
	got := make(chan int, 2)
	for range 2 {
		go func() {
			b, _, err := q.Read(context.Background(), nil, 1)
			if err == nil {
				got <- len(b.Records)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, q.Append([]byte("a")))
	require.NoError(t, q.Append([]byte("b")))
	for range 2 {
		select {
		case n := <-got:
			assert.Equal(t, 1, n)
		case <-time.After(5 * time.Second):
			t.Fatal("a reader was not woken")
		}
	}
}
