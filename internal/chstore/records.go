package chstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// An observation record is a compact binary encoding of observations, the
// form in which the exporter's disk queue holds them: encoding is a copy of
// each field, and an insert decodes records straight into its columns without
// copying strings again. Records outlive the process that wrote them, so the
// first byte is the layout's version; a later layout must keep reading this one.
const recordV1 = 1

var errRecord = errors.New("corrupt observation record")

// AppendObservationRecord appends one record holding obs to dst. The
// observations must be valid (ValidateObservation).
func AppendObservationRecord(dst []byte, obs []model.Observation) []byte {
	dst = append(dst, recordV1)
	dst = binary.AppendUvarint(dst, uint64(len(obs)))
	for i := range obs {
		dst = appendObservation(dst, &obs[i])
	}
	return dst
}

func appendObservation(b []byte, o *model.Observation) []byte {
	e := &o.Experiment
	for _, s := range [...]string{o.ProjectID, o.TraceID, o.ID, o.ParentID, o.Type, o.Name} {
		b = appendString(b, s)
	}
	for _, v := range [...]int64{o.StartTime, o.EndTime, o.CompletionStartTime} {
		b = binary.AppendVarint(b, v)
	}
	for _, s := range [...]string{o.Level, o.StatusMessage, o.Input, o.Output, jsonObject(o.Metadata), o.Model, o.ModelParameters} {
		b = appendString(b, s)
	}
	var keys [16]string // the maps' keys, sorted; more than 16 is rare
	b = binary.AppendUvarint(b, uint64(len(o.UsageDetails)))
	for _, k := range keysInOrder(keys[:0], o.UsageDetails) {
		b = binary.AppendVarint(appendString(b, k), o.UsageDetails[k])
	}
	b = binary.AppendUvarint(b, uint64(len(o.CostDetails)))
	for _, k := range keysInOrder(keys[:0], o.CostDetails) {
		b = binary.LittleEndian.AppendUint64(appendString(b, k), math.Float64bits(o.CostDetails[k]))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(totalCost(o.CostDetails)))
	b = appendString(b, o.PromptName)
	b = binary.AppendVarint(b, o.PromptVersion)
	for _, s := range [...]string{o.Environment, o.Release, o.Version, o.TraceName, o.UserID, o.SessionID} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(o.Tags)))
	for _, t := range o.Tags {
		b = appendString(b, t)
	}
	b = append(b, boolByte(o.Public))
	b = appendString(b, jsonObject(o.TraceMetadata))
	b = appendCopy(b, o.TraceInput, o.Input)
	b = appendCopy(b, o.TraceOutput, o.Output)
	b = append(b, boolByte(o.IsRoot))
	for _, s := range [...]string{o.ServiceName, o.ScopeName, o.ScopeVersion} {
		b = appendString(b, s)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(o.SampleRate))
	for _, s := range [...]string{e.ID, e.Name, e.DatasetID, e.ItemID, e.ItemRootID, e.Description, e.Metadata, e.ItemMetadata, e.ItemExpectedOutput} {
		b = appendString(b, s)
	}
	return b
}

// appendCopy writes s, or only a mark when it equals same, an earlier field
// of the row: a root span's input and output stand for its trace's, and
// writing them twice would double what LLM spans cost on disk. The stored
// row keeps the mark too (input_is_trace_input).
func appendCopy(b []byte, s, same string) []byte {
	if s != "" && s == same {
		return append(b, fieldSame)
	}
	return appendString(append(b, fieldOwn), s)
}

// The marks appendCopy writes.
const (
	fieldOwn  = 0
	fieldSame = 1
)

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// keysInOrder appends m's keys to keys and sorts them, so that equal maps
// are stored as equal arrays.
func keysInOrder[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recordReader reads a record's fields; the first error sticks and every
// later read returns a zero value.
type recordReader struct {
	b   []byte
	err error
}

func (d *recordReader) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", errRecord, what)
	}
	d.b = nil
}

func (d *recordReader) byte() uint8 {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of elements, each taking at least one byte, so a
// corrupt count cannot make the decoder allocate more than the record holds.
func (d *recordReader) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail("array")
		return 0
	}
	return int(v) //nolint:gosec // at most len(d.b)
}

func (d *recordReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// What a failed read returns: a zero and an empty string, Native encoded.
var (
	zeroFixed64 [8]byte
	emptyString = [1]byte{0}
)

// fixed64 returns the next eight bytes, a float as Native stores it.
func (d *recordReader) fixed64() []byte {
	if len(d.b) < 8 {
		d.fail("float")
		return zeroFixed64[:]
	}
	v := d.b[:8]
	d.b = d.b[8:]
	return v
}

// string returns the next string as the record holds it, its varint length
// and its bytes, which is also how a Native String column holds it.
func (d *recordReader) string() []byte {
	// Most strings are shorter than 128 bytes: a one-byte length.
	if len(d.b) > 0 && d.b[0] < 0x80 && int(d.b[0]) < len(d.b) {
		s := d.b[: 1+d.b[0] : 1+d.b[0]]
		d.b = d.b[len(s):]
		return s
	}
	start := d.b
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail("string")
		return emptyString[:]
	}
	size := len(start) - len(d.b) + int(n) //nolint:gosec // at most len(d.b)
	d.b = d.b[n:]
	return start[:size:size]
}

// InsertObservationRecords writes the observations of records in one insert
// and returns how many rows it sent.
func (s *Store) InsertObservationRecords(ctx context.Context, records [][]byte) (int, error) {
	ins, err := s.BeginObservationInsert(ctx)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	if err := ins.Add(records); err != nil {
		return 0, err
	}
	return ins.Send()
}

// ObservationInsert is one INSERT into observations that takes records a
// block at a time: each Add sends a block, and ClickHouse joins the blocks
// of one insert into parts of up to a million rows, so that a long insert
// makes few parts to merge while the client holds only one block. Every row
// gets the same version, the insert's start, so a record written again after
// a failure that did reach the server collapses into one row on read.
type ObservationInsert struct {
	s        *Store
	conn     *nativeConn
	cancel   context.CancelFunc
	stop     func() bool // stops the cancellation watch on conn
	storedAt uint64
	rows     int
	sent     bool // the server committed the insert: conn can serve another
	// heads holds each column's name and type as the block repeats them.
	heads          [numObservationColumns][]byte
	lowCardinality [numObservationColumns]bool
}

// BeginObservationInsert starts an insert; Send ends it, Close releases it.
// The insert ends by the store's query timeout, or earlier when ctx ends.
func (s *Store) BeginObservationInsert(ctx context.Context) (*ObservationInsert, error) {
	insertCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.QueryTimeout)
	detach := context.AfterFunc(ctx, cancel)
	query := insertInto(s.ddl.name(observationsTable), observationInsertColumns) + " VALUES"
	for {
		conn, reused, err := s.native.get(insertCtx)
		if err != nil {
			detach()
			cancel()
			return nil, fmt.Errorf("prepare insert: %w", unavailable(err))
		}
		ins := &ObservationInsert{s: s, conn: conn, storedAt: uint64(time.Now().UnixMicro())} //nolint:gosec // after 1970
		ins.cancel = func() { detach(); cancel() }
		deadline, _ := insertCtx.Deadline()
		_ = conn.conn.SetDeadline(deadline)
		// A cancelled insert's reads and writes fail at once.
		ins.stop = context.AfterFunc(insertCtx, func() { _ = conn.conn.SetDeadline(time.Unix(1, 0)) })
		header, err := conn.startInsert(query, s.native.settings)
		if err == nil {
			err = ins.readHeader(header)
		}
		if err == nil {
			return ins, nil
		}
		// The server or the network may have closed a connection while it
		// was idle; the next one kept, or a new one, is tried.
		var ex *clickhouse.Exception
		if reused && !errors.As(err, &ex) && insertCtx.Err() == nil {
			ins.stop()
			_ = conn.conn.Close()
			continue
		}
		ins.Close()
		return nil, fmt.Errorf("prepare insert: %w", unavailable(err))
	}
}

// readHeader checks the server's columns against the block's and keeps
// their heads.
func (ins *ObservationInsert) readHeader(header []nativeColumnHeader) error {
	if len(header) != numObservationColumns {
		return fmt.Errorf("the server expects %d columns, not the %d of observations", len(header), numObservationColumns)
	}
	for i, h := range header {
		col := observationInsertKinds[i]
		if h.name != col.name || !col.kind.accepts(h.typ) {
			return fmt.Errorf("column %d is %s %s, expected %s", i, h.name, h.typ, col.name)
		}
		ins.lowCardinality[i] = h.typ == "LowCardinality(String)"
		b := chproto.Buffer{}
		b.PutString(h.name)
		b.PutString(h.typ)
		ins.heads[i] = b.Buf
	}
	// A root span's text moves between these columns as it is (decodeCopy).
	for _, i := range [...]int{cInput, cOutput, cTraceInput, cTraceOutput} {
		if ins.lowCardinality[i] {
			return fmt.Errorf("column %s is LowCardinality", observationInsertKinds[i].name)
		}
	}
	return nil
}

// Add decodes records into a block and sends it.
func (ins *ObservationInsert) Add(records [][]byte) error {
	b := ins.s.block()
	defer ins.s.releaseBlock(b)
	b.setLowCardinality(&ins.lowCardinality)
	for i, rec := range records {
		if err := b.decode(rec, ins.storedAt); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalid, i, err)
		}
	}
	if b.rows == 0 {
		return nil
	}
	if err := ins.conn.sendBlock(func(out []byte) []byte { return b.encode(out, &ins.heads) }); err != nil {
		return fmt.Errorf("insert %d observations: %w", b.rows, unavailable(ins.conn.pendingException(err)))
	}
	ins.rows += b.rows
	return nil
}

// block returns a kept block or a new one.
func (s *Store) block() *observationBlock {
	select {
	case b := <-s.blocks:
		return b
	default:
		return new(observationBlock)
	}
}

// releaseBlock keeps b for a later insert, unless enough are kept already.
func (s *Store) releaseBlock(b *observationBlock) {
	b.reset()
	select {
	case s.blocks <- b:
	default:
	}
}

// Send ends the insert and returns how many rows it wrote.
func (ins *ObservationInsert) Send() (int, error) {
	if err := ins.conn.finish(); err != nil {
		return 0, fmt.Errorf("insert %d observations: %w", ins.rows, unavailable(err))
	}
	ins.sent = true
	return ins.rows, nil
}

// Close releases the insert; one not sent is abandoned, and so is its
// connection, which the server has not finished with.
func (ins *ObservationInsert) Close() {
	watching := ins.stop()
	ins.cancel()
	if ins.sent && watching {
		_ = ins.conn.conn.SetDeadline(time.Time{})
		ins.s.native.put(ins.conn)
		return
	}
	_ = ins.conn.conn.Close()
}
