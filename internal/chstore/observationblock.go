package chstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// colKind is how a stored column is laid out in a Native block.
type colKind uint8

const (
	colString colKind = iota // String, or LowCardinality(String) where the table declares it
	colInt64
	colUInt64
	colFloat64
	colUInt8
	colDateTime
	colStrings  // Array(String)
	colInt64s   // Array(Int64)
	colFloat64s // Array(Float64)
)

// typ is the ClickHouse type the schema gives a column of this kind.
func (k colKind) typ() string {
	return [...]string{
		colString: "String", colInt64: "Int64", colUInt64: "UInt64", colFloat64: "Float64", colUInt8: "UInt8",
		colDateTime: "DateTime", colStrings: "Array(String)", colInt64s: "Array(Int64)", colFloat64s: "Array(Float64)",
	}[k]
}

// accepts reports whether a column of this kind can be sent as the server's
// type, as the insert's header declares it: its own, a LowCardinality string
// or a DateTime with a time zone.
func (k colKind) accepts(typ string) bool {
	switch {
	case typ == k.typ():
		return true
	case k == colString:
		return typ == "LowCardinality(String)"
	case k == colDateTime:
		return strings.HasPrefix(typ, "DateTime(")
	}
	return false
}

// The observations table's columns, in insert order.
const (
	cProjectID = iota
	cTraceID
	cID
	cParentID
	cType
	cName
	cStartTime
	cStartUs
	cEndUs
	cCompletionStartUs
	cLevel
	cStatusMessage
	cInput
	cOutput
	cMetadata
	cModel
	cModelParameters
	cUsageKeys
	cUsageValues
	cCostKeys
	cCostValues
	cTotalCost
	cPromptName
	cPromptVersion
	cEnvironment
	cRelease
	cVersion
	cTraceName
	cUserID
	cSessionID
	cTags
	cPublic
	cTraceMetadata
	cTraceInput
	cTraceOutput
	cInputIsTraceInput
	cOutputIsTraceOutput
	cIsRoot
	cServiceName
	cScopeName
	cScopeVersion
	cSampleRate
	cEventTs
	cExperiment           // the experiment columns, in experimentInsertColumns order
	numObservationColumns = cExperiment + 9
)

// observationInsertKinds names each column and its kind; the insert statement
// and the block follow it.
var observationInsertKinds = func() [numObservationColumns]struct {
	name string
	kind colKind
} {
	cols := [numObservationColumns]struct {
		name string
		kind colKind
	}{
		cProjectID: {"project_id", colString}, cTraceID: {"trace_id", colString}, cID: {"id", colString},
		cParentID: {"parent_id", colString}, cType: {"type", colString}, cName: {"name", colString},
		cStartTime: {"start_time", colDateTime}, cStartUs: {"start_time_us", colInt64},
		cEndUs: {"end_time_us", colInt64}, cCompletionStartUs: {"completion_start_time_us", colInt64},
		cLevel: {"level", colString}, cStatusMessage: {"status_message", colString},
		cInput: {"input", colString}, cOutput: {"output", colString}, cMetadata: {"metadata", colString},
		cModel: {"model", colString}, cModelParameters: {"model_parameters", colString},
		cUsageKeys: {"usage_keys", colStrings}, cUsageValues: {"usage_values", colInt64s},
		cCostKeys: {"cost_keys", colStrings}, cCostValues: {"cost_values", colFloat64s},
		cTotalCost: {"total_cost", colFloat64}, cPromptName: {"prompt_name", colString},
		cPromptVersion: {"prompt_version", colInt64}, cEnvironment: {"environment", colString},
		cRelease: {"release", colString}, cVersion: {"version", colString}, cTraceName: {"trace_name", colString},
		cUserID: {"user_id", colString}, cSessionID: {"session_id", colString}, cTags: {"tags", colStrings},
		cPublic: {"public", colUInt8}, cTraceMetadata: {"trace_metadata", colString},
		cTraceInput: {"trace_input", colString}, cTraceOutput: {"trace_output", colString},
		cInputIsTraceInput: {"input_is_trace_input", colUInt8}, cOutputIsTraceOutput: {"output_is_trace_output", colUInt8},
		cIsRoot: {"is_root", colUInt8}, cServiceName: {"service_name", colString},
		cScopeName: {"scope_name", colString}, cScopeVersion: {"scope_version", colString},
		cSampleRate: {"sample_rate", colFloat64}, cEventTs: {"event_ts", colUInt64},
	}
	for i, name := range experimentInsertColumns {
		cols[cExperiment+i].name = name
	}
	return cols
}()

// observationBlock builds one Native block of the observations table from
// records. A record holds a string as a Native String column does, a varint
// length and the bytes, so a string goes into its column in one copy.
type observationBlock struct {
	rows int
	cols [numObservationColumns]nativeColumn
}

// nativeColumn is one column of a block being built.
type nativeColumn struct {
	data    []byte // the values, or an array's elements, in the Native layout
	offsets []byte // an array's row ends, a UInt64 each
	elems   uint64 // an array's elements so far
	last    int    // where the last row's value starts in data
	// dict is set while the column is LowCardinality(String); data is unused.
	dict *lowCardinality
}

// lowCardinality builds a LowCardinality(String) column: a dictionary of the
// block's distinct values and each row's position in it.
type lowCardinality struct {
	// position points into the records the block was built from, which stay
	// unchanged until the block is sent; reset clears it.
	position map[string]uint32
	values   []byte // the dictionary, as a String column
	keys     []uint32
}

// The LowCardinality serialization (ClickHouse's SerializationLowCardinality).
const (
	lowCardinalitySharedDictionaries = 1 // version: dictionaries with additional keys
	lowCardinalityKeysUInt8          = 0
	lowCardinalityKeysUInt16         = 1
	lowCardinalityKeysUInt32         = 2
	lowCardinalityHasAdditionalKeys  = 1 << 9
	lowCardinalityNeedUpdate         = 1 << 10
)

// setLowCardinality makes the string columns marked in lc
// LowCardinality(String) columns and the others String ones.
func (b *observationBlock) setLowCardinality(lc *[numObservationColumns]bool) {
	for i := range b.cols {
		switch c := &b.cols[i]; {
		case !lc[i]:
			c.dict = nil
		case c.dict == nil:
			c.dict = &lowCardinality{position: map[string]uint32{}}
			c.dict.reset()
		}
	}
}

// reset empties the block and keeps its buffers for the next one.
func (b *observationBlock) reset() {
	b.rows = 0
	for i := range b.cols {
		c := &b.cols[i]
		c.data, c.offsets, c.elems, c.last = c.data[:0], c.offsets[:0], 0, 0
		if c.dict != nil {
			c.dict.reset()
		}
	}
}

// reset empties the dictionary but for the empty string, the type's default
// value, which the server's dictionaries hold first.
func (d *lowCardinality) reset() {
	clear(d.position)
	d.position[""] = 0
	d.values = append(d.values[:0], 0)
	d.keys = d.keys[:0]
}

// decode appends the rows of one record, stamped with the version eventTs.
// On an error the block is left part-way and must not be sent.
func (b *observationBlock) decode(rec []byte, eventTs uint64) error {
	d := recordReader{b: rec}
	if v := d.byte(); v != recordV1 {
		return fmt.Errorf("%w: layout version %d", errRecord, v)
	}
	n := d.uvarint()
	for ; n > 0 && d.err == nil; n-- {
		b.decodeRow(&d, eventTs)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after the last row", errRecord, len(d.b))
	}
	return d.err
}

func (b *observationBlock) decodeRow(d *recordReader, eventTs uint64) {
	b.rows++
	c := &b.cols
	for _, i := range [...]int{cProjectID, cTraceID, cID, cParentID, cType, cName} {
		c[i].appendString(d.string())
	}
	start := d.varint()
	c[cStartTime].appendUint32(uint32(min(max(start/1e6, 0), math.MaxUint32))) //nolint:gosec // clamped
	c[cStartUs].appendUint64(uint64(start))                                    //nolint:gosec // two's complement, as Int64
	c[cEndUs].appendUint64(uint64(d.varint()))                                 //nolint:gosec // as Int64
	c[cCompletionStartUs].appendUint64(uint64(d.varint()))                     //nolint:gosec // as Int64
	for _, i := range [...]int{cLevel, cStatusMessage, cInput, cOutput, cMetadata, cModel, cModelParameters} {
		c[i].appendString(d.string())
	}
	n := d.count()
	for range n {
		c[cUsageKeys].appendElement(d.string())
		c[cUsageValues].appendUint64(uint64(d.varint())) //nolint:gosec // as Int64
	}
	c[cUsageKeys].endArray(n)
	c[cUsageValues].endArray(n)
	n = d.count()
	for range n {
		c[cCostKeys].appendElement(d.string())
		c[cCostValues].data = append(c[cCostValues].data, d.fixed64()...)
	}
	c[cCostKeys].endArray(n)
	c[cCostValues].endArray(n)
	c[cTotalCost].data = append(c[cTotalCost].data, d.fixed64()...)
	c[cPromptName].appendString(d.string())
	c[cPromptVersion].appendUint64(uint64(d.varint())) //nolint:gosec // as Int64
	for _, i := range [...]int{cEnvironment, cRelease, cVersion, cTraceName, cUserID, cSessionID} {
		c[i].appendString(d.string())
	}
	n = d.count()
	for range n {
		c[cTags].appendElement(d.string())
	}
	c[cTags].endArray(n)
	c[cPublic].data = append(c[cPublic].data, d.byte())
	c[cTraceMetadata].appendString(d.string())
	b.decodeCopy(d, cTraceInput, cInput, cInputIsTraceInput)
	b.decodeCopy(d, cTraceOutput, cOutput, cOutputIsTraceOutput)
	c[cIsRoot].data = append(c[cIsRoot].data, d.byte())
	for _, i := range [...]int{cServiceName, cScopeName, cScopeVersion} {
		c[i].appendString(d.string())
	}
	c[cSampleRate].data = append(c[cSampleRate].data, d.fixed64()...)
	c[cEventTs].appendUint64(eventTs)
	for i := range experimentInsertColumns {
		c[cExperiment+i].appendString(d.string())
	}
}

// decodeCopy reads what appendCopy wrote into the row's trace field. Text
// marked the same as the row's own field moves from that column to the
// trace's, leaving the row's own empty and its flag set.
func (b *observationBlock) decodeCopy(d *recordReader, trace, own, flag int) {
	c := &b.cols
	switch d.byte() {
	case fieldOwn:
		c[trace].appendString(d.string())
		c[flag].data = append(c[flag].data, 0)
		return
	case fieldSame:
		o := &c[own]
		c[trace].last = len(c[trace].data)
		c[trace].data = append(c[trace].data, o.data[o.last:]...)
		o.data = append(o.data[:o.last], 0)
		c[flag].data = append(c[flag].data, 1)
		return
	}
	if d.err == nil {
		d.err = fmt.Errorf("%w: unknown field mark", errRecord)
	}
	d.b = nil
}

// appendString appends one row's string, s as recordReader.string returns
// it: the varint length and the bytes.
func (c *nativeColumn) appendString(s []byte) {
	if c.dict == nil {
		c.last = len(c.data)
		c.data = append(c.data, s...)
		return
	}
	c.dict.add(s)
}

func (d *lowCardinality) add(s []byte) {
	_, n := binary.Uvarint(s)
	text := unsafe.String(unsafe.SliceData(s[n:]), len(s)-n) //nolint:gosec // the records are not written while the block lives
	pos, ok := d.position[text]
	if !ok {
		pos = uint32(len(d.position)) //nolint:gosec // at most a block's rows
		d.position[text] = pos
		d.values = append(d.values, s...)
	}
	d.keys = append(d.keys, pos)
}

// appendElement appends a string to an array row being built.
func (c *nativeColumn) appendElement(s []byte) {
	c.data = append(c.data, s...)
}

// endArray ends an array row of n elements.
func (c *nativeColumn) endArray(n int) {
	c.elems += uint64(n) //nolint:gosec // a count
	c.offsets = binary.LittleEndian.AppendUint64(c.offsets, c.elems)
}

func (c *nativeColumn) appendUint64(v uint64) {
	c.data = binary.LittleEndian.AppendUint64(c.data, v)
}

func (c *nativeColumn) appendUint32(v uint32) {
	c.data = binary.LittleEndian.AppendUint32(c.data, v)
}

// encode appends the block's column count, row count and columns, each
// after its head (name and type, from the insert's header).
func (b *observationBlock) encode(out []byte, heads *[numObservationColumns][]byte) []byte {
	out = binary.AppendUvarint(out, numObservationColumns)
	out = binary.AppendUvarint(out, uint64(b.rows)) //nolint:gosec // a count
	for i := range b.cols {
		c := &b.cols[i]
		out = append(out, heads[i]...)
		if b.rows == 0 {
			continue // an empty block has no column data, not even a dictionary's
		}
		if c.dict != nil {
			out = c.dict.encode(out)
			continue
		}
		out = append(out, c.offsets...)
		out = append(out, c.data...)
	}
	return out
}

// encode appends the column's serialization state (its version) and its
// one granule: the dictionary, then each row's key in the narrowest width
// that holds the dictionary's size.
func (d *lowCardinality) encode(out []byte) []byte {
	le := binary.LittleEndian
	out = le.AppendUint64(out, lowCardinalitySharedDictionaries)
	width := uint64(lowCardinalityKeysUInt32)
	switch n := len(d.position); {
	case n <= math.MaxUint8+1:
		width = lowCardinalityKeysUInt8
	case n <= math.MaxUint16+1:
		width = lowCardinalityKeysUInt16
	}
	out = le.AppendUint64(out, width|lowCardinalityHasAdditionalKeys|lowCardinalityNeedUpdate)
	out = le.AppendUint64(out, uint64(len(d.position)))
	out = append(out, d.values...)
	out = le.AppendUint64(out, uint64(len(d.keys)))
	for _, k := range d.keys {
		switch width {
		case lowCardinalityKeysUInt8:
			out = append(out, uint8(k)) //nolint:gosec // fits the width
		case lowCardinalityKeysUInt16:
			out = le.AppendUint16(out, uint16(k)) //nolint:gosec // fits the width
		default:
			out = le.AppendUint32(out, k)
		}
	}
	return out
}
