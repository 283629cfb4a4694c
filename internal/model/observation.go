// Package model holds the observation record that the mapping produces and the
// storage layer persists. It is the contract between internal/mapping and
// internal/chstore; neither package owns it so that neither depends on the other.
package model

// ProjectIDAttribute is the resource attribute that carries the authenticated
// project id through the pipeline. The ingest receiver writes it, overwriting
// any value a client sent; everything downstream reads it from there.
const ProjectIDAttribute = "glassbox.project.id"

// Span attributes that Glassbox's processors write for the mapping to read.
const (
	// SampleRateAttribute is the fraction of the original traffic that the
	// span's trace was kept at (glassbox_sampling).
	SampleRateAttribute = "glassbox.sample_rate"
	// UsageEstimatedAttribute is true when the usage was counted from the
	// input and output because the client reported none (glassbox_cost).
	UsageEstimatedAttribute = "glassbox.usage.estimated"
	// UsageDetailsAttribute and CostDetailsAttribute are Langfuse's span
	// attributes for usage and cost as JSON objects. glassbox_cost writes
	// them; the mapping reads them before any other usage or cost attribute,
	// and so does every Langfuse-compatible backend a fan-out sends to.
	UsageDetailsAttribute = "langfuse.observation.usage_details"
	CostDetailsAttribute  = "langfuse.observation.cost_details"
)

// Observation types, in Langfuse's spelling.
const (
	TypeSpan       = "SPAN"
	TypeGeneration = "GENERATION"
	TypeEvent      = "EVENT"
	TypeAgent      = "AGENT"
	TypeTool       = "TOOL"
	TypeChain      = "CHAIN"
	TypeRetriever  = "RETRIEVER"
	TypeEvaluator  = "EVALUATOR"
	TypeEmbedding  = "EMBEDDING"
	TypeGuardrail  = "GUARDRAIL"
)

// Levels, in Langfuse's spelling.
const (
	LevelDebug   = "DEBUG"
	LevelDefault = "DEFAULT"
	LevelWarning = "WARNING"
	LevelError   = "ERROR"
)

// Observation is one span as Glassbox stores it: the Langfuse observation
// fields plus the trace-level fields that the span carried. A trace is derived
// from its observations at read time, so every span brings whatever trace-level
// attributes it had (propagated attributes, root-span defaults).
type Observation struct {
	ProjectID string
	TraceID   string // 32 lowercase hex characters
	ID        string // span id, 16 lowercase hex characters
	ParentID  string // parent span id, empty for a root span

	Type string // one of the Type* constants
	Name string

	// Times are Unix microseconds; zero means absent.
	StartTime           int64
	EndTime             int64
	CompletionStartTime int64

	Level         string // one of the Level* constants
	StatusMessage string

	// Input and Output are JSON text when the source was JSON, else the raw string.
	Input  string
	Output string
	// Metadata is a JSON object text ("{}" when empty).
	Metadata string

	Model           string
	ModelParameters string // JSON object text, "" when absent

	// UsageDetails and CostDetails use normalised keys (input, output, total,
	// input_cached_tokens, output_reasoning_tokens, ...). Cost is in USD.
	UsageDetails map[string]int64
	CostDetails  map[string]float64
	// UsageEstimated marks usage counted by Glassbox from the input and output.
	UsageEstimated bool

	PromptName    string
	PromptVersion int64 // 0 when absent

	Environment string // normalised, "default" when absent
	Release     string
	Version     string

	// Trace-level fields as carried by this span; empty when the span did not set them.
	TraceName     string
	UserID        string
	SessionID     string
	Tags          []string
	Public        bool
	TraceMetadata string // JSON object text ("{}" when empty)
	TraceInput    string
	TraceOutput   string
	// IsRoot marks the trace root: no parent span, or langfuse.internal.as_root.
	IsRoot bool

	ServiceName  string
	ScopeName    string
	ScopeVersion string

	// SampleRate is the fraction of traces kept upstream of storage (1 when unsampled),
	// so that counts and costs can be extrapolated.
	SampleRate float64

	// Experiment is set on the spans an SDK's experiment runner produced.
	Experiment Experiment
}

// Experiment ties a span to one item of an experiment run by an SDK's
// experiment runner (the langfuse.experiment.* attributes). The runner
// propagates the ids to every span of the item; the description and the
// expected output are on the item's root span only. Zero when absent.
type Experiment struct {
	ID        string
	Name      string
	DatasetID string // "" when the experiment runs over local data
	ItemID    string // the dataset item id, or a hash of the local item's input
	// ItemRootID is the span id of the item's root span, the one the
	// experiment-items API lists.
	ItemRootID string

	Description string
	// Metadata, ItemMetadata and ItemExpectedOutput are JSON text as the
	// SDK serialised them ("" when absent).
	Metadata           string
	ItemMetadata       string
	ItemExpectedOutput string
}
