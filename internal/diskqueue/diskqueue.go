// Package diskqueue is a first-in first-out queue of byte records in
// append-only segment files, for readers that take records in large batches
// and commit each batch once delivered, in any order.
//
// It replaces a key-value store where each record would cost a transaction
// to put, one to mark as read and one to delete: here an append is one
// write, a batch of many records is a few sequential reads, and a commit
// is one small write plus, now and then, the deletion of a whole segment.
// Records survive a crash of the process (they are in the page cache once
// Append returns) and, with Sync, of the machine. A record the consumer read
// but did not commit before a crash is read again after it, so delivery is
// at least once.
package diskqueue // import "github.com/glassbox-dev/glassbox/internal/diskqueue"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrFull is returned by Append when the queue holds MaxBytes already.
var ErrFull = errors.New("disk queue is full")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("disk queue is closed")

const (
	headerSize    = 8 // payload length and CRC-32C, little endian
	segmentSuffix = ".seg"
	cursorFile    = "cursor"
	lockFile      = "lock"

	// DefaultSegmentBytes bounds a segment file; a segment is deleted once
	// every record in it is committed.
	DefaultSegmentBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options tune a queue.
type Options struct {
	// MaxBytes bounds the records waiting to be committed, framing included.
	MaxBytes int64
	// SegmentBytes is the size at which a new segment file starts
	// (DefaultSegmentBytes when 0).
	SegmentBytes int64
	// Sync flushes every append to the device before Append returns, so
	// that records survive a power loss, not only a process crash.
	Sync bool
}

// Queue is safe for concurrent use.
type Queue struct {
	dir  string
	opts Options
	lock *os.File

	mu       sync.Mutex
	closed   bool
	segments []int64 // base positions of the segment files, ascending
	files    map[int64]*os.File
	tail     *os.File // the segment being appended to, the last one
	end      int64    // position after the last whole record
	next     int64    // position of the first record not read
	cursor   int64    // position of the first record not committed
	cursorF  *os.File
	// done holds batches committed out of order: start -> end.
	done map[int64]int64

	// appended is closed, and replaced, by each Append: it wakes every
	// waiting reader.
	appended chan struct{}
}

// Open opens the queue in dir, creating dir if needed, and finds where its
// records end: a record cut short by a crash mid-write is dropped (it was
// never acknowledged).
func Open(dir string, opts Options) (*Queue, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.MaxBytes <= 0 {
		return nil, errors.New("diskqueue: max bytes must be positive")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // dir is the operator's configuration
	if err != nil {
		return nil, err
	}
	// Two processes appending to one directory would interleave records.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("diskqueue: %s is in use by another process: %w", dir, err)
	}
	q := &Queue{dir: dir, opts: opts, lock: lock, files: map[int64]*os.File{}, done: map[int64]int64{}, appended: make(chan struct{})}
	if err := q.load(); err != nil {
		_ = q.closeFiles()
		return nil, err
	}
	return q, nil
}

func (q *Queue) load() error {
	entries, err := os.ReadDir(q.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentSuffix)
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			return fmt.Errorf("diskqueue: unexpected file %s", e.Name())
		}
		q.segments = append(q.segments, base)
	}
	slices.Sort(q.segments)
	if q.cursorF, err = os.OpenFile(filepath.Join(q.dir, cursorFile), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return err
	}
	q.cursor = q.readCursor()
	if len(q.segments) == 0 {
		q.segments = []int64{max(q.cursor, 0)}
	}
	last := q.segments[len(q.segments)-1]
	if q.tail, err = os.OpenFile(q.segmentPath(last), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return err
	}
	q.files[last] = q.tail
	size, err := validLength(q.tail)
	if err != nil {
		return err
	}
	if err := q.tail.Truncate(size); err != nil {
		return err
	}
	if _, err := q.tail.Seek(size, io.SeekStart); err != nil {
		return err
	}
	q.end = last + size
	// A cursor that is missing or torn replays from the oldest record:
	// records are delivered at least once.
	if q.cursor < q.segments[0] || q.cursor > q.end {
		q.cursor = q.segments[0]
	}
	q.next = q.cursor
	return removeSegments(q.dropCommitted())
}

// validLength is the length of f's prefix made of whole, intact records.
func validLength(f *os.File) (int64, error) {
	var hdr [headerSize]byte
	var buf []byte
	var pos int64
	for {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			if errors.Is(err, io.EOF) {
				return pos, nil
			}
			return 0, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := f.ReadAt(buf, pos+headerSize); err != nil {
			if errors.Is(err, io.EOF) {
				return pos, nil
			}
			return 0, err
		}
		if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return pos, nil
		}
		pos += headerSize + n
	}
}

func (q *Queue) segmentPath(base int64) string {
	return filepath.Join(q.dir, fmt.Sprintf("%020d%s", base, segmentSuffix))
}

func (q *Queue) readCursor() int64 {
	var b [12]byte
	if _, err := q.cursorF.ReadAt(b[:], 0); err != nil {
		return -1
	}
	if crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b[:8])) //nolint:gosec // written from a non-negative position; checked against the segments
}

// Append adds rec at the end of the queue. Once it returns nil, rec survives
// a crash of the process (and, with Sync, of the machine).
func (q *Queue) Append(rec []byte) error {
	if len(rec) == 0 || len(rec) > math.MaxUint32 {
		return fmt.Errorf("diskqueue: a record must hold 1 to %d bytes, not %d", uint32(math.MaxUint32), len(rec))
	}
	var hdr [headerSize]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(rec))) //nolint:gosec // checked above
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(rec, castagnoli))
	size := int64(headerSize + len(rec))

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if q.end-q.cursor+size > q.opts.MaxBytes {
		return ErrFull
	}
	if last := q.segments[len(q.segments)-1]; q.end > last && q.end-last+size > q.opts.SegmentBytes {
		if err := q.rotate(); err != nil {
			return err
		}
	}
	if err := q.write(hdr[:], rec); err != nil {
		return err
	}
	q.end += size
	close(q.appended)
	q.appended = make(chan struct{})
	return nil
}

// write appends one framed record to the tail segment, or nothing.
func (q *Queue) write(hdr, rec []byte) error {
	_, err := q.tail.Write(hdr)
	if err == nil {
		_, err = q.tail.Write(rec)
	}
	if err == nil && q.opts.Sync {
		err = q.tail.Sync()
	}
	if err != nil {
		// Cut a partial record off, so that the next append follows the last whole one.
		last := q.segments[len(q.segments)-1]
		_ = q.tail.Truncate(q.end - last)
		_, _ = q.tail.Seek(q.end-last, io.SeekStart)
		return fmt.Errorf("diskqueue: append: %w", err)
	}
	return nil
}

func (q *Queue) rotate() error {
	f, err := os.OpenFile(q.segmentPath(q.end), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("diskqueue: new segment: %w", err)
	}
	if q.opts.Sync {
		_ = q.tail.Sync()
	}
	q.segments = append(q.segments, q.end)
	q.files[q.end] = f
	q.tail = f
	return nil
}

// Batch is what one Read returns.
type Batch struct {
	// Records point into the buffer given to Read.
	Records [][]byte
	// Bytes counts the records' framed size.
	Bytes int64
	// Corrupt counts the bytes skipped because they failed their checksum
	// (damage on disk): the rest of the segment they were in.
	Corrupt    int64
	start, end int64
}

// Read waits until records are queued and returns up to maxBytes of them
// (at least one, however large) in buf's memory, from the oldest record not
// read. Records read but not committed when the queue is closed are read
// again after the next Open.
func (q *Queue) Read(ctx context.Context, buf []byte, maxBytes int64) (Batch, []byte, error) {
	if err := q.wait(ctx, func(queued int64) bool { return queued > 0 }, nil); err != nil {
		return Batch{}, buf, err
	}
	return q.read(buf, maxBytes)
}

// ReadBy is Read for a batch due by deadline: it waits until maxBytes are
// queued or the deadline has passed, then returns what is queued, up to
// maxBytes: an empty batch when nothing is.
func (q *Queue) ReadBy(ctx context.Context, buf []byte, maxBytes int64, deadline time.Time) (Batch, []byte, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	if err := q.wait(ctx, func(queued int64) bool { return queued >= maxBytes }, timer.C); err != nil {
		return Batch{}, buf, err
	}
	return q.read(buf, maxBytes)
}

// wait returns once enough holds for the bytes queued and not read, or
// once due fires.
func (q *Queue) wait(ctx context.Context, enough func(queued int64) bool, due <-chan time.Time) error {
	for {
		q.mu.Lock()
		closed, queued, appended := q.closed, q.end-q.next, q.appended
		q.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if enough(queued) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-appended:
		case <-due:
			return nil
		}
	}
}

// Reread returns b's records again, in buf's memory, for a delivery to
// repeat after its first try failed; b must not be committed.
func (q *Queue) Reread(b Batch, buf []byte) (Batch, []byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Batch{}, buf, ErrClosed
	}
	if b.start < q.cursor {
		return Batch{}, buf, errors.New("diskqueue: batch already committed")
	}
	return q.readFrom(b.start, b.end, buf, b.end-b.start)
}

func (q *Queue) read(buf []byte, maxBytes int64) (Batch, []byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Batch{}, buf, ErrClosed
	}
	b, buf, err := q.readFrom(q.next, q.end, buf, maxBytes)
	if err == nil {
		q.next = b.end
	}
	return b, buf, err
}

// readFrom reads the records from pos, before end, up to maxBytes of them
// (at least one). q.mu is held.
func (q *Queue) readFrom(pos, end int64, buf []byte, maxBytes int64) (Batch, []byte, error) {
	b := Batch{start: pos, end: pos}
	var offsets []int64
	// Sized once for a full batch, so that reading does not grow it record
	// by record (a larger first record still grows it).
	if int64(cap(buf)) < maxBytes {
		buf = make([]byte, 0, min(maxBytes, end-pos))
	}
	buf = buf[:0]
	for b.end < end {
		seg, segEnd := q.segmentAt(b.end)
		n, err := q.readRecord(seg, b.end, &buf, len(offsets) == 0, maxBytes-b.Bytes)
		if errors.Is(err, errCorrupt) {
			b.Corrupt += segEnd - b.end
			b.end = segEnd
			continue
		}
		if err != nil {
			return Batch{}, buf, err
		}
		if n == 0 {
			break
		}
		offsets = append(offsets, int64(len(buf))-n)
		b.Bytes += headerSize + n
		b.end += headerSize + n
	}
	for i, off := range offsets {
		next := int64(len(buf))
		if i+1 < len(offsets) {
			next = offsets[i+1]
		}
		b.Records = append(b.Records, buf[off:next:next])
	}
	return b, buf, nil
}

var errCorrupt = errors.New("corrupt record")

// readRecord appends the payload of the record at pos, in the segment at
// seg, to buf and returns its length; 0 when it is larger than room and
// not the first of its batch.
func (q *Queue) readRecord(seg, pos int64, buf *[]byte, first bool, room int64) (int64, error) {
	f, err := q.file(seg)
	if err != nil {
		return 0, err
	}
	var hdr [headerSize]byte
	if _, err := f.ReadAt(hdr[:], pos-seg); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errCorrupt
		}
		return 0, fmt.Errorf("diskqueue: read: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(hdr[:4]))
	if !first && headerSize+n > room {
		return 0, nil
	}
	start := len(*buf)
	*buf = slices.Grow(*buf, int(n))[:start+int(n)]
	payload := (*buf)[start:]
	if _, err := f.ReadAt(payload, pos-seg+headerSize); err != nil {
		*buf = (*buf)[:start]
		if errors.Is(err, io.EOF) {
			return 0, errCorrupt
		}
		return 0, fmt.Errorf("diskqueue: read: %w", err)
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
		*buf = (*buf)[:start]
		return 0, errCorrupt
	}
	return n, nil
}

// segmentAt returns the base and end of the segment holding pos.
func (q *Queue) segmentAt(pos int64) (base, end int64) {
	i, found := slices.BinarySearch(q.segments, pos)
	if !found {
		i--
	}
	if i+1 < len(q.segments) {
		return q.segments[i], q.segments[i+1]
	}
	return q.segments[i], q.end
}

func (q *Queue) file(base int64) (*os.File, error) {
	if f, ok := q.files[base]; ok {
		return f, nil
	}
	f, err := os.Open(q.segmentPath(base))
	if err != nil {
		return nil, fmt.Errorf("diskqueue: %w", err)
	}
	q.files[base] = f
	return f, nil
}

// Commit marks b's records as delivered. Once every batch read before it
// is committed too, they are gone for good: the position is recorded, and
// segments that hold only delivered records are deleted.
func (q *Queue) Commit(b Batch) error {
	dropped, err := q.commit(b)
	if err != nil {
		return err
	}
	return removeSegments(dropped)
}

func (q *Queue) commit(b Batch) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, ErrClosed
	}
	q.done[b.start] = b.end
	cursor := q.cursor
	for end, ok := q.done[cursor]; ok; end, ok = q.done[cursor] {
		delete(q.done, cursor)
		cursor = end
	}
	if cursor == q.cursor {
		return nil, nil
	}
	var rec [12]byte
	binary.LittleEndian.PutUint64(rec[:8], uint64(cursor)) //nolint:gosec // positions are not negative
	binary.LittleEndian.PutUint32(rec[8:], crc32.Checksum(rec[:8], castagnoli))
	if _, err := q.cursorF.WriteAt(rec[:], 0); err != nil {
		return nil, fmt.Errorf("diskqueue: commit: %w", err)
	}
	if q.opts.Sync {
		if err := q.cursorF.Sync(); err != nil {
			return nil, fmt.Errorf("diskqueue: commit: %w", err)
		}
	}
	q.cursor = cursor
	return q.dropCommitted(), nil
}

// dropCommitted lets go of the segments before the cursor's, never the
// tail, and returns their files for removeSegments. q.mu is held.
func (q *Queue) dropCommitted() []string {
	var paths []string
	for len(q.segments) > 1 && q.segments[1] <= q.cursor {
		base := q.segments[0]
		if f, ok := q.files[base]; ok {
			_ = f.Close() // read-only by now; it is deleted next
			delete(q.files, base)
		}
		paths = append(paths, q.segmentPath(base))
		q.segments = q.segments[1:]
	}
	return paths
}

// removeSegments deletes the files of dropped segments. It runs without
// q.mu: freeing a large file can take the file system tens of
// milliseconds, which appends, and so acknowledgements, must not wait for.
func removeSegments(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("diskqueue: %w", err)
		}
	}
	return nil
}

// Size returns the bytes of records not yet committed, framing included.
func (q *Queue) Size() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.end - q.cursor
}

// Close releases the files; records not committed stay for the next Open.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	close(q.appended)
	return q.closeFiles()
}

func (q *Queue) closeFiles() error {
	var errs []error
	for _, f := range q.files {
		errs = append(errs, f.Close())
	}
	if q.cursorF != nil {
		errs = append(errs, q.cursorF.Close())
	}
	errs = append(errs, q.lock.Close())
	return errors.Join(errs...)
}
