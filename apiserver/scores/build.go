package scores // import "github.com/glassbox-dev/glassbox/apiserver/scores"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/mapping"
)

// Body is a score as clients send it: the body of POST /api/public/scores
// and of `score-create` ingestion events.
type Body struct {
	// ID is chosen by the client (the SDKs send one) or generated.
	ID string `json:"id,omitempty"`
	// Exactly one target: TraceID (optionally with ObservationID), SessionID
	// or DatasetRunID.
	TraceID       string `json:"traceId,omitempty"`
	ObservationID string `json:"observationId,omitempty"`
	SessionID     string `json:"sessionId,omitempty"`
	DatasetRunID  string `json:"datasetRunId,omitempty"`
	Name          string `json:"name"`
	// Value is a number (NUMERIC, BOOLEAN 0/1) or a string (CATEGORICAL).
	Value httpx.JSON `json:"value"`
	// DataType defaults to NUMERIC for numbers and CATEGORICAL for strings,
	// or to the config's type.
	DataType    string     `json:"dataType,omitempty"`
	Comment     string     `json:"comment,omitempty"`
	Metadata    httpx.JSON `json:"metadata,omitempty"`
	Environment string     `json:"environment,omitempty"`
	// Source is API (default), ANNOTATION (needs a config) or, in ingestion
	// batches, EVAL.
	Source   string `json:"source,omitempty"`
	ConfigID string `json:"configId,omitempty"`
	QueueID  string `json:"queueId,omitempty"`
}

// Configs finds score configs.
type Configs interface {
	GetScoreConfig(ctx context.Context, projectID, id string) (controlplane.ScoreConfig, error)
}

// Builder turns bodies into stored scores.
type Builder struct {
	Configs Configs
}

// Sources allowed on each route.
var (
	RESTSources      = []string{chstore.SourceAPI, chstore.SourceAnnotation}
	IngestionSources = []string{chstore.SourceAPI, chstore.SourceEval, chstore.SourceAnnotation}
)

// ScoreLookup finds stored scores.
type ScoreLookup interface {
	GetScore(ctx context.Context, projectID, id string) (chstore.Score, error)
}

// CheckPublicKeyScore applies the rule of the scores scope, which a public
// key alone grants and browsers carry: it writes API scores under ids that
// are new, so it can neither overwrite a score nor pose as an evaluator or
// an annotator. A retried write of its own score is refused too; the first
// one stands.
func CheckPublicKeyScore(ctx context.Context, scores ScoreLookup, projectID string, body *Body) error {
	if body.Source != "" && body.Source != chstore.SourceAPI {
		return httpx.Forbidden("Access Scope Denied: a public key alone writes scores with source API only")
	}
	body.Source = chstore.SourceAPI
	if body.ID == "" {
		return nil
	}
	_, err := scores.GetScore(ctx, projectID, body.ID)
	switch {
	case err == nil:
		return httpx.Forbidden("Access Scope Denied: score " + body.ID + " exists; a public key alone cannot change it")
	case errors.Is(err, chstore.ErrNotFound):
		return nil
	default:
		return err
	}
}

// Annotation builds a person's score through a config, as the UI's score
// forms store it: source ANNOTATION, the author recorded, checked by the
// same rules as Build.
func (b Builder) Annotation(ctx context.Context, projectID, authorUserID string, body Body, ts time.Time) (chstore.Score, error) {
	body.Source = chstore.SourceAnnotation
	sc, err := b.Build(ctx, projectID, body, ts, RESTSources)
	sc.AuthorUserID = authorUserID
	return sc, err
}

// FormValue is a score value typed into a form: a number when it reads as
// one, else a string (a category's label).
func FormValue(typed string) httpx.JSON {
	typed = strings.TrimSpace(typed)
	if _, err := strconv.ParseFloat(typed, 64); err == nil {
		return httpx.JSON(typed)
	}
	return httpx.JSON(strconv.Quote(typed))
}

// Build validates a body and returns the score to store, timestamped ts. A
// score that names a config takes the config's name and is checked against
// its range or categories; categorical labels map to the category's value.
// Errors are API errors naming the field at fault.
func (b Builder) Build(ctx context.Context, projectID string, body Body, ts time.Time, sources []string) (chstore.Score, error) {
	sc := chstore.Score{
		ProjectID: projectID, ID: body.ID, Timestamp: ts.UnixMicro(), Name: strings.TrimSpace(body.Name),
		Comment: body.Comment, ConfigID: body.ConfigID, QueueID: body.QueueID, Source: body.Source,
		Environment: mapping.NormalizeEnvironment(body.Environment),
		TraceID:     body.TraceID, ObservationID: body.ObservationID, SessionID: body.SessionID, DatasetRunID: body.DatasetRunID,
	}
	if sc.ID == "" {
		sc.ID = uuid.NewString()
	}
	if sc.Source == "" {
		sc.Source = chstore.SourceAPI
	}
	if !slices.Contains(sources, sc.Source) {
		return chstore.Score{}, httpx.BadRequest("Invalid source %q: expected one of %s", sc.Source, strings.Join(sources, ", "))
	}
	if err := checkTarget(body); err != nil {
		return chstore.Score{}, err
	}
	var err error
	if sc.Metadata, err = metadataObject(body.Metadata); err != nil {
		return chstore.Score{}, err
	}
	number, text, err := parseValue(body.Value)
	if err != nil {
		return chstore.Score{}, err
	}
	dataType := body.DataType
	if body.ConfigID != "" {
		cfg, err := b.Configs.GetScoreConfig(ctx, projectID, body.ConfigID)
		if errors.Is(err, controlplane.ErrNotFound) {
			return chstore.Score{}, httpx.NotFound("Score config %s not found", body.ConfigID)
		}
		if err != nil {
			return chstore.Score{}, err
		}
		if cfg.IsArchived {
			return chstore.Score{}, httpx.BadRequest("Invalid configId: score config %s is archived", cfg.ID)
		}
		if dataType != "" && dataType != cfg.DataType {
			return chstore.Score{}, httpx.BadRequest("Invalid dataType %s: score config %s is %s", dataType, cfg.ID, cfg.DataType)
		}
		sc.Name = cfg.Name
		if err := applyConfig(&sc, cfg, number, text); err != nil {
			return chstore.Score{}, err
		}
	} else {
		if sc.Source == chstore.SourceAnnotation {
			return chstore.Score{}, httpx.BadRequest("configId is required for ANNOTATION scores")
		}
		if err := applyType(&sc, dataType, number, text); err != nil {
			return chstore.Score{}, err
		}
	}
	if sc.Name == "" {
		return chstore.Score{}, httpx.BadRequest("name is required")
	}
	return sc, nil
}

func checkTarget(body Body) error {
	targets := 0
	for _, t := range []string{body.TraceID, body.SessionID, body.DatasetRunID} {
		if t != "" {
			targets++
		}
	}
	switch {
	case body.ObservationID != "" && body.TraceID == "":
		return httpx.BadRequest("observationId needs the traceId of its trace")
	case targets != 1:
		return httpx.BadRequest("Exactly one of traceId, sessionId and datasetRunId is required")
	}
	return nil
}

// parseValue reads a number or a string; number is NaN for strings.
func parseValue(raw json.RawMessage) (number float64, text *string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil, httpx.BadRequest("value is required: a number or a string")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, nil, httpx.BadRequest("Invalid value: %v", err)
		}
		return math.NaN(), &s, nil
	}
	if err := json.Unmarshal(raw, &number); err != nil {
		return 0, nil, httpx.BadRequest("Invalid value %s: expected a number or a string", raw)
	}
	return number, nil, nil
}

// applyType sets value, string value and data type without a config.
func applyType(sc *chstore.Score, dataType string, number float64, text *string) error {
	if dataType == "" {
		dataType = chstore.ScoreNumeric
		if text != nil {
			dataType = chstore.ScoreCategorical
		}
	}
	sc.DataType = dataType
	switch dataType {
	case chstore.ScoreNumeric:
		if text != nil {
			return httpx.BadRequest("Invalid value: a NUMERIC score needs a number")
		}
		sc.Value = number
	case chstore.ScoreCategorical:
		if text == nil {
			return httpx.BadRequest("Invalid value: a CATEGORICAL score needs a string")
		}
		sc.StringValue = *text
	case chstore.ScoreBoolean:
		return setBoolean(sc, number, text)
	case chstore.ScoreText:
		if text == nil || *text == "" {
			return httpx.BadRequest("Invalid value: a TEXT score needs a non-empty string")
		}
		sc.StringValue = *text
	case chstore.ScoreCorrection:
		if text == nil {
			return httpx.BadRequest("Invalid value: a CORRECTION score needs a string (the corrected output; it may be empty)")
		}
		sc.StringValue = *text
	default:
		return httpx.BadRequest("Invalid dataType %q: expected NUMERIC, CATEGORICAL, BOOLEAN, TEXT or CORRECTION", dataType)
	}
	return nil
}

func setBoolean(sc *chstore.Score, number float64, text *string) error {
	if text != nil || (number != 0 && number != 1) {
		return httpx.BadRequest("Invalid value: a BOOLEAN score needs 0 or 1")
	}
	sc.Value, sc.StringValue = number, "False"
	if number == 1 {
		sc.StringValue = "True"
	}
	return nil
}

// applyConfig checks the value against the config's range or categories.
func applyConfig(sc *chstore.Score, cfg controlplane.ScoreConfig, number float64, text *string) error {
	sc.DataType = cfg.DataType
	switch cfg.DataType {
	case controlplane.ScoreNumeric:
		if text != nil {
			return httpx.BadRequest("Invalid value: score config %s is NUMERIC and needs a number", cfg.ID)
		}
		if (cfg.MinValue != nil && number < *cfg.MinValue) || (cfg.MaxValue != nil && number > *cfg.MaxValue) {
			return httpx.BadRequest("Invalid value %g: score config %s allows %s", number, cfg.ID, rangeText(cfg))
		}
		sc.Value = number
	case controlplane.ScoreCategorical:
		if text == nil {
			return httpx.BadRequest("Invalid value: score config %s is CATEGORICAL and needs one of its labels", cfg.ID)
		}
		for _, c := range cfg.Categories {
			if c.Label == *text {
				sc.Value, sc.StringValue = c.Value, c.Label
				return nil
			}
		}
		labels := make([]string, 0, len(cfg.Categories))
		for _, c := range cfg.Categories {
			labels = append(labels, c.Label)
		}
		return httpx.BadRequest("Invalid value %q: score config %s allows %s", *text, cfg.ID, strings.Join(labels, ", "))
	case controlplane.ScoreBoolean:
		return setBoolean(sc, number, text)
	}
	return nil
}

func rangeText(cfg controlplane.ScoreConfig) string {
	bound := func(f *float64, open string) string {
		if f == nil {
			return open
		}
		b, _ := json.Marshal(*f)
		return string(b)
	}
	return "values from " + bound(cfg.MinValue, "-infinity") + " to " + bound(cfg.MaxValue, "infinity")
}

// metadataObject stores metadata as a JSON object; any other JSON value is
// kept under the key "metadata", as Langfuse does.
func metadataObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "{}", nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", httpx.BadRequest("Invalid metadata: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{"metadata": v}
	}
	out, _ := json.Marshal(v)
	return string(out), nil
}
