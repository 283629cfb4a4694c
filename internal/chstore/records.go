package chstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

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

// observationBatch holds decoded rows column by column, the shape a
// columnar insert takes. Its strings point into the records they were decoded
// from, which must stay unchanged until the insert is sent.
type observationBatch struct {
	rows int

	projectID, traceID, id, parentID, typ, name []string
	startTime                                   []int64 // seconds, for the DateTime column
	startUs, endUs, completionStartUs           []int64
	level, statusMessage, input, output         []string
	metadata, model, modelParameters            []string
	usageKeys, costKeys                         [][]string
	usageValues                                 [][]int64
	costValues                                  [][]float64
	totalCost                                   []float64
	promptName                                  []string
	promptVersion                               []int64
	environment, release, version               []string
	traceName, userID, sessionID                []string
	tags                                        [][]string
	public, isRoot                              []uint8
	traceMetadata, traceInput, traceOutput      []string
	inputIsTraceInput, outputIsTraceOutput      []uint8
	serviceName, scopeName, scopeVersion        []string
	sampleRate                                  []float64
	eventTs                                     []uint64
	experiment                                  [9][]string

	// The rows' arrays (usage, cost, tags) are carved from these, so that
	// decoding a row allocates nothing of its own.
	stringArena []string
	intArena    []int64
	floatArena  []float64
}

// carve returns the next n elements of arena, growing it when full; what
// was carved before stays valid (a grown arena leaves it in the old array).
func carve[T any](arena *[]T, n int) []T {
	if n == 0 {
		return []T{}
	}
	start := len(*arena)
	*arena = slices.Grow(*arena, n)[:start+n]
	return (*arena)[start : start+n : start+n]
}

// columns lists every stored column with the slice that holds it, in insert
// order: the one list the insert statement and the appends follow.
func (c *observationBatch) columns() []struct {
	name   string
	values any
} {
	type col = struct {
		name   string
		values any
	}
	cols := []col{
		{"project_id", c.projectID}, {"trace_id", c.traceID}, {"id", c.id}, {"parent_id", c.parentID},
		{"type", c.typ}, {"name", c.name},
		{"start_time", c.startTime}, {"start_time_us", c.startUs}, {"end_time_us", c.endUs},
		{"completion_start_time_us", c.completionStartUs},
		{"level", c.level}, {"status_message", c.statusMessage}, {"input", c.input}, {"output", c.output},
		{"metadata", c.metadata}, {"model", c.model}, {"model_parameters", c.modelParameters},
		{"usage_keys", c.usageKeys}, {"usage_values", c.usageValues},
		{"cost_keys", c.costKeys}, {"cost_values", c.costValues}, {"total_cost", c.totalCost},
		{"prompt_name", c.promptName}, {"prompt_version", c.promptVersion},
		{"environment", c.environment}, {"release", c.release}, {"version", c.version},
		{"trace_name", c.traceName}, {"user_id", c.userID}, {"session_id", c.sessionID}, {"tags", c.tags},
		{"public", c.public}, {"trace_metadata", c.traceMetadata}, {"trace_input", c.traceInput},
		{"trace_output", c.traceOutput}, {"input_is_trace_input", c.inputIsTraceInput},
		{"output_is_trace_output", c.outputIsTraceOutput}, {"is_root", c.isRoot},
		{"service_name", c.serviceName}, {"scope_name", c.scopeName}, {"scope_version", c.scopeVersion},
		{"sample_rate", c.sampleRate}, {"event_ts", c.eventTs},
	}
	for i, name := range experimentInsertColumns {
		cols = append(cols, col{name, c.experiment[i]})
	}
	return cols
}

// reset empties the batch and keeps its capacity for the next one. The
// slices are cleared, not just truncated, so that a pooled batch does not keep
// the last insert's records alive.
func (c *observationBatch) reset() {
	c.rows = 0
	for _, s := range []*[]string{
		&c.projectID, &c.traceID, &c.id, &c.parentID, &c.typ, &c.name, &c.level, &c.statusMessage,
		&c.input, &c.output, &c.metadata, &c.model, &c.modelParameters, &c.promptName, &c.environment,
		&c.release, &c.version, &c.traceName, &c.userID, &c.sessionID, &c.traceMetadata, &c.traceInput,
		&c.traceOutput, &c.serviceName, &c.scopeName, &c.scopeVersion,
		&c.experiment[0], &c.experiment[1], &c.experiment[2], &c.experiment[3], &c.experiment[4],
		&c.experiment[5], &c.experiment[6], &c.experiment[7], &c.experiment[8],
	} {
		*s = truncate(*s)
	}
	for _, s := range []*[][]string{&c.usageKeys, &c.costKeys, &c.tags} {
		*s = truncate(*s)
	}
	for _, s := range []*[]int64{&c.startTime, &c.startUs, &c.endUs, &c.completionStartUs, &c.promptVersion} {
		*s = (*s)[:0]
	}
	c.usageValues, c.costValues = truncate(c.usageValues), truncate(c.costValues)
	c.stringArena, c.intArena, c.floatArena = truncate(c.stringArena), c.intArena[:0], c.floatArena[:0]
	c.totalCost, c.sampleRate = c.totalCost[:0], c.sampleRate[:0]
	c.public, c.isRoot, c.eventTs = c.public[:0], c.isRoot[:0], c.eventTs[:0]
	c.inputIsTraceInput, c.outputIsTraceOutput = c.inputIsTraceInput[:0], c.outputIsTraceOutput[:0]
}

func truncate[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// decode appends the rows of one record, stamped with the version eventTs.
func (c *observationBatch) decode(rec []byte, eventTs uint64) error {
	d := recordReader{b: rec}
	if v := d.byte(); v != recordV1 {
		return fmt.Errorf("%w: layout version %d", errRecord, v)
	}
	n := d.uvarint()
	for ; n > 0 && d.err == nil; n-- {
		c.decodeRow(&d, eventTs)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after the last row", errRecord, len(d.b))
	}
	return d.err
}

func (c *observationBatch) decodeRow(d *recordReader, eventTs uint64) {
	c.rows++
	c.projectID = append(c.projectID, d.string())
	c.traceID = append(c.traceID, d.string())
	c.id = append(c.id, d.string())
	c.parentID = append(c.parentID, d.string())
	c.typ = append(c.typ, d.string())
	c.name = append(c.name, d.string())
	start := d.varint()
	c.startTime = append(c.startTime, start/1e6)
	c.startUs = append(c.startUs, start)
	c.endUs = append(c.endUs, d.varint())
	c.completionStartUs = append(c.completionStartUs, d.varint())
	c.level = append(c.level, d.string())
	c.statusMessage = append(c.statusMessage, d.string())
	c.input = append(c.input, d.string())
	c.output = append(c.output, d.string())
	c.metadata = append(c.metadata, d.string())
	c.model = append(c.model, d.string())
	c.modelParameters = append(c.modelParameters, d.string())
	n := d.count()
	keys, values := carve(&c.stringArena, n), carve(&c.intArena, n)
	for i := range n {
		keys[i], values[i] = d.string(), d.varint()
	}
	c.usageKeys, c.usageValues = append(c.usageKeys, keys), append(c.usageValues, values)
	n = d.count()
	keys, costs := carve(&c.stringArena, n), carve(&c.floatArena, n)
	for i := range n {
		keys[i], costs[i] = d.string(), d.float()
	}
	c.costKeys, c.costValues = append(c.costKeys, keys), append(c.costValues, costs)
	c.totalCost = append(c.totalCost, d.float())
	c.promptName = append(c.promptName, d.string())
	c.promptVersion = append(c.promptVersion, d.varint())
	c.environment = append(c.environment, d.string())
	c.release = append(c.release, d.string())
	c.version = append(c.version, d.string())
	c.traceName = append(c.traceName, d.string())
	c.userID = append(c.userID, d.string())
	c.sessionID = append(c.sessionID, d.string())
	tags := carve(&c.stringArena, d.count())
	for i := range tags {
		tags[i] = d.string()
	}
	c.tags = append(c.tags, tags)
	c.public = append(c.public, d.byte())
	c.traceMetadata = append(c.traceMetadata, d.string())
	c.traceInput, c.inputIsTraceInput = d.copy(c.traceInput, c.input, c.inputIsTraceInput)
	c.traceOutput, c.outputIsTraceOutput = d.copy(c.traceOutput, c.output, c.outputIsTraceOutput)
	c.isRoot = append(c.isRoot, d.byte())
	c.serviceName = append(c.serviceName, d.string())
	c.scopeName = append(c.scopeName, d.string())
	c.scopeVersion = append(c.scopeVersion, d.string())
	c.sampleRate = append(c.sampleRate, d.float())
	c.eventTs = append(c.eventTs, eventTs)
	for i := range c.experiment {
		c.experiment[i] = append(c.experiment[i], d.string())
	}
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

func (d *recordReader) float() float64 {
	if len(d.b) < 8 {
		d.fail("float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// copy reads what appendCopy wrote into the row's trace field, appending to
// trace. Text marked the same as the row's own field, the last of own, moves
// to trace, leaving own empty and the row's flag set.
func (d *recordReader) copy(trace, own []string, flags []uint8) ([]string, []uint8) {
	switch d.byte() {
	case fieldOwn:
		return append(trace, d.string()), append(flags, 0)
	case fieldSame:
		last := len(own) - 1
		text := own[last]
		own[last] = ""
		return append(trace, text), append(flags, 1)
	}
	if d.err == nil {
		d.err = fmt.Errorf("%w: unknown field mark", errRecord)
	}
	d.b = nil
	return append(trace, ""), append(flags, 0)
}

// string returns the next string without copying it: the insert copies it
// into the driver's column buffer, and copying here as well would double the
// allocations of the whole write path.
func (d *recordReader) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.b[0], int(n)) //nolint:gosec // d.b is not written while the batch that holds s lives
	d.b = d.b[n:]
	return s
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
	batch    driver.Batch
	detach   func() bool
	storedAt uint64
	rows     int
	// lowCardinality marks the columns the server declared LowCardinality.
	lowCardinality []bool
}

// BeginObservationInsert starts an insert; Send ends it, Close releases it.
func (s *Store) BeginObservationInsert(ctx context.Context) (*ObservationInsert, error) {
	batch, detach, err := s.prepareInsert(ctx, s.ddl.name(observationsTable), observationInsertColumns)
	if err != nil {
		return nil, err
	}
	ins := &ObservationInsert{s: s, batch: batch, detach: detach, storedAt: uint64(time.Now().UnixMicro())}
	for _, col := range batch.Columns() {
		ins.lowCardinality = append(ins.lowCardinality, strings.HasPrefix(string(col.Type()), "LowCardinality("))
	}
	return ins, nil
}

// Add decodes records into the insert's columns and sends them as a block.
func (ins *ObservationInsert) Add(records [][]byte) error {
	c := ins.s.batches.Get().(*observationBatch)
	defer func() {
		c.reset()
		ins.s.batches.Put(c)
	}()
	for i, rec := range records {
		if err := c.decode(rec, ins.storedAt); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalid, i, err)
		}
	}
	if c.rows == 0 {
		return nil
	}
	for i, col := range c.columns() {
		if err := appendColumn(ins.batch.Column(i), ins.lowCardinality[i], col.values); err != nil {
			return fmt.Errorf("%w: column %s: %w", ErrInvalid, col.name, err)
		}
	}
	ins.rows += c.rows
	if err := ins.batch.Flush(); err != nil {
		return fmt.Errorf("insert %d observations: %w", c.rows, unavailable(err))
	}
	return nil
}

// appendColumn appends a block's values to its column. The driver takes a
// column of strings in one copy, but a LowCardinality column or a column of
// arrays by reflection, value by value; row by row, those take the driver's
// typed path instead.
func appendColumn(col driver.BatchColumn, lowCardinality bool, values any) error {
	switch rows := values.(type) {
	case []string:
		if lowCardinality {
			return appendRows(col, rows)
		}
	case [][]string:
		return appendRows(col, rows)
	case [][]int64:
		return appendRows(col, rows)
	case [][]float64:
		return appendRows(col, rows)
	}
	return col.Append(values)
}

func appendRows[T any](col driver.BatchColumn, rows []T) error {
	for _, row := range rows {
		if err := col.AppendRow(row); err != nil {
			return err
		}
	}
	return nil
}

// Send ends the insert and returns how many rows it wrote.
func (ins *ObservationInsert) Send() (int, error) {
	if err := ins.batch.Send(); err != nil {
		return 0, fmt.Errorf("insert %d observations: %w", ins.rows, unavailable(err))
	}
	return ins.rows, nil
}

// Close releases the insert; one not sent is abandoned.
func (ins *ObservationInsert) Close() {
	_ = ins.batch.Close()
	ins.detach()
}
