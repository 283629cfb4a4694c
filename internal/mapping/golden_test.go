package mapping

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected.json from the current mapping")

// goldenNow is far from the fixtures' timestamps so that a fallback to now shows.
var goldenNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const goldenProject = "proj-golden"

// Each testdata directory holds an OTLP/JSON export as its producer sends it
// (input.json) and the observations it must become (expected.json).
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "input.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, input := range inputs {
		dir := filepath.Dir(input)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			td := readTraces(t, input)
			got := marshalGolden(t, Observations(td, goldenNow))
			want := filepath.Join(dir, "expected.json")
			if *update {
				require.NoError(t, os.WriteFile(want, got, 0o600))
				return
			}
			expected, err := os.ReadFile(want)
			require.NoError(t, err, "run go test ./internal/mapping -update to create it")
			assert.Equal(t, string(expected), string(got))
		})
	}
}

// readTraces decodes an OTLP/JSON file and stamps the project id the way
// the ingest receiver does.
func readTraces(t testing.TB, path string) ptrace.Traces {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		td.ResourceSpans().At(i).Resource().Attributes().PutStr(model.ProjectIDAttribute, goldenProject)
	}
	return td
}

// goldenObservation mirrors model.Observation for the golden files, showing
// JSON text fields as embedded JSON so that the files can be reviewed.
type goldenObservation struct {
	ProjectID           string
	TraceID             string
	ID                  string
	ParentID            string
	Type                string
	Name                string
	StartTime           int64
	EndTime             int64
	CompletionStartTime int64
	Level               string
	StatusMessage       string
	Input               jsonText
	Output              jsonText
	Metadata            jsonText
	Model               string
	ModelParameters     jsonText
	UsageDetails        map[string]int64
	CostDetails         map[string]float64
	UsageEstimated      bool
	PromptName          string
	PromptVersion       int64
	Environment         string
	Release             string
	Version             string
	TraceName           string
	UserID              string
	SessionID           string
	Tags                []string
	Public              bool
	TraceMetadata       jsonText
	TraceInput          jsonText
	TraceOutput         jsonText
	IsRoot              bool
	ServiceName         string
	ScopeName           string
	ScopeVersion        string
	SampleRate          float64
	Experiment          goldenExperiment `json:",omitzero"`
}

type goldenExperiment struct {
	ID, Name, DatasetID, ItemID, ItemRootID, Description string
	Metadata, ItemMetadata, ItemExpectedOutput           jsonText
}

// jsonText marshals as embedded JSON when it holds a JSON object or array,
// and as a string otherwise (so a JSON string value stays distinguishable).
type jsonText string

func (j jsonText) MarshalJSON() ([]byte, error) {
	s := strings.TrimSpace(string(j))
	if s != "" && (s[0] == '{' || s[0] == '[') && json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	return json.Marshal(string(j))
}

func marshalGolden(t testing.TB, obs []model.Observation) []byte {
	require.Equal(t, reflect.TypeFor[model.Observation]().NumField(), reflect.TypeFor[goldenObservation]().NumField(),
		"goldenObservation must list every model.Observation field")
	view := make([]goldenObservation, len(obs))
	for i, o := range obs {
		view[i] = goldenObservation{
			ProjectID: o.ProjectID, TraceID: o.TraceID, ID: o.ID, ParentID: o.ParentID,
			Type: o.Type, Name: o.Name,
			StartTime: o.StartTime, EndTime: o.EndTime, CompletionStartTime: o.CompletionStartTime,
			Level: o.Level, StatusMessage: o.StatusMessage,
			Input: jsonText(o.Input), Output: jsonText(o.Output), Metadata: jsonText(o.Metadata),
			Model: o.Model, ModelParameters: jsonText(o.ModelParameters),
			UsageDetails: o.UsageDetails, CostDetails: o.CostDetails, UsageEstimated: o.UsageEstimated,
			PromptName: o.PromptName, PromptVersion: o.PromptVersion,
			Environment: o.Environment, Release: o.Release, Version: o.Version,
			TraceName: o.TraceName, UserID: o.UserID, SessionID: o.SessionID, Tags: o.Tags, Public: o.Public,
			TraceMetadata: jsonText(o.TraceMetadata), TraceInput: jsonText(o.TraceInput), TraceOutput: jsonText(o.TraceOutput),
			IsRoot: o.IsRoot, ServiceName: o.ServiceName, ScopeName: o.ScopeName, ScopeVersion: o.ScopeVersion,
			SampleRate: o.SampleRate,
			Experiment: goldenExperiment{
				ID: o.Experiment.ID, Name: o.Experiment.Name, DatasetID: o.Experiment.DatasetID,
				ItemID: o.Experiment.ItemID, ItemRootID: o.Experiment.ItemRootID, Description: o.Experiment.Description,
				Metadata: jsonText(o.Experiment.Metadata), ItemMetadata: jsonText(o.Experiment.ItemMetadata),
				ItemExpectedOutput: jsonText(o.Experiment.ItemExpectedOutput),
			},
		}
		// Every JSON text field must be valid JSON when it looks like JSON.
		for _, s := range []string{o.Metadata, o.TraceMetadata, o.ModelParameters} {
			if s != "" {
				require.True(t, json.Valid([]byte(s)), "invalid JSON: %s", s)
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(view))
	return buf.Bytes()
}

// TestPriceReaderMatchesFromSpan: what pricing reads through a PriceReader
// is exactly what FromSpan stores, span by span, for every producer's
// fixture, with one reader across all of a fixture's resources and scopes.
func TestPriceReaderMatchesFromSpan(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "input.json"))
	require.NoError(t, err)
	checked := 0
	for _, input := range inputs {
		td := readTraces(t, input)
		reader := NewPriceReader(goldenNow)
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			reader.SetResource(rs.Resource())
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				reader.SetScope(ss.Scope())
				for k := 0; k < ss.Spans().Len(); k++ {
					span := ss.Spans().At(k)
					full := FromSpan(rs.Resource(), ss.Scope(), span, goldenNow)
					got := reader.Read(span)
					want := model.Observation{
						ProjectID: full.ProjectID, Type: full.Type, StartTime: full.StartTime, EndTime: full.EndTime,
						Level: full.Level, Model: full.Model, UsageDetails: full.UsageDetails,
						CostDetails: full.CostDetails, UsageEstimated: full.UsageEstimated,
					}
					assert.Equal(t, want, got, "%s: span %s", input, span.Name())
					checked++
				}
			}
		}
		reader.Close()
	}
	require.Greater(t, checked, 20)
}
