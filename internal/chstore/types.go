package chstore

import "github.com/glassbox-dev/glassbox/internal/model"

// Times in these results are Unix microseconds, as in model.Observation.

// Trace is derived from its observations at read time.
type Trace struct {
	ProjectID string
	ID        string
	// Timestamp is the earliest observation start.
	Timestamp int64
	// Name is the newest trace name a span set, else the root span's name.
	Name string
	// UserID, SessionID, Release, Version, Input and Output are the newest
	// non-empty values the spans carried.
	UserID    string
	SessionID string
	Release   string
	Version   string
	Input     string
	Output    string
	// Environment is the environment of the earliest observation.
	Environment string
	// Tags is the sorted union of all spans' tags.
	Tags []string
	// Public is set when any span marked the trace public.
	Public bool
	// Metadata is the JSON object merged from the spans' trace metadata, later
	// spans overwriting earlier keys.
	Metadata string
	// LatencySeconds spans the earliest start to the latest end.
	LatencySeconds float64
	// TotalCost sums the observations' total cost in USD.
	TotalCost float64
	// TotalTokens sums the observations' total tokens.
	TotalTokens int64
	// Level is the most severe level of the trace's observations.
	Level string
	// ObservationIDs are the observation ids in start order.
	ObservationIDs []string
	// CreatedAt and UpdatedAt are when the first and the last span were stored.
	CreatedAt int64
	UpdatedAt int64
}

// TraceWithObservations is a trace with all its observations in start order.
type TraceWithObservations struct {
	Trace
	Observations []Observation
}

// Observation is a stored observation and the time it was stored.
type Observation struct {
	model.Observation
	StoredAt int64
}

// Session groups the traces that carried the same session id.
type Session struct {
	ProjectID string
	ID        string
	// CreatedAt is the timestamp of the session's first trace.
	CreatedAt   int64
	Environment string
	// TraceIDs are the session's traces in timestamp order; set by GetSession only.
	TraceIDs []string
}

// Score data types and sources, in Langfuse's spelling.
const (
	ScoreNumeric     = "NUMERIC"
	ScoreCategorical = "CATEGORICAL"
	ScoreBoolean     = "BOOLEAN"
	// ScoreText is free text, and ScoreCorrection a corrected output (empty
	// when unset); both keep their text in StringValue and aggregate
	// nowhere.
	ScoreText       = "TEXT"
	ScoreCorrection = "CORRECTION"

	SourceAPI        = "API"
	SourceEval       = "EVAL"
	SourceAnnotation = "ANNOTATION"
)

// Score is an evaluation of a trace, an observation, a session or a dataset run.
type Score struct {
	ProjectID string
	ID        string
	Timestamp int64
	Name      string
	// Value holds NUMERIC and BOOLEAN (0/1) values and the mapped value of a
	// CATEGORICAL score; StringValue holds the category label.
	Value        float64
	StringValue  string
	DataType     string
	Source       string
	Comment      string
	Metadata     string // JSON object text
	ConfigID     string
	QueueID      string
	AuthorUserID string
	Environment  string
	// Exactly one target: TraceID (optionally with ObservationID), SessionID or DatasetRunID.
	TraceID       string
	ObservationID string
	SessionID     string
	DatasetRunID  string
	StoredAt      int64
}
