package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Evaluator kinds.
const (
	// EvaluatorLLM asks a judge model through an LLM connection.
	EvaluatorLLM = "llm"
	// EvaluatorCEL computes the score with a CEL expression over the variables.
	EvaluatorCEL = "cel"
	// EvaluatorWebhook POSTs the variables to a URL that answers the score.
	EvaluatorWebhook = "webhook"
)

// Variable sources and fields.
const (
	SourceTrace       = "trace"
	SourceObservation = "observation"
	SourceDatasetItem = "dataset_item"

	FieldInput          = "input"
	FieldOutput         = "output"
	FieldMetadata       = "metadata"
	FieldName           = "name"
	FieldExpectedOutput = "expected_output"
)

// Default time limits of code evaluators; LLM evaluators take their
// connection's.
const (
	DefaultCELTimeout     = time.Second
	DefaultWebhookTimeout = 10 * time.Second
	maxEvaluatorTimeout   = 5 * time.Minute
)

var variableNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// defaultVariables are the variables an evaluator may use without mapping
// them: each reads the field of the same name from the evaluated target,
// expected_output from its dataset item.
var defaultVariables = map[string]VariableMapping{
	FieldInput:          {Name: FieldInput, Source: "", Field: FieldInput},
	FieldOutput:         {Name: FieldOutput, Source: "", Field: FieldOutput},
	FieldMetadata:       {Name: FieldMetadata, Source: "", Field: FieldMetadata},
	FieldName:           {Name: FieldName, Source: "", Field: FieldName},
	FieldExpectedOutput: {Name: FieldExpectedOutput, Source: SourceDatasetItem, Field: FieldExpectedOutput},
}

// Evaluator computes one score of a trace or an observation: an LLM judge
// prompt, a CEL expression or a webhook, and what the score looks like.
type Evaluator struct {
	ID          string
	ProjectID   string
	Name        string
	Description string
	Kind        string
	ScoreName   string
	Output      ScoreOutput
	// Variables map the names the prompt, expression or webhook uses to
	// fields of the evaluated data.
	Variables []VariableMapping
	// Prompt is the judge prompt with {{variable}} placeholders (llm).
	Prompt string
	// Model and ModelParams override the connection's defaults (llm).
	Model       string
	ModelParams json.RawMessage
	// Provider names the LLM connection the evaluator is meant for (llm):
	// Langfuse's modelConfig.provider. Rules still say which connection
	// they run with; Langfuse's rule API, which has no connection, takes
	// this one.
	Provider string
	// Expression is a CEL expression over the variables (cel).
	Expression string
	// URL receives the variables as JSON (webhook).
	URL string
	// Timeout bounds one run of a cel or webhook evaluator.
	Timeout   time.Duration
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScoreOutput is the value an evaluator produces.
type ScoreOutput struct {
	// DataType is ScoreNumeric, ScoreCategorical or ScoreBoolean.
	DataType string `json:"dataType"`
	// Min and Max bound NUMERIC scores; nil is unbounded.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Categories are the labels of a CATEGORICAL score.
	Categories []string `json:"categories,omitempty"`
	// Description says what the score means; the judge is told.
	Description string `json:"description,omitempty"`
}

// VariableMapping reads one variable from the evaluated data.
type VariableMapping struct {
	Name string `json:"name"`
	// Source is SourceTrace, SourceObservation or SourceDatasetItem. Empty
	// means the rule's target itself.
	Source string `json:"source,omitempty"`
	// ObservationName picks, for a trace target, the latest observation of
	// the trace with this name; empty is the target observation.
	ObservationName string `json:"observationName,omitempty"`
	// Field is input, output, metadata or name (expected_output, input or
	// metadata of a dataset item).
	Field string `json:"field"`
	// Key is a dot-separated path into the field's JSON value.
	Key string `json:"key,omitempty"`
}

// Validate checks a mapping on its own.
func (v VariableMapping) Validate() error {
	if !variableNamePattern.MatchString(v.Name) {
		return fmt.Errorf("variable name %q must be letters, digits and '_', not starting with a digit", v.Name)
	}
	fields := []string{FieldInput, FieldOutput, FieldMetadata, FieldName}
	switch v.Source {
	case "", SourceTrace, SourceObservation:
	case SourceDatasetItem:
		fields = []string{FieldInput, FieldExpectedOutput, FieldMetadata}
	default:
		return fmt.Errorf("variable %q: source %q must be trace, observation or dataset_item", v.Name, v.Source)
	}
	if !slices.Contains(fields, v.Field) {
		return fmt.Errorf("variable %q: field %q must be one of %s", v.Name, v.Field, strings.Join(fields, ", "))
	}
	if v.ObservationName != "" && v.Source != SourceObservation {
		return fmt.Errorf("variable %q: observationName needs source observation", v.Name)
	}
	return nil
}

// ResolveVariables merges mappings: later ones replace earlier ones of the
// same name, and names without a mapping that are default variables read
// their defaults. needed are the names used; every one must resolve.
func ResolveVariables(needed []string, layers ...[]VariableMapping) ([]VariableMapping, error) {
	byName := map[string]VariableMapping{}
	for _, layer := range layers {
		for _, v := range layer {
			byName[v.Name] = v
		}
	}
	out := make([]VariableMapping, 0, len(needed))
	for _, name := range needed {
		v, ok := byName[name]
		if !ok {
			if v, ok = defaultVariables[name]; !ok {
				return nil, fmt.Errorf("%w: variable %q has no mapping", ErrInvalid, name)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// PromptVariables are the distinct {{variable}} names of a prompt, in order.
func PromptVariables(prompt string) []string {
	var names []string
	for _, m := range variablePattern.FindAllStringSubmatch(prompt, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// NeededVariables are the variables an evaluator reads: the prompt's for
// llm, every mapped and default one for code evaluators.
func (e Evaluator) NeededVariables() []string {
	if e.Kind == EvaluatorLLM {
		return PromptVariables(e.Prompt)
	}
	names := []string{FieldInput, FieldOutput, FieldMetadata, FieldName, FieldExpectedOutput}
	for _, v := range e.Variables {
		if !slices.Contains(names, v.Name) {
			names = append(names, v.Name)
		}
	}
	return names
}

// NewEvaluator is the input of CreateEvaluator.
type NewEvaluator struct {
	Name        string
	Description string
	Kind        string
	ScoreName   string
	Output      ScoreOutput
	Variables   []VariableMapping
	Prompt      string
	Model       string
	ModelParams json.RawMessage
	Provider    string
	Expression  string
	URL         string
	Timeout     time.Duration
}

// EvaluatorUpdate changes the fields that are set; the kind is fixed.
type EvaluatorUpdate struct {
	Name        *string
	Description *string
	ScoreName   *string
	Output      *ScoreOutput
	Variables   []VariableMapping // nil keeps them
	Prompt      *string
	Model       *string
	ModelParams json.RawMessage
	Provider    *string
	Expression  *string
	URL         *string
	Timeout     time.Duration // zero keeps it
}

// evaluatorDefinition is the JSON of the definition column.
type evaluatorDefinition struct {
	Description string            `json:"description,omitempty"`
	Output      ScoreOutput       `json:"output"`
	Variables   []VariableMapping `json:"variables"`
	Prompt      string            `json:"prompt,omitempty"`
	Model       string            `json:"model,omitempty"`
	ModelParams json.RawMessage   `json:"modelParams,omitempty"`
	Provider    string            `json:"provider,omitempty"`
	Expression  string            `json:"expression,omitempty"`
	URL         string            `json:"url,omitempty"`
	TimeoutMS   int64             `json:"timeoutMs,omitempty"`
}

const evaluatorColumns = `id, project_id, name, kind, score_name, definition, created_at, updated_at`

// CheckEvaluator validates an evaluator as CreateEvaluator would and
// returns it with its defaults, unsaved: what an editor previews.
func CheckEvaluator(projectID string, n NewEvaluator) (Evaluator, error) {
	e := Evaluator{ID: uuid.NewString(), ProjectID: projectID, Name: n.Name, Description: n.Description, Kind: n.Kind,
		ScoreName: n.ScoreName, Output: n.Output, Variables: n.Variables, Prompt: n.Prompt, Model: n.Model,
		ModelParams: n.ModelParams, Provider: n.Provider, Expression: n.Expression, URL: n.URL, Timeout: n.Timeout}
	if err := normalizeEvaluator(&e); err != nil {
		return Evaluator{}, err
	}
	return e, nil
}

// CreateEvaluator validates and stores an evaluator.
func (s *Store) CreateEvaluator(ctx context.Context, projectID string, n NewEvaluator) (Evaluator, error) {
	e, err := CheckEvaluator(projectID, n)
	if err != nil {
		return Evaluator{}, err
	}
	if err := checkProvider(ctx, s.conn(), projectID, e.Provider); err != nil {
		return Evaluator{}, err
	}
	now := s.micros()
	if _, err := s.conn().exec(ctx, `INSERT INTO evaluators (`+evaluatorColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, projectID, e.Name, e.Kind, e.ScoreName, evaluatorDefinitionJSON(e), now, now); err != nil {
		return Evaluator{}, fmt.Errorf("create evaluator %q: %w", e.Name, classify(err))
	}
	return s.GetEvaluator(ctx, projectID, e.ID)
}

func evaluatorDefinitionJSON(e Evaluator) string {
	def, _ := json.Marshal(evaluatorDefinition{
		Description: e.Description, Output: e.Output, Variables: e.Variables, Prompt: e.Prompt, Model: e.Model,
		ModelParams: e.ModelParams, Provider: e.Provider, Expression: e.Expression, URL: e.URL, TimeoutMS: e.Timeout.Milliseconds(),
	})
	return string(def)
}

// normalizeEvaluator checks an evaluator as a whole and fills in defaults.
func normalizeEvaluator(e *Evaluator) error {
	var errs []error
	e.Name = strings.TrimSpace(e.Name)
	if e.Name == "" || len(e.Name) > 255 {
		errs = append(errs, errors.New("name must be 1-255 characters"))
	}
	e.Provider = strings.TrimSpace(e.Provider)
	e.ScoreName = strings.TrimSpace(e.ScoreName)
	if e.ScoreName == "" || len(e.ScoreName) > 255 {
		errs = append(errs, errors.New("scoreName must be 1-255 characters"))
	}
	errs = append(errs, normalizeOutput(&e.Output))
	if e.Variables == nil {
		e.Variables = []VariableMapping{}
	}
	seen := map[string]bool{}
	for _, v := range e.Variables {
		if seen[v.Name] {
			errs = append(errs, fmt.Errorf("variable %q is mapped twice", v.Name))
		}
		seen[v.Name] = true
		errs = append(errs, v.Validate())
	}
	if e.ModelParams != nil && !isJSONObject(e.ModelParams) {
		errs = append(errs, errors.New("modelParams must be a JSON object"))
	}
	switch e.Kind {
	case EvaluatorLLM:
		if strings.TrimSpace(e.Prompt) == "" {
			errs = append(errs, errors.New("prompt is required for an llm evaluator"))
		}
		e.Expression, e.URL, e.Timeout = "", "", 0
	case EvaluatorCEL:
		if strings.TrimSpace(e.Expression) == "" {
			errs = append(errs, errors.New("expression is required for a cel evaluator"))
		}
		e.Prompt, e.Model, e.ModelParams, e.Provider, e.URL = "", "", nil, "", ""
		e.Timeout = cmpOr(e.Timeout, DefaultCELTimeout)
	case EvaluatorWebhook:
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url %q must be an absolute http(s) URL", e.URL))
		}
		e.Prompt, e.Model, e.ModelParams, e.Provider, e.Expression = "", "", nil, "", ""
		e.Timeout = cmpOr(e.Timeout, DefaultWebhookTimeout)
	default:
		errs = append(errs, fmt.Errorf("kind %q must be llm, cel or webhook", e.Kind))
	}
	if e.Timeout < 0 || e.Timeout > maxEvaluatorTimeout {
		errs = append(errs, fmt.Errorf("timeout must be at most %s", maxEvaluatorTimeout))
	}
	if e.Kind == EvaluatorLLM {
		if _, err := ResolveVariables(e.NeededVariables(), e.Variables); err != nil {
			errs = append(errs, fmt.Errorf("prompt: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// checkProvider refuses a provider that names none of the project's LLM
// connections; a connection deleted later fails the rules that need it.
func checkProvider(ctx context.Context, c conn, projectID, provider string) error {
	if provider == "" {
		return nil
	}
	if _, _, _, err := getLLMConnection(ctx, c, `project_id = ? AND provider = ?`, projectID, provider); err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: provider %q is not an LLM connection of this project", ErrInvalid, provider)
		}
		return err
	}
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func normalizeOutput(o *ScoreOutput) error {
	for _, b := range []*float64{o.Min, o.Max} {
		if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
			return errors.New("output.min and output.max must be finite numbers")
		}
	}
	switch o.DataType {
	case ScoreNumeric:
		if len(o.Categories) > 0 {
			return errors.New("output.categories: a NUMERIC score has a range, not categories")
		}
		if o.Min != nil && o.Max != nil && *o.Min > *o.Max {
			return fmt.Errorf("output.min %g is greater than output.max %g", *o.Min, *o.Max)
		}
	case ScoreCategorical:
		if o.Min != nil || o.Max != nil {
			return errors.New("output.min/max: a CATEGORICAL score has categories, not a range")
		}
		if len(o.Categories) == 0 {
			return errors.New("output.categories: a CATEGORICAL score needs at least one category")
		}
		for i, c := range o.Categories {
			if strings.TrimSpace(c) == "" || slices.Index(o.Categories, c) != i {
				return fmt.Errorf("output.categories[%d]: categories must be non-empty and distinct", i)
			}
		}
	case ScoreBoolean:
		if o.Min != nil || o.Max != nil || len(o.Categories) > 0 {
			return errors.New("output: a BOOLEAN score has neither range nor categories")
		}
	default:
		return fmt.Errorf("output.dataType %q must be NUMERIC, CATEGORICAL or BOOLEAN", o.DataType)
	}
	return nil
}

// GetEvaluator returns an evaluator of the project.
func (s *Store) GetEvaluator(ctx context.Context, projectID, id string) (Evaluator, error) {
	return getEvaluator(ctx, s.conn(), projectID, id)
}

func getEvaluator(ctx context.Context, c conn, projectID, id string) (Evaluator, error) {
	e, err := scanEvaluator(c.queryRow(ctx, `SELECT `+evaluatorColumns+` FROM evaluators WHERE project_id = ? AND id = ?`, projectID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Evaluator{}, fmt.Errorf("evaluator %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Evaluator{}, fmt.Errorf("get evaluator %q: %w", id, err)
	}
	return e, nil
}

func scanEvaluator(r scanner) (Evaluator, error) {
	var (
		e                    Evaluator
		definition           string
		createdAt, updatedAt int64
		def                  evaluatorDefinition
	)
	if err := r.Scan(&e.ID, &e.ProjectID, &e.Name, &e.Kind, &e.ScoreName, &definition, &createdAt, &updatedAt); err != nil {
		return Evaluator{}, err
	}
	if err := json.Unmarshal([]byte(definition), &def); err != nil {
		return Evaluator{}, fmt.Errorf("definition of evaluator %q: %w", e.ID, err)
	}
	e.Description, e.Output, e.Variables = def.Description, def.Output, def.Variables
	e.Prompt, e.Model, e.ModelParams, e.Provider = def.Prompt, def.Model, def.ModelParams, def.Provider
	e.Expression, e.URL, e.Timeout = def.Expression, def.URL, time.Duration(def.TimeoutMS)*time.Millisecond
	e.CreatedAt, e.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return e, nil
}

// ListEvaluators returns one page of the project's evaluators by name, and
// their number.
func (s *Store) ListEvaluators(ctx context.Context, projectID string, offset, limit int) ([]Evaluator, int, error) {
	return projectPage(ctx, s.conn(), "evaluators", "evaluators", evaluatorColumns, "name, id", projectID, offset, limit, scanEvaluator)
}

// UpdateEvaluator changes an evaluator; the result is validated as a whole.
// Rules that use it evaluate with the new definition from then on.
func (s *Store) UpdateEvaluator(ctx context.Context, projectID, id string, u EvaluatorUpdate) (Evaluator, error) {
	var out Evaluator
	err := s.inTx(ctx, func(c conn) error {
		e, err := getEvaluator(ctx, c, projectID, id)
		if err != nil {
			return err
		}
		setIf(&e.Name, u.Name)
		setIf(&e.Description, u.Description)
		setIf(&e.ScoreName, u.ScoreName)
		setIf(&e.Output, u.Output)
		setIf(&e.Prompt, u.Prompt)
		setIf(&e.Model, u.Model)
		setIf(&e.Provider, u.Provider)
		setIf(&e.Expression, u.Expression)
		setIf(&e.URL, u.URL)
		if u.Variables != nil {
			e.Variables = u.Variables
		}
		if u.ModelParams != nil {
			e.ModelParams = u.ModelParams
		}
		if u.Timeout != 0 {
			e.Timeout = u.Timeout
		}
		if err := normalizeEvaluator(&e); err != nil {
			return err
		}
		if u.Provider != nil {
			if err := checkProvider(ctx, c, projectID, e.Provider); err != nil {
				return err
			}
		}
		if _, err := c.exec(ctx, `UPDATE evaluators SET name = ?, score_name = ?, definition = ?, updated_at = ?
			WHERE project_id = ? AND id = ?`, e.Name, e.ScoreName, evaluatorDefinitionJSON(e), s.micros(), projectID, id); err != nil {
			return fmt.Errorf("update evaluator %q: %w", id, classify(err))
		}
		out, err = getEvaluator(ctx, c, projectID, id)
		return err
	})
	return out, err
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// DeleteEvaluator deletes an evaluator that no rule or experiment uses.
func (s *Store) DeleteEvaluator(ctx context.Context, projectID, id string) error {
	return s.inTx(ctx, func(c conn) error {
		if err := refuseInUse(ctx, c, "evaluator "+id, []string{
			`SELECT name FROM eval_rules WHERE project_id = ? AND evaluator_id = ?`,
			// evaluator_ids is a JSON array of ids, which are quoted there.
			`SELECT run_name FROM eval_experiments WHERE project_id = ? AND evaluator_ids LIKE '%"' || ? || '"%'`,
		}, projectID, id); err != nil {
			return err
		}
		res, err := c.exec(ctx, `DELETE FROM evaluators WHERE project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return fmt.Errorf("delete evaluator %q: %w", id, err)
		}
		return requireOne(res, "evaluator "+id)
	})
}
