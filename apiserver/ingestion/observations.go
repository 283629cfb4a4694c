package ingestion // import "github.com/glassbox-dev/glassbox/apiserver/ingestion"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing/costing"
)

// observationTypes maps the event types that create or update observations
// to the observation type; "" means the body's type field decides
// (observation-create/update) and traceEvent marks trace-create.
var observationTypes = map[string]string{
	"trace-create":       traceEvent,
	"span-create":        model.TypeSpan,
	"span-update":        model.TypeSpan,
	"generation-create":  model.TypeGeneration,
	"generation-update":  model.TypeGeneration,
	"event-create":       model.TypeEvent,
	"agent-create":       model.TypeAgent,
	"tool-create":        model.TypeTool,
	"chain-create":       model.TypeChain,
	"retriever-create":   model.TypeRetriever,
	"evaluator-create":   model.TypeEvaluator,
	"embedding-create":   model.TypeEmbedding,
	"guardrail-create":   model.TypeGuardrail,
	"observation-create": "",
	"observation-update": "",
}

const traceEvent = "TRACE"

func isObservationType(t string) bool {
	_, ok := observationTypes[t]
	return ok
}

func isUpdate(t string) bool { return strings.HasSuffix(t, "-update") }

// legacyTypes are what the body of observation-create/update may name.
var legacyTypes = []string{model.TypeGeneration, model.TypeSpan, model.TypeEvent}

// levels are the observation levels accepted.
var levels = []string{model.LevelDebug, model.LevelDefault, model.LevelWarning, model.LevelError}

// observationBody holds the fields of every observation event; which apply
// depends on the type. Absent and null fields leave the stored value.
type observationBody struct {
	ID                  string          `json:"id"`
	TraceID             string          `json:"traceId"`
	Type                string          `json:"type"`
	Name                *string         `json:"name"`
	StartTime           *string         `json:"startTime"`
	EndTime             *string         `json:"endTime"`
	CompletionStartTime *string         `json:"completionStartTime"`
	Metadata            json.RawMessage `json:"metadata"`
	Input               json.RawMessage `json:"input"`
	Output              json.RawMessage `json:"output"`
	Level               *string         `json:"level"`
	StatusMessage       *string         `json:"statusMessage"`
	ParentObservationID *string         `json:"parentObservationId"`
	Version             *string         `json:"version"`
	Environment         *string         `json:"environment"`
	// Generation-like types only.
	Model           *string         `json:"model"`
	ModelParameters json.RawMessage `json:"modelParameters"`
	Usage           json.RawMessage `json:"usage"`
	UsageDetails    json.RawMessage `json:"usageDetails"`
	CostDetails     json.RawMessage `json:"costDetails"`
	PromptName      *string         `json:"promptName"`
	PromptVersion   *int64          `json:"promptVersion"`
}

// traceBody holds the fields of trace-create.
type traceBody struct {
	ID          string          `json:"id"`
	Timestamp   *string         `json:"timestamp"`
	Name        *string         `json:"name"`
	UserID      *string         `json:"userId"`
	SessionID   *string         `json:"sessionId"`
	Release     *string         `json:"release"`
	Version     *string         `json:"version"`
	Environment *string         `json:"environment"`
	Metadata    json.RawMessage `json:"metadata"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`
	Public      *bool           `json:"public"`
	Tags        []string        `json:"tags"`
}

// entity is the events of one observation (or legacy trace) in a batch.
type entity struct {
	id     string
	trace  bool
	events []event
}

// ingestObservations merges the events of each entity, in order (creates
// before updates, then by timestamp), onto the stored row when updates need
// one, and stores the results in one insert.
func (h handler) ingestObservations(ctx context.Context, project string, events []event, res *results) {
	var entities []*entity
	byKey := map[string]*entity{}
	for _, ev := range events {
		var head struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(ev.body, &head); err != nil || head.ID == "" {
			res.invalid(ev.id, "body.id is required, a string")
			continue
		}
		trace := ev.typ == "trace-create"
		key := "o:" + head.ID
		if trace {
			key = "t:" + head.ID
		}
		e := byKey[key]
		if e == nil {
			e = &entity{id: head.ID, trace: trace}
			byKey[key] = e
			entities = append(entities, e)
		}
		e.events = append(e.events, ev)
	}
	var (
		rows []model.Observation
		ok   [][]string // the event ids each row stands for
		cost = &batchCost{h: h, project: project, now: time.Now()}
	)
	for _, e := range entities {
		sort.SliceStable(e.events, func(i, j int) bool {
			a, b := e.events[i], e.events[j]
			if isUpdate(a.typ) != isUpdate(b.typ) {
				return !isUpdate(a.typ)
			}
			return a.timestamp.Before(b.timestamp)
		})
		row, ids, err := h.merge(ctx, project, e, res, cost)
		if err != nil {
			h.logger.Error("read observation to update", zap.String("project", project), zap.Error(err))
			for _, ev := range e.events {
				res.storeFailed(ev.id, err, "the stored observation could not be read")
			}
			continue
		}
		if len(ids) > 0 {
			rows, ok = append(rows, row), append(ok, ids)
		}
	}
	if len(rows) == 0 {
		return
	}
	if err := h.store.InsertObservations(ctx, rows); err != nil {
		h.logger.Error("store ingested observations", zap.String("project", project), zap.Error(err))
		for _, ids := range ok {
			for _, id := range ids {
				res.storeFailed(id, err, "observations could not be stored")
			}
		}
		return
	}
	for _, ids := range ok {
		for _, id := range ids {
			res.ok(id)
		}
	}
}

// merge applies an entity's events and returns the row to store, priced,
// and the ids of the events that went into it; failing events are reported
// in res.
func (h handler) merge(ctx context.Context, project string, e *entity, res *results, cost *batchCost) (model.Observation, []string, error) {
	var (
		row  model.Observation
		have bool
	)
	// Updates, and trace-create (which SDKs resend to update a trace),
	// start from the stored row.
	if e.trace || slices.ContainsFunc(e.events, func(ev event) bool { return isUpdate(ev.typ) }) {
		stored, err := h.store.GetObservation(ctx, project, e.id)
		switch {
		case err == nil:
			row, have = stored.Observation, true
			cost.reset(ctx, &row)
		case !errors.Is(err, chstore.ErrNotFound):
			return model.Observation{}, nil, err
		}
	}
	var ids []string
	for _, ev := range e.events {
		var err error
		if e.trace {
			err = applyTrace(&row, have, project, ev)
		} else {
			err = applyObservation(&row, have, project, ev)
		}
		if err != nil {
			res.invalid(ev.id, err.Error())
			continue
		}
		have = true
		ids = append(ids, ev.id)
	}
	if len(ids) > 0 {
		cost.apply(ctx, &row)
	}
	return row, ids, nil
}

// batchCost prices the generations of one batch. The project's model
// definitions are loaded from the control plane once, for the first row
// that names a model.
type batchCost struct {
	h       handler
	project string
	now     time.Time
	loaded  bool
}

func (c *batchCost) load(ctx context.Context) {
	if c.loaded {
		return
	}
	c.loaded = true
	if err := c.h.pricer.LoadProject(ctx, c.h.models, c.project); err != nil {
		c.h.logger.Warn("Project model definitions did not all load; the valid and earlier ones apply",
			zap.String("project", c.project), zap.Error(err))
	}
}

// reset removes the cost Glassbox derived for a stored row, before events
// change its model or usage; apply prices the merged row again.
func (c *batchCost) reset(ctx context.Context, o *model.Observation) {
	if o.Model == "" || len(o.CostDetails) == 0 {
		return
	}
	c.load(ctx)
	costing.Reset(c.h.pricer, c.project, o, c.now, costing.DefaultEstimation)
}

// apply prices a row by the rule OTLP spans are priced by.
func (c *batchCost) apply(ctx context.Context, o *model.Observation) {
	if o.Model == "" {
		return
	}
	c.load(ctx)
	if _, err := costing.Apply(c.h.pricer, c.project, o, c.now, costing.DefaultEstimation, nil); err != nil {
		c.h.logger.Debug("Cannot estimate usage", zap.String("model", o.Model), zap.Error(err))
	}
}

// applyTrace applies a trace-create to the trace's root row.
func applyTrace(row *model.Observation, have bool, project string, ev event) error {
	var b traceBody
	if err := json.Unmarshal(ev.body, &b); err != nil {
		return fmt.Errorf("trace body: %w", err)
	}
	next := *row
	if !have {
		next = model.Observation{
			ProjectID: project, TraceID: b.ID, ID: b.ID, Type: model.TypeSpan, Level: model.LevelDefault,
			StartTime: ev.timestamp.UnixMicro(), Environment: environment(b.Environment), Metadata: "{}",
			TraceMetadata: "{}", IsRoot: true, SampleRate: 1,
		}
		if b.Timestamp != nil {
			ts, err := parseTime("timestamp", *b.Timestamp)
			if err != nil {
				return err
			}
			next.StartTime = ts
		}
	}
	if b.Name != nil {
		next.Name, next.TraceName = *b.Name, *b.Name
	}
	setString(&next.UserID, b.UserID)
	setString(&next.SessionID, b.SessionID)
	setString(&next.Release, b.Release)
	setString(&next.Version, b.Version)
	if b.Public != nil {
		next.Public = *b.Public
	}
	if len(b.Tags) > 0 {
		tags := append(slices.Clone(next.Tags), b.Tags...)
		slices.Sort(tags)
		next.Tags = slices.Compact(tags)
	}
	var err error
	if next.TraceMetadata, err = mergeMetadata(next.TraceMetadata, b.Metadata); err != nil {
		return err
	}
	if text, ok := jsonText(b.Input); ok {
		next.Input, next.TraceInput = text, text
	}
	if text, ok := jsonText(b.Output); ok {
		next.Output, next.TraceOutput = text, text
	}
	*row = next
	return nil
}

// applyObservation applies one observation event.
func applyObservation(row *model.Observation, have bool, project string, ev event) error {
	var b observationBody
	if err := json.Unmarshal(ev.body, &b); err != nil {
		return fmt.Errorf("observation body: %w", err)
	}
	typ := observationTypes[ev.typ]
	if typ == "" {
		if !slices.Contains(legacyTypes, b.Type) {
			return fmt.Errorf("body.type %s: expected GENERATION, SPAN or EVENT", quote(b.Type))
		}
		typ = b.Type
	}
	next := *row
	if !have {
		// An observation without a trace gets a trace of its own id.
		trace := b.TraceID
		if trace == "" {
			trace = b.ID
		}
		next = model.Observation{
			ProjectID: project, TraceID: trace, ID: b.ID, Type: typ, Level: model.LevelDefault,
			StartTime: ev.timestamp.UnixMicro(), Environment: environment(b.Environment), Metadata: "{}",
			TraceMetadata: "{}", IsRoot: true, SampleRate: 1,
		}
		if b.StartTime != nil {
			ts, err := parseTime("startTime", *b.StartTime)
			if err != nil {
				return err
			}
			next.StartTime = ts
		}
	}
	if b.ParentObservationID != nil {
		next.ParentID = *b.ParentObservationID
		next.IsRoot = next.ParentID == ""
	}
	setString(&next.Name, b.Name)
	setString(&next.StatusMessage, b.StatusMessage)
	setString(&next.Version, b.Version)
	if b.Level != nil {
		if !slices.Contains(levels, *b.Level) {
			return fmt.Errorf("body.level %s: expected DEBUG, DEFAULT, WARNING or ERROR", quote(*b.Level))
		}
		next.Level = *b.Level
	}
	for _, t := range []struct {
		field string
		value *string
		dst   *int64
	}{{"endTime", b.EndTime, &next.EndTime}, {"completionStartTime", b.CompletionStartTime, &next.CompletionStartTime}} {
		if t.value == nil {
			continue
		}
		us, err := parseTime(t.field, *t.value)
		if err != nil {
			return err
		}
		*t.dst = us
	}
	if next.EndTime != 0 && next.EndTime < next.StartTime {
		next.EndTime = next.StartTime
	}
	var err error
	if next.Metadata, err = mergeMetadata(next.Metadata, b.Metadata); err != nil {
		return err
	}
	if text, ok := jsonText(b.Input); ok {
		next.Input = text
	}
	if text, ok := jsonText(b.Output); ok {
		next.Output = text
	}
	// Spans and events carry no model, usage or cost, as in Langfuse.
	if next.Type != model.TypeSpan && next.Type != model.TypeEvent {
		if err := applyGeneration(&next, b); err != nil {
			return err
		}
	}
	*row = next
	return nil
}

func applyGeneration(o *model.Observation, b observationBody) error {
	setString(&o.Model, b.Model)
	if text, ok := jsonText(b.ModelParameters); ok {
		o.ModelParameters = text
	}
	if b.PromptName != nil || b.PromptVersion != nil {
		if b.PromptName == nil || b.PromptVersion == nil {
			return errors.New("body.promptName and body.promptVersion must be set together")
		}
		o.PromptName, o.PromptVersion = *b.PromptName, *b.PromptVersion
	}
	raw := map[string]int64{}
	cost := map[string]float64{}
	for _, part := range []json.RawMessage{b.Usage, b.UsageDetails} {
		if err := usageCounts(part, raw, cost); err != nil {
			return err
		}
	}
	if usage := mapping.NormalizeUsage(raw); len(usage) > 0 {
		o.UsageDetails = usage
	}
	if err := costs(b.CostDetails, cost); err != nil {
		return err
	}
	if len(cost) > 0 {
		o.CostDetails = cost
	}
	return nil
}

// usageCounts flattens a usage object into counts (nested objects joined
// with "."); the legacy inputCost/outputCost/totalCost go to cost, the unit
// is dropped.
func usageCounts(raw json.RawMessage, counts map[string]int64, cost map[string]float64) error {
	if isNull(raw) {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return errors.New("body.usage and body.usageDetails must be objects of token counts")
	}
	legacyCost := map[string]string{"inputCost": "input", "outputCost": "output", "totalCost": "total"}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if to, ok := legacyCost[k]; ok && prefix == "" {
				if f, ok := number(v); ok && f >= 0 {
					cost[to] = f
				}
				continue
			}
			switch v := v.(type) {
			case map[string]any:
				walk(prefix+k+".", v)
			default:
				if f, ok := number(v); ok && f >= 0 && f == float64(int64(f)) {
					counts[prefix+k] = int64(f)
				}
			}
		}
	}
	walk("", obj)
	return nil
}

// costs reads a cost-details object; only non-negative numbers count.
func costs(raw json.RawMessage, cost map[string]float64) error {
	if isNull(raw) {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return errors.New("body.costDetails must be an object of USD amounts")
	}
	for k, v := range obj {
		if f, ok := number(v); ok && f >= 0 {
			cost[k] = f
		}
	}
	return nil
}

// number reads a JSON number or a numeric string.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func environment(env *string) string {
	if env == nil {
		return mapping.NormalizeEnvironment("")
	}
	return mapping.NormalizeEnvironment(*env)
}

func parseTime(field, s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("body.%s %s: expected an ISO 8601 date-time with a zone", field, quote(s))
	}
	return t.UnixMicro(), nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// jsonText is how inputs and outputs are stored: a JSON string as its text,
// any other value as compact JSON (as the OTLP path stores them). ok is false
// for absent and null values, which keep what is stored.
func jsonText(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw), true
	}
	return buf.String(), true
}

// mergeMetadata deep-merges an update into stored metadata (a JSON object
// text); a non-object update is kept under the key "metadata".
func mergeMetadata(stored string, update json.RawMessage) (string, error) {
	if isNull(update) {
		return stored, nil
	}
	var v any
	if err := json.Unmarshal(update, &v); err != nil {
		return "", fmt.Errorf("body.metadata: %w", err)
	}
	patch, ok := v.(map[string]any)
	if !ok {
		patch = map[string]any{"metadata": v}
	}
	base := map[string]any{}
	if stored != "" {
		if err := json.Unmarshal([]byte(stored), &base); err != nil {
			base = map[string]any{}
		}
	}
	out, _ := json.Marshal(deepMerge(base, patch))
	return string(out), nil
}

func deepMerge(base, patch map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range patch {
		if sub, ok := v.(map[string]any); ok {
			if old, ok := out[k].(map[string]any); ok {
				out[k] = deepMerge(old, sub)
				continue
			}
		}
		out[k] = v
	}
	return out
}
