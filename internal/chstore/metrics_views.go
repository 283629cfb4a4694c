package chstore

import (
	"fmt"
	"slices"
)

// The metrics views: every field a metrics query, a dashboard widget or a
// list's `filter` parameter may name, as SQL over one view row. These maps
// are the only place identifiers of a query come from.

// fieldKind is what a field holds; it decides the filter types and the
// aggregations it accepts and how its values are read.
type fieldKind int

const (
	kindString fieldKind = iota
	kindNumber
	kindDatetime // Unix µs; filters only
	kindArray    // Array(String)
	kindObject   // Array(String) of JSON objects, matched by key; filters only
	kindBool
	kindScoreNumber   // a trace's or observation's numeric scores by name; filters only
	kindScoreCategory // a trace's or observation's categorical scores by name; filters only
)

// A join brings columns from another table into a view's rows.
type join uint8

const (
	joinTrace       join = 1 << iota // t_*: the trace aggregates of the row's trace
	joinScoreCount                   // sc_count: scores of the row's subject
	joinObservation                  // ob_*: the score's observation
	joinCostTypes                    // cost_type, cost_by_type: one row per cost type
	joinUsageTypes                   // usage_type, usage_by_type: one row per usage type
)

// field is one name of a view.
type field struct {
	expr      string
	kind      fieldKind
	dimension bool
	// highCardinality dimensions need a top-N query in v2 (validateQuery).
	highCardinality bool
	joins           join
	// traceExprs are the trace aggregates expr reads, in the traces view.
	traceExprs []traceExpr
}

// measure is one quantity a metric aggregates.
type measure struct {
	expr string
	// numeric measures allow every aggregation; the others count and uniq.
	numeric bool
	// integer sums come back as strings, like ClickHouse's JSON output that
	// Langfuse passes through (`"sum_totalTokens":"151468"`).
	integer    bool
	joins      join
	traceExprs []traceExpr
}

// view is one `view` of the query language.
type view struct {
	name     string
	fields   map[string]field
	measures map[string]measure
	// unavailable names the fields and measures Langfuse has that are not
	// derivable from what Glassbox stores, and why.
	unavailable map[string]string
	// timeField is the field time buckets and the window apply to.
	timeField string
	// dataType narrows the scores table to one kind of score.
	dataType string
}

// SQL over one observation row (observations view) or its stored columns.
const (
	sqlInputTokens  = "arraySum(arrayFilter((v, k) -> positionCaseInsensitive(k, 'input') > 0, usage_values, usage_keys))"
	sqlOutputTokens = "arraySum(arrayFilter((v, k) -> positionCaseInsensitive(k, 'output') > 0, usage_values, usage_keys))"
	sqlTotalTokens  = "arraySum(arrayFilter((v, k) -> k = 'total', usage_values, usage_keys))"
	sqlInputCost    = "arraySum(arrayFilter((v, k) -> positionCaseInsensitive(k, 'input') > 0, cost_values, cost_keys))"
	sqlOutputCost   = "arraySum(arrayFilter((v, k) -> positionCaseInsensitive(k, 'output') > 0, cost_values, cost_keys))"
	// Durations in milliseconds, NULL where the span lacks the times.
	sqlLatencyMs   = "if(end_time_us > 0, (end_time_us - start_time_us) / 1000, NULL)"
	sqlStreamingMs = "if(completion_start_time_us > 0 AND end_time_us > 0, (end_time_us - completion_start_time_us) / 1000, NULL)"
	sqlFirstToken  = "if(completion_start_time_us > 0, (completion_start_time_us - start_time_us) / 1000, NULL)"
)

// Trace aggregates beyond those the trace reads use.
var (
	exprStartTime   = traceExpr{"t_start_time", "min(start_time)"}
	exprObsCount    = traceExpr{"t_observations", "count()"}
	exprTotalTokens = traceExpr{"t_total_tokens", "sum(" + sqlTotalTokens + ")"}
)

// toolsUnavailable explains the tool fields: Langfuse extracts tool
// definitions and calls into columns at ingestion; Glassbox keeps input and
// output as opaque text, and ClickHouse 18.16 has no JSON functions to find
// them in at query time.
const toolsUnavailable = "tool definitions and calls are not extracted at ingestion; they stay inside the observation's input and output"

func traceDims() map[string]field {
	return map[string]field{
		"traceName":    {expr: "t_name", kind: kindString, dimension: true, joins: joinTrace},
		"tags":         {expr: "t_tags", kind: kindArray, dimension: true, joins: joinTrace},
		"userId":       {expr: "t_user_id", kind: kindString, dimension: true, highCardinality: true, joins: joinTrace},
		"sessionId":    {expr: "t_session_id", kind: kindString, dimension: true, highCardinality: true, joins: joinTrace},
		"traceRelease": {expr: "t_release", kind: kindString, dimension: true, joins: joinTrace},
		"traceVersion": {expr: "t_version", kind: kindString, dimension: true, joins: joinTrace},
	}
}

var observationsView = func() view {
	fields := traceDims()
	for name, f := range map[string]field{
		"id":                  {expr: "id", kind: kindString, dimension: true, highCardinality: true},
		"traceId":             {expr: "trace_id", kind: kindString, dimension: true, highCardinality: true},
		"environment":         {expr: "environment", kind: kindString, dimension: true},
		"parentObservationId": {expr: "parent_id", kind: kindString, dimension: true, highCardinality: true},
		"type":                {expr: "type", kind: kindString, dimension: true},
		"name":                {expr: "name", kind: kindString, dimension: true},
		"level":               {expr: "level", kind: kindString, dimension: true},
		"version":             {expr: "version", kind: kindString, dimension: true},
		"release":             {expr: "release", kind: kindString, dimension: true},
		"providedModelName":   {expr: "model", kind: kindString, dimension: true},
		"promptName":          {expr: "prompt_name", kind: kindString, dimension: true},
		"promptVersion":       {expr: "if(prompt_name = '', NULL, prompt_version)", kind: kindNumber, dimension: true},
		"isRootObservation":   {expr: "(is_root = 1 OR parent_id = '')", kind: kindBool, dimension: true},
		// Set on the spans of an SDK's experiment runner.
		"experimentId":             {expr: "experiment_id", kind: kindString, dimension: true},
		"experimentName":           {expr: "experiment_name", kind: kindString, dimension: true},
		"experimentDatasetId":      {expr: "experiment_dataset_id", kind: kindString, dimension: true},
		"experimentItemId":         {expr: "experiment_item_id", kind: kindString, dimension: true, highCardinality: true},
		"isExperimentItemRootSpan": {expr: "(experiment_item_root_id != '' AND experiment_item_root_id = id)", kind: kindBool, dimension: true},
		"startTimeMonth":           {expr: "formatDateTime(start_time, '%Y-%m')", kind: kindString, dimension: true},
		"costType":                 {expr: "cost_type", kind: kindString, dimension: true, joins: joinCostTypes},
		"usageType":                {expr: "usage_type", kind: kindString, dimension: true, joins: joinUsageTypes},
		"startTime":                {expr: "start_time_us", kind: kindDatetime},
		"endTime":                  {expr: "end_time_us", kind: kindDatetime},
		"metadata":                 {expr: "[metadata]", kind: kindObject},
		"latency":                  {expr: sqlLatencyMs, kind: kindNumber},
		"timeToFirstToken":         {expr: sqlFirstToken, kind: kindNumber},
		"inputTokens":              {expr: sqlInputTokens, kind: kindNumber},
		"outputTokens":             {expr: sqlOutputTokens, kind: kindNumber},
		"totalTokens":              {expr: sqlTotalTokens, kind: kindNumber},
		"inputCost":                {expr: sqlInputCost, kind: kindNumber},
		"outputCost":               {expr: sqlOutputCost, kind: kindNumber},
		"totalCost":                {expr: "total_cost", kind: kindNumber},
		"statusMessage":            {expr: "status_message", kind: kindString},
		"scores_avg":               {expr: "id", kind: kindScoreNumber},
		"score_categories":         {expr: "id", kind: kindScoreCategory},
	} {
		fields[name] = f
	}
	return view{
		name:   "observations",
		fields: fields,
		measures: map[string]measure{
			"count":                 {expr: "1"},
			"latency":               {expr: sqlLatencyMs, numeric: true},
			"streamingLatency":      {expr: sqlStreamingMs, numeric: true},
			"timeToFirstToken":      {expr: sqlFirstToken, numeric: true},
			"inputTokens":           {expr: sqlInputTokens, numeric: true, integer: true},
			"outputTokens":          {expr: sqlOutputTokens, numeric: true, integer: true},
			"totalTokens":           {expr: sqlTotalTokens, numeric: true, integer: true},
			"outputTokensPerSecond": {expr: "if(end_time_us > start_time_us, " + sqlOutputTokens + " / ((end_time_us - start_time_us) / 1e6), NULL)", numeric: true},
			"tokensPerSecond":       {expr: "if(end_time_us > start_time_us, " + sqlTotalTokens + " / ((end_time_us - start_time_us) / 1e6), NULL)", numeric: true},
			"inputCost":             {expr: sqlInputCost, numeric: true},
			"outputCost":            {expr: sqlOutputCost, numeric: true},
			"totalCost":             {expr: "total_cost", numeric: true},
			"countScores":           {expr: "sc_count", numeric: true, integer: true, joins: joinScoreCount},
			"uniqueTraceIds":        {expr: "trace_id"},
			"uniqueUserIds":         {expr: "t_user_id", joins: joinTrace},
			"uniqueSessionIds":      {expr: "t_session_id", joins: joinTrace},
			"costByType":            {expr: "cost_by_type", numeric: true, joins: joinCostTypes},
			"usageByType":           {expr: "usage_by_type", numeric: true, integer: true, joins: joinUsageTypes},
		},
		unavailable: map[string]string{
			"toolNames":       toolsUnavailable,
			"calledToolNames": toolsUnavailable,
			"toolDefinitions": toolsUnavailable,
			"toolCalls":       toolsUnavailable,
		},
		timeField: "startTime",
	}
}()

// tracesView reads one row per trace: the trace aggregates (t_*) over its
// deduplicated observations.
var tracesView = view{
	name: "traces",
	fields: map[string]field{
		"id":             {expr: "trace_id", kind: kindString, dimension: true, highCardinality: true},
		"name":           {expr: "t_name", kind: kindString, dimension: true, traceExprs: []traceExpr{exprName}},
		"tags":           {expr: "t_tags", kind: kindArray, dimension: true, traceExprs: []traceExpr{exprTags}},
		"userId":         {expr: "t_user_id", kind: kindString, dimension: true, highCardinality: true, traceExprs: []traceExpr{exprUserID}},
		"sessionId":      {expr: "t_session_id", kind: kindString, dimension: true, highCardinality: true, traceExprs: []traceExpr{exprSessionID}},
		"release":        {expr: "t_release", kind: kindString, dimension: true, traceExprs: []traceExpr{exprRelease}},
		"version":        {expr: "t_version", kind: kindString, dimension: true, traceExprs: []traceExpr{exprVersion}},
		"environment":    {expr: "t_environment", kind: kindString, dimension: true, traceExprs: []traceExpr{exprEnvironment}},
		"timestampMonth": {expr: "formatDateTime(t_start_time, '%Y-%m')", kind: kindString, dimension: true, traceExprs: []traceExpr{exprStartTime}},
		"timestamp":      {expr: "t_start", kind: kindDatetime},
		"metadata":       {expr: "t_metadata", kind: kindObject, traceExprs: []traceExpr{exprMetadata}},
		"latency":        {expr: "(t_end - t_start) / 1000", kind: kindNumber, traceExprs: []traceExpr{exprEnd}},
		"totalTokens":    {expr: "t_total_tokens", kind: kindNumber, traceExprs: []traceExpr{exprTotalTokens}},
		"totalCost":      {expr: "t_total_cost", kind: kindNumber, traceExprs: []traceExpr{exprTotalCost}},
		// inputOutput is the trace's input and output text, for full-text
		// filters; it reads every trace's text in the window, so it is slow.
		"inputOutput":      {expr: "concat(t_input, '\\n', t_output)", kind: kindString, traceExprs: []traceExpr{exprInput, exprOutput}},
		"scores_avg":       {expr: "trace_id", kind: kindScoreNumber},
		"score_categories": {expr: "trace_id", kind: kindScoreCategory},
	},
	measures: map[string]measure{
		"count":             {expr: "1"},
		"observationsCount": {expr: "t_observations", numeric: true, integer: true, traceExprs: []traceExpr{exprObsCount}},
		// timestamp is the trace's start in Unix µs: min and max give when a
		// user or session was first and last seen.
		"timestamp":        {expr: "t_start", numeric: true, integer: true},
		"scoresCount":      {expr: "sc_count", numeric: true, integer: true, joins: joinScoreCount},
		"uniqueUserIds":    {expr: "t_user_id", traceExprs: []traceExpr{exprUserID}},
		"uniqueSessionIds": {expr: "t_session_id", traceExprs: []traceExpr{exprSessionID}},
		"latency":          {expr: "(t_end - t_start) / 1000", numeric: true, traceExprs: []traceExpr{exprEnd}},
		"totalTokens":      {expr: "t_total_tokens", numeric: true, integer: true, traceExprs: []traceExpr{exprTotalTokens}},
		"totalCost":        {expr: "t_total_cost", numeric: true, traceExprs: []traceExpr{exprTotalCost}},
	},
	timeField: "timestamp",
}

func scoresView(name, dataType string) view {
	fields := traceDims()
	for n, f := range map[string]field{
		"id":                       {expr: "id", kind: kindString, dimension: true, highCardinality: true},
		"traceId":                  {expr: "trace_id", kind: kindString, dimension: true, highCardinality: true},
		"observationId":            {expr: "observation_id", kind: kindString, dimension: true, highCardinality: true},
		"sessionId":                {expr: "session_id", kind: kindString, dimension: true, highCardinality: true},
		"datasetRunId":             {expr: "dataset_run_id", kind: kindString, dimension: true, highCardinality: true},
		"environment":              {expr: "environment", kind: kindString, dimension: true},
		"name":                     {expr: "name", kind: kindString, dimension: true},
		"source":                   {expr: "source", kind: kindString, dimension: true},
		"dataType":                 {expr: "data_type", kind: kindString, dimension: true},
		"configId":                 {expr: "config_id", kind: kindString, dimension: true},
		"queueId":                  {expr: "queue_id", kind: kindString, dimension: true},
		"authorUserId":             {expr: "author_user_id", kind: kindString, dimension: true},
		"timestampMonth":           {expr: "formatDateTime(timestamp, '%Y-%m')", kind: kindString, dimension: true},
		"timestampDay":             {expr: "formatDateTime(timestamp, '%Y-%m-%d')", kind: kindString, dimension: true},
		"observationName":          {expr: "ob_name", kind: kindString, dimension: true, joins: joinObservation},
		"observationModelName":     {expr: "ob_model", kind: kindString, dimension: true, joins: joinObservation},
		"observationPromptName":    {expr: "ob_prompt_name", kind: kindString, dimension: true, joins: joinObservation},
		"observationPromptVersion": {expr: "if(ob_prompt_name = '', NULL, ob_prompt_version)", kind: kindNumber, dimension: true, joins: joinObservation},
		"timestamp":                {expr: "timestamp_us", kind: kindDatetime},
		"metadata":                 {expr: "[metadata]", kind: kindObject},
		"comment":                  {expr: "comment", kind: kindString},
	} {
		fields[n] = f
	}
	measures := map[string]measure{"count": {expr: "1"}}
	switch dataType {
	case ScoreNumeric:
		fields["value"] = field{expr: "value", kind: kindNumber, dimension: true}
		measures["value"] = measure{expr: "value", numeric: true}
	case ScoreBoolean:
		fields["value"] = field{expr: "value", kind: kindNumber, dimension: true}
		fields["booleanValue"] = field{expr: "value = 1", kind: kindBool, dimension: true}
		fields["stringValue"] = field{expr: "string_value", kind: kindString, dimension: true}
		measures["value"] = measure{expr: "value", numeric: true}
	case ScoreCategorical:
		fields["stringValue"] = field{expr: "string_value", kind: kindString, dimension: true}
	}
	return view{name: name, fields: fields, measures: measures, timeField: "timestamp", dataType: dataType}
}

// Metric views by name.
const (
	ViewTraces            = "traces"
	ViewObservations      = "observations"
	ViewScoresNumeric     = "scores-numeric"
	ViewScoresBoolean     = "scores-boolean"
	ViewScoresCategorical = "scores-categorical"
	// viewScores is every score, whatever its type: the scores list's filter.
	viewScores = "scores"
)

var views = map[string]view{
	ViewTraces:            tracesView,
	ViewObservations:      observationsView,
	ViewScoresNumeric:     scoresView(ViewScoresNumeric, ScoreNumeric),
	ViewScoresBoolean:     scoresView(ViewScoresBoolean, ScoreBoolean),
	ViewScoresCategorical: scoresView(ViewScoresCategorical, ScoreCategorical),
	viewScores:            scoresListView(),
}

// scoresListView is the union of the typed score views: what the scores
// list filters on.
func scoresListView() view {
	v := scoresView(viewScores, "")
	v.fields["value"] = field{expr: "value", kind: kindNumber}
	v.fields["stringValue"] = field{expr: "string_value", kind: kindString}
	return v
}

func (v view) field(name string) (field, error) {
	if f, ok := v.fields[name]; ok {
		return f, nil
	}
	if why, ok := v.unavailable[name]; ok {
		return field{}, invalidQuery("", "field %q of view %s is not available: %s", name, v.name, why)
	}
	return field{}, invalidQuery("", "unknown field %q for view %s; the view's fields are %s", name, v.name, sortedKeys(v.fields))
}

func (v view) measure(name string) (measure, error) {
	if m, ok := v.measures[name]; ok {
		return m, nil
	}
	if why, ok := v.unavailable[name]; ok {
		return measure{}, invalidQuery("", "measure %q of view %s is not available: %s", name, v.name, why)
	}
	return measure{}, invalidQuery("", "unknown measure %q for view %s; the view's measures are %s", name, v.name, sortedKeys(v.measures))
}

// QueryError is a metrics query or filter that cannot run as asked: the
// message says what to change. Code names v2's validation rule, if any.
type QueryError struct {
	Code    string
	Message string
}

func (e *QueryError) Error() string { return e.Message }

// Is makes a QueryError an ErrInvalid.
func (e *QueryError) Is(target error) bool { return target == ErrInvalid }

func invalidQuery(code, format string, args ...any) *QueryError {
	return &QueryError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ViewSchema lists what a metrics view offers, for forms that build queries:
// its dimensions and its measures with whether each is numeric (takes every
// aggregation) or only counts.
func ViewSchema(name string) (dimensions []string, measures map[string]bool, ok bool) {
	v, ok := views[name]
	if !ok || name == viewScores {
		return nil, nil, false
	}
	for f, fl := range v.fields {
		if fl.dimension {
			dimensions = append(dimensions, f)
		}
	}
	slices.Sort(dimensions)
	measures = make(map[string]bool, len(v.measures))
	for m, ms := range v.measures {
		measures[m] = ms.numeric
	}
	return dimensions, measures, true
}
