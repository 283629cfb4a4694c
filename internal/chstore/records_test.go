package chstore

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/model"
)

func recordObservations() []model.Observation {
	return []model.Observation{{
		ProjectID: "p", TraceID: "0123456789abcdef0123456789abcdef", ID: "0123456789abcdef", ParentID: "fedcba9876543210",
		Type: model.TypeGeneration, Name: "chat", StartTime: 1_764_000_000_123_456, EndTime: 1_764_000_001_000_000,
		CompletionStartTime: 1_764_000_000_500_000, Level: model.LevelWarning, StatusMessage: "slow",
		Input: `{"q":"ünïcode"}`, Output: "plain", Model: "gpt-4o", ModelParameters: `{"temperature":0}`,
		UsageDetails: map[string]int64{"output": 7, "input": 12}, CostDetails: map[string]float64{"output": 0.5, "input": 0.25},
		PromptName: "greet", PromptVersion: -3, Environment: "prod", Release: "r1", Version: "v2",
		TraceName: "t", UserID: "u", SessionID: "s", Tags: []string{"b", "a"}, Public: true,
		TraceInput: "ti", TraceOutput: "to", IsRoot: true, ServiceName: "svc", ScopeName: "sc", ScopeVersion: "1",
		SampleRate: 0.25,
		Experiment: model.Experiment{ID: "e", Name: "en", DatasetID: "d", ItemID: "i", ItemRootID: "r",
			Description: "desc", Metadata: "{}", ItemMetadata: `{"k":1}`, ItemExpectedOutput: `"x"`},
	}, {ProjectID: "p", TraceID: "t2", ID: "s2", Input: "same", Output: "out", TraceInput: "same", TraceOutput: "out2"}}
}

// readBlock encodes b for a table whose LowCardinality columns lc marks and
// reads the block back with ch-go's decoders, an implementation of the Native
// format apart from ours: each column's values by name.
func readBlock(t *testing.T, b *observationBlock, lc *[numObservationColumns]bool) (int, map[string]any) {
	t.Helper()
	var ins ObservationInsert
	var header []nativeColumnHeader
	for i, col := range observationInsertKinds {
		typ := col.kind.typ()
		if lc[i] {
			typ = "LowCardinality(String)"
		}
		header = append(header, nativeColumnHeader{col.name, typ})
	}
	require.NoError(t, ins.readHeader(header))
	r := chproto.NewReader(bytes.NewReader(b.encode(nil, &ins.heads)))
	cols, err := r.UVarInt()
	require.NoError(t, err)
	require.Equal(t, uint64(numObservationColumns), cols)
	rows, err := r.UVarInt()
	require.NoError(t, err)
	got := map[string]any{}
	for range cols {
		name, err := r.Str()
		require.NoError(t, err)
		typ, err := r.Str()
		require.NoError(t, err)
		var col chproto.ColAuto
		require.NoError(t, col.Infer(chproto.ColumnType(typ)), typ)
		if s, ok := col.Data.(chproto.StateDecoder); ok && rows > 0 { // an empty block has no column data
			require.NoError(t, s.DecodeState(r), name)
		}
		require.NoError(t, col.DecodeColumn(r, int(rows)), name)
		got[name] = columnValues(t, col.Data)
	}
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "nothing after the last column")
	return int(rows), got
}

func rowsOf[T any](c chproto.ColumnOf[T]) []T {
	out := make([]T, c.Rows())
	for i := range out {
		out[i] = c.Row(i)
	}
	return out
}

func columnValues(t *testing.T, col chproto.ColResult) any {
	switch c := col.(type) {
	case chproto.ColumnOf[string]:
		return rowsOf(c)
	case chproto.ColumnOf[int64]:
		return rowsOf(c)
	case chproto.ColumnOf[uint64]:
		return rowsOf(c)
	case chproto.ColumnOf[uint8]:
		return rowsOf(c)
	case chproto.ColumnOf[float64]:
		return rowsOf(c)
	case chproto.ColumnOf[time.Time]:
		var secs []int64
		for _, v := range rowsOf(c) {
			secs = append(secs, v.Unix())
		}
		return secs
	case chproto.ColumnOf[[]string]:
		return rowsOf(c)
	case chproto.ColumnOf[[]int64]:
		return rowsOf(c)
	case chproto.ColumnOf[[]float64]:
		return rowsOf(c)
	}
	t.Fatalf("column type %T", col)
	return nil
}

func TestRecordDecodesIntoEveryColumn(t *testing.T) {
	rec := AppendObservationRecord(nil, recordObservations())
	want := map[string]any{
		"project_id": []string{"p", "p"}, "trace_id": []string{"0123456789abcdef0123456789abcdef", "t2"},
		"id": []string{"0123456789abcdef", "s2"}, "parent_id": []string{"fedcba9876543210", ""},
		"type": []string{"GENERATION", ""}, "name": []string{"chat", ""},
		"start_time": []int64{1_764_000_000, 0}, "start_time_us": []int64{1_764_000_000_123_456, 0},
		"end_time_us": []int64{1_764_000_001_000_000, 0}, "completion_start_time_us": []int64{1_764_000_000_500_000, 0},
		"level": []string{"WARNING", ""}, "status_message": []string{"slow", ""},
		"input": []string{`{"q":"ünïcode"}`, ""}, "output": []string{"plain", "out"},
		"metadata": []string{"{}", "{}"}, "model": []string{"gpt-4o", ""}, "model_parameters": []string{`{"temperature":0}`, ""},
		"usage_keys": [][]string{{"input", "output"}, nil}, "usage_values": [][]int64{{12, 7}, nil},
		"cost_keys": [][]string{{"input", "output"}, nil}, "cost_values": [][]float64{{0.25, 0.5}, nil},
		"total_cost": []float64{0.75, 0}, "prompt_name": []string{"greet", ""}, "prompt_version": []int64{-3, 0},
		"environment": []string{"prod", ""}, "release": []string{"r1", ""}, "version": []string{"v2", ""},
		"trace_name": []string{"t", ""}, "user_id": []string{"u", ""}, "session_id": []string{"s", ""},
		"tags": [][]string{{"b", "a"}, nil}, "public": []uint8{1, 0}, "trace_metadata": []string{"{}", "{}"},
		"trace_input": []string{"ti", "same"}, "trace_output": []string{"to", "out2"}, "is_root": []uint8{1, 0},
		"input_is_trace_input": []uint8{0, 1}, "output_is_trace_output": []uint8{0, 0},
		"service_name": []string{"svc", ""}, "scope_name": []string{"sc", ""}, "scope_version": []string{"1", ""},
		"sample_rate": []float64{0.25, 0}, "event_ts": []uint64{42, 42},
		"experiment_id": []string{"e", ""}, "experiment_name": []string{"en", ""}, "experiment_dataset_id": []string{"d", ""},
		"experiment_item_id": []string{"i", ""}, "experiment_item_root_id": []string{"r", ""},
		"experiment_description": []string{"desc", ""}, "experiment_metadata": []string{"{}", ""},
		"experiment_item_metadata": []string{`{"k":1}`, ""}, "experiment_item_expected_output": []string{`"x"`, ""},
	}
	var none, schema [numObservationColumns]bool
	for i, col := range observationInsertKinds {
		schema[i] = col.kind == colString && !strings.Contains("input output trace_input trace_output", col.name)
	}
	for name, lc := range map[string]*[numObservationColumns]bool{"String columns": &none, "LowCardinality columns": &schema} {
		var b observationBlock
		b.setLowCardinality(lc)
		require.NoError(t, b.decode(rec, 42))
		rows, got := readBlock(t, &b, lc)
		assert.Equal(t, 2, rows, name)
		assert.Equal(t, want, got, name)

		b.reset()
		require.NoError(t, b.decode(rec, 42))
		rows, got = readBlock(t, &b, lc)
		assert.Equal(t, 2, rows, "a reset block holds only the next records")
		assert.Equal(t, want, got, "%s after reset", name)
	}
}

// A LowCardinality column's keys widen with its dictionary.
func TestLowCardinalityKeysWiden(t *testing.T) {
	var lc [numObservationColumns]bool
	lc[cModel] = true
	for _, distinct := range []int{1, 255, 256, 300, 70_000} {
		var b observationBlock
		b.setLowCardinality(&lc)
		var models []string
		for i := range 2 * distinct {
			o := model.Observation{ProjectID: "p", TraceID: "t", ID: "s", Model: fmt.Sprintf("m%d", i%distinct)}
			require.NoError(t, b.decode(AppendObservationRecord(nil, []model.Observation{o}), 1))
			models = append(models, o.Model)
		}
		_, got := readBlock(t, &b, &lc)
		assert.Equal(t, models, got["model"], "%d distinct", distinct)
	}
}

func TestCorruptRecordsAreRefused(t *testing.T) {
	rec := AppendObservationRecord(nil, recordObservations())
	for name, bad := range map[string][]byte{
		"empty":          {},
		"unknown layout": append([]byte{9}, rec[1:]...),
		"truncated":      rec[:len(rec)-3],
		"trailing bytes": append(append([]byte{}, rec...), 0),
		"huge count":     {recordV1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		var b observationBlock
		assert.ErrorIs(t, b.decode(bad, 1), errRecord, name)
	}
}

// FuzzRecordDecode checks that no input makes the decoder panic or allocate
// without bound, and that what it accepts has one value per row in each column.
func FuzzRecordDecode(f *testing.F) {
	f.Add(AppendObservationRecord(nil, recordObservations()))
	f.Add([]byte{recordV1, 1})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var b observationBlock
		var lc [numObservationColumns]bool
		lc[cModel] = true
		b.setLowCardinality(&lc)
		if b.decode(rec, 1) != nil {
			return
		}
		assert.LessOrEqual(t, b.rows, len(rec))
		rows, cols := readBlock(t, &b, &lc)
		assert.Equal(t, b.rows, rows)
		for name, values := range cols {
			assert.Equal(t, b.rows, reflect.ValueOf(values).Len(), name)
		}
	})
}

func TestARootSpansTraceInputIsWrittenOnce(t *testing.T) {
	io := strings.Repeat("a long prompt ", 100)
	root := model.Observation{ProjectID: "p", TraceID: "t", ID: "s", IsRoot: true, Input: io, Output: io, TraceInput: io, TraceOutput: io}
	rec := AppendObservationRecord(nil, []model.Observation{root})
	assert.Less(t, len(rec), 2*len(io)+200, "input and output once each")
	var b observationBlock
	require.NoError(t, b.decode(rec, 1))
	_, got := readBlock(t, &b, new([numObservationColumns]bool))
	assert.Equal(t, []string{io}, got["trace_input"], "stored once, as the trace's")
	assert.Equal(t, []string{io}, got["trace_output"])
	assert.Equal(t, []string{""}, got["input"])
	assert.Equal(t, []string{""}, got["output"])
	assert.Equal(t, []uint8{1}, got["input_is_trace_input"])
	assert.Equal(t, []uint8{1}, got["output_is_trace_output"])
}

// BenchmarkDecodeRecord decodes a record of 200 observations into a reused
// block and encodes it, as each Add of an insert does.
func BenchmarkDecodeRecord(b *testing.B) {
	var obs []model.Observation
	for range 100 {
		obs = append(obs, recordObservations()...)
	}
	rec := AppendObservationRecord(nil, obs)
	var blk observationBlock
	var lc [numObservationColumns]bool
	for _, i := range []int{cType, cLevel, cModel, cEnvironment, cServiceName} {
		lc[i] = true
	}
	blk.setLowCardinality(&lc)
	var heads [numObservationColumns][]byte
	var out []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if err := blk.decode(rec, 1); err != nil {
			b.Fatal(err)
		}
		out = blk.encode(out[:0], &heads)
		blk.reset()
	}
}

// BenchmarkEncodeRecord encodes 200 observations into a reused record, as
// the exporter does for each request before it queues it.
func BenchmarkEncodeRecord(b *testing.B) {
	var obs []model.Observation
	for range 100 {
		obs = append(obs, recordObservations()...)
	}
	var rec []byte
	b.ReportAllocs()
	for b.Loop() {
		rec = AppendObservationRecord(rec[:0], obs)
	}
	b.SetBytes(int64(len(rec)))
}
