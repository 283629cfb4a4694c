package chstore

import (
	"reflect"
	"strings"
	"testing"

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

func TestRecordDecodesIntoEveryColumn(t *testing.T) {
	rec := AppendObservationRecord(nil, recordObservations())
	var c observationBatch
	require.NoError(t, c.decode(rec, 42))
	require.Equal(t, 2, c.rows)
	got := map[string]any{}
	for _, col := range c.columns() {
		got[col.name] = col.values
	}
	assert.Equal(t, observationInsertColumns, func() (names []string) {
		for _, col := range c.columns() {
			names = append(names, col.name)
		}
		return names
	}())
	want := map[string]any{
		"project_id": []string{"p", "p"}, "trace_id": []string{"0123456789abcdef0123456789abcdef", "t2"},
		"id": []string{"0123456789abcdef", "s2"}, "parent_id": []string{"fedcba9876543210", ""},
		"type": []string{"GENERATION", ""}, "name": []string{"chat", ""},
		"start_time": []int64{1_764_000_000, 0}, "start_time_us": []int64{1_764_000_000_123_456, 0},
		"end_time_us": []int64{1_764_000_001_000_000, 0}, "completion_start_time_us": []int64{1_764_000_000_500_000, 0},
		"level": []string{"WARNING", ""}, "status_message": []string{"slow", ""},
		"input": []string{`{"q":"ünïcode"}`, ""}, "output": []string{"plain", "out"},
		"metadata": []string{"{}", "{}"}, "model": []string{"gpt-4o", ""}, "model_parameters": []string{`{"temperature":0}`, ""},
		"usage_keys": [][]string{{"input", "output"}, {}}, "usage_values": [][]int64{{12, 7}, {}},
		"cost_keys": [][]string{{"input", "output"}, {}}, "cost_values": [][]float64{{0.25, 0.5}, {}},
		"total_cost": []float64{0.75, 0}, "prompt_name": []string{"greet", ""}, "prompt_version": []int64{-3, 0},
		"environment": []string{"prod", ""}, "release": []string{"r1", ""}, "version": []string{"v2", ""},
		"trace_name": []string{"t", ""}, "user_id": []string{"u", ""}, "session_id": []string{"s", ""},
		"tags": [][]string{{"b", "a"}, {}}, "public": []uint8{1, 0}, "trace_metadata": []string{"{}", "{}"},
		"trace_input": []string{"ti", "same"}, "trace_output": []string{"to", "out2"}, "is_root": []uint8{1, 0},
		"input_is_trace_input": []uint8{0, 1}, "output_is_trace_output": []uint8{0, 0},
		"service_name": []string{"svc", ""}, "scope_name": []string{"sc", ""}, "scope_version": []string{"1", ""},
		"sample_rate": []float64{0.25, 0}, "event_ts": []uint64{42, 42},
		"experiment_id": []string{"e", ""}, "experiment_name": []string{"en", ""}, "experiment_dataset_id": []string{"d", ""},
		"experiment_item_id": []string{"i", ""}, "experiment_item_root_id": []string{"r", ""},
		"experiment_description": []string{"desc", ""}, "experiment_metadata": []string{"{}", ""},
		"experiment_item_metadata": []string{`{"k":1}`, ""}, "experiment_item_expected_output": []string{`"x"`, ""},
	}
	assert.Equal(t, want, got)

	c.reset()
	require.NoError(t, c.decode(rec, 1))
	assert.Equal(t, 2, c.rows, "a reset batch holds only the next records")
	assert.Len(t, c.projectID, 2)
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
		var c observationBatch
		assert.ErrorIs(t, c.decode(bad, 1), errRecord, name)
	}
}

// FuzzRecordDecode checks that no input makes the decoder panic or allocate
// without bound, and that what it accepts has one value per row in each column.
func FuzzRecordDecode(f *testing.F) {
	f.Add(AppendObservationRecord(nil, recordObservations()))
	f.Add([]byte{recordV1, 1})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var c observationBatch
		if c.decode(rec, 1) != nil {
			return
		}
		assert.LessOrEqual(t, c.rows, len(rec))
		for _, col := range c.columns() {
			assert.Equal(t, c.rows, reflect.ValueOf(col.values).Len(), col.name)
		}
	})
}

func TestARootSpansTraceInputIsWrittenOnce(t *testing.T) {
	io := strings.Repeat("a long prompt ", 100)
	root := model.Observation{ProjectID: "p", TraceID: "t", ID: "s", IsRoot: true, Input: io, Output: io, TraceInput: io, TraceOutput: io}
	rec := AppendObservationRecord(nil, []model.Observation{root})
	assert.Less(t, len(rec), 2*len(io)+200, "input and output once each")
	var c observationBatch
	require.NoError(t, c.decode(rec, 1))
	assert.Equal(t, []string{io}, c.traceInput, "stored once, as the trace's")
	assert.Equal(t, []string{io}, c.traceOutput)
	assert.Equal(t, []string{""}, c.input)
	assert.Equal(t, []string{""}, c.output)
	assert.Equal(t, []uint8{1}, c.inputIsTraceInput)
	assert.Equal(t, []uint8{1}, c.outputIsTraceOutput)
}

// BenchmarkDecodeRecord decodes a record of 200 observations into a pooled
// batch's columns, as each block of an insert does.
func BenchmarkDecodeRecord(b *testing.B) {
	var obs []model.Observation
	for range 100 {
		obs = append(obs, recordObservations()...)
	}
	rec := AppendObservationRecord(nil, obs)
	var c observationBatch
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if err := c.decode(rec, 1); err != nil {
			b.Fatal(err)
		}
		c.reset()
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
