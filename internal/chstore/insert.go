package chstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// ErrInvalid marks input that can never be stored; retrying it cannot help.
var ErrInvalid = errors.New("invalid record")

// observationInsertColumns lists every stored column in insert order. 18.16
// answers an INSERT without a column list with an empty header, so the list
// is always explicit.
var observationInsertColumns = func() []string {
	var names []string
	for _, c := range observationInsertKinds {
		names = append(names, c.name)
	}
	return names
}()

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
	_, err := s.InsertObservationRecords(ctx, [][]byte{AppendObservationRecord(nil, obs)})
	return err
}

func insertInto(table string, columns []string) string {
	return "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ")"
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
