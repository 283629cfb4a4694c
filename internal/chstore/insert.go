package chstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// ErrInvalid marks input that can never be stored; retrying it cannot help.
var ErrInvalid = errors.New("invalid record")

// observationInsertColumns lists every stored column in Append order. 18.16
// answers an INSERT without a column list with an empty header, so the list
// is always explicit.
var observationInsertColumns = slices.Concat([]string{
	"project_id", "trace_id", "id", "parent_id", "type", "name",
	"start_time", "start_time_us", "end_time_us", "completion_start_time_us",
	"level", "status_message", "input", "output", "metadata",
	"model", "model_parameters", "usage_keys", "usage_values", "cost_keys", "cost_values", "total_cost",
	"prompt_name", "prompt_version", "environment", "release", "version",
	"trace_name", "user_id", "session_id", "tags", "public", "trace_metadata", "trace_input", "trace_output", "is_root",
	"service_name", "scope_name", "scope_version", "sample_rate", "event_ts",
}, experimentInsertColumns)

// experimentInsertColumns hold model.Experiment, in Append order.
var experimentInsertColumns = []string{
	"experiment_id", "experiment_name", "experiment_dataset_id", "experiment_item_id", "experiment_item_root_id",
	"experiment_description", "experiment_metadata", "experiment_item_metadata", "experiment_item_expected_output",
}

// ValidateObservation reports why o cannot be stored, if it cannot.
func ValidateObservation(o *model.Observation) error {
	var missing []string
	if o.ProjectID == "" {
		missing = append(missing, "project id")
	}
	if o.TraceID == "" {
		missing = append(missing, "trace id")
	}
	if o.ID == "" {
		missing = append(missing, "id")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: observation %q of trace %q lacks %s", ErrInvalid, o.ID, o.TraceID, strings.Join(missing, ", "))
	}
	return nil
}

// InsertObservations writes obs in one batch. A retried call stores the rows
// again; reads return each observation once.
func (s *Store) InsertObservations(ctx context.Context, obs []model.Observation) error {
	if len(obs) == 0 {
		return nil
	}
	for i := range obs {
		if err := ValidateObservation(&obs[i]); err != nil {
			return err
		}
	}
	storedAt := uint64(time.Now().UnixMicro())
	err := s.insert(ctx, s.ddl.name(observationsTable), observationInsertColumns, len(obs), func(i int) []any {
		o := &obs[i]
		e := &o.Experiment
		usageKeys, usageValues := sortedPairs(o.UsageDetails)
		costKeys, costValues := sortedPairs(o.CostDetails)
		tags := o.Tags
		if tags == nil {
			tags = []string{}
		}
		return []any{
			o.ProjectID, o.TraceID, o.ID, o.ParentID, o.Type, o.Name,
			time.Unix(o.StartTime/1e6, 0).UTC(), o.StartTime, o.EndTime, o.CompletionStartTime,
			o.Level, o.StatusMessage, o.Input, o.Output, jsonObject(o.Metadata),
			o.Model, o.ModelParameters, usageKeys, usageValues, costKeys, costValues, totalCost(o.CostDetails),
			o.PromptName, o.PromptVersion, o.Environment, o.Release, o.Version,
			o.TraceName, o.UserID, o.SessionID, tags, boolByte(o.Public), jsonObject(o.TraceMetadata), o.TraceInput, o.TraceOutput, boolByte(o.IsRoot),
			o.ServiceName, o.ScopeName, o.ScopeVersion, o.SampleRate, storedAt,
			e.ID, e.Name, e.DatasetID, e.ItemID, e.ItemRootID, e.Description, e.Metadata, e.ItemMetadata, e.ItemExpectedOutput,
		}
	})
	if err != nil {
		return fmt.Errorf("insert %d observations: %w", len(obs), err)
	}
	return nil
}

func insertInto(table string, columns []string) string {
	return "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ")"
}

// sortedPairs turns a map into parallel key/value arrays in key order, so that
// equal maps are stored as equal arrays.
func sortedPairs[V any](m map[string]V) ([]string, []V) {
	keys := slices.Sorted(maps.Keys(m))
	values := make([]V, len(keys))
	for i, k := range keys {
		values[i] = m[k]
	}
	return keys, values
}

// totalCost is the "total" cost entry when the source gave one, else the sum
// of the parts.
func totalCost(cost map[string]float64) float64 {
	if t, ok := cost["total"]; ok {
		return t
	}
	var sum float64
	for _, v := range cost {
		sum += v
	}
	return sum
}

func jsonObject(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// dataErrorCodes are server errors about the rows themselves.
var dataErrorCodes = map[int32]bool{
	6:   true, // CANNOT_PARSE_TEXT
	27:  true, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
	41:  true, // CANNOT_PARSE_DATETIME
	53:  true, // TYPE_MISMATCH
	69:  true, // ARGUMENT_OUT_OF_BOUND
	70:  true, // CANNOT_CONVERT_TYPE
	72:  true, // CANNOT_PARSE_NUMBER
	117: true, // INCORRECT_DATA
	131: true, // TOO_LARGE_STRING_SIZE
}

// Permanent reports whether a write error is about the data rather than the
// server's state, so that retrying the same rows cannot succeed. Everything
// else (network, timeouts, overload, a table not created yet) is worth a retry.
func Permanent(err error) bool {
	if errors.Is(err, ErrInvalid) {
		return true
	}
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && dataErrorCodes[ex.Code]
}
