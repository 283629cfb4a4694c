package scores

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// ScoreV3 is a score as Langfuse's v3 read API answers it: the core fields
// always, `value` typed by dataType (number, boolean or string), and the
// `details`, `subject` and `annotation` groups when asked for.
type ScoreV3 struct {
	ID          string          `json:"id"`
	ProjectID   string          `json:"projectId"`
	Name        string          `json:"name"`
	Source      string          `json:"source"`
	Timestamp   httpx.Timestamp `json:"timestamp"`
	Environment string          `json:"environment"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	UpdatedAt   httpx.Timestamp `json:"updatedAt"`
	DataType    string          `json:"dataType"`
	Value       any             `json:"value"`
	// details
	Comment  *string    `json:"comment,omitempty"`
	ConfigID *string    `json:"configId,omitempty"`
	Metadata httpx.JSON `json:"metadata,omitempty"`
	// annotation
	AuthorUserID *string `json:"authorUserId,omitempty"`
	QueueID      *string `json:"queueId,omitempty"`
	// subject
	Subject *Subject `json:"subject,omitempty"`

	// groups are the field groups asked for; their fields are present, null
	// when unset, and the others absent.
	groups map[string]bool
}

// MarshalJSON writes the core fields and the asked-for groups.
func (s ScoreV3) MarshalJSON() ([]byte, error) {
	out := map[string]any{"id": s.ID, "projectId": s.ProjectID, "name": s.Name, "source": s.Source, "timestamp": s.Timestamp,
		"environment": s.Environment, "createdAt": s.CreatedAt, "updatedAt": s.UpdatedAt, "dataType": s.DataType, "value": s.Value}
	if s.groups["details"] {
		out["comment"], out["configId"], out["metadata"] = s.Comment, s.ConfigID, s.Metadata
	}
	if s.groups["annotation"] {
		out["authorUserId"], out["queueId"] = s.AuthorUserID, s.QueueID
	}
	if s.groups["subject"] {
		out["subject"] = s.Subject
	}
	return json.Marshal(out)
}

// Subject is what a v3 score is attached to.
type Subject struct {
	Kind    string `json:"kind"` // trace, observation, session or experiment
	ID      string `json:"id"`
	TraceID string `json:"traceId,omitempty"`
}

// ListV3 is the v3 list answer: a page and the cursor of the next one.
type ListV3 struct {
	Data []ScoreV3 `json:"data"`
	Meta MetaV3    `json:"meta"`
}

// MetaV3 is the v3 list's paging.
type MetaV3 struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor,omitempty"`
}

var v3FieldGroups = []string{"details", "subject", "annotation"}

var v3Params = []httpx.Param{
	{Name: "limit", Type: httpx.TypeInteger, Description: "1 to 100, default 50."},
	{Name: "cursor", Type: httpx.TypeString, Description: "The meta.cursor of the previous page."},
	{Name: "fields", Type: httpx.TypeString, Description: "Comma-separated groups beyond the core fields: details, subject, annotation."},
	{Name: "id", Type: httpx.TypeString}, {Name: "name", Type: httpx.TypeString}, {Name: "source", Type: httpx.TypeString},
	{Name: "dataType", Type: httpx.TypeString}, {Name: "environment", Type: httpx.TypeString}, {Name: "configId", Type: httpx.TypeString},
	{Name: "queueId", Type: httpx.TypeString}, {Name: "authorUserId", Type: httpx.TypeString},
	{Name: "value", Type: httpx.TypeString, Description: "Exact values; needs one dataType of NUMERIC, BOOLEAN or CATEGORICAL."},
	{Name: "valueMin", Type: httpx.TypeNumber, Description: "Inclusive; needs dataType=NUMERIC."},
	{Name: "valueMax", Type: httpx.TypeNumber, Description: "Inclusive; needs dataType=NUMERIC."},
	{Name: "traceId", Type: httpx.TypeString}, {Name: "sessionId", Type: httpx.TypeString},
	{Name: "observationId", Type: httpx.TypeString, Description: "Needs traceId."},
	{Name: "experimentId", Type: httpx.TypeString, Description: "Dataset run ids."},
	{Name: "fromTimestamp", Type: httpx.TypeDateTime}, {Name: "toTimestamp", Type: httpx.TypeDateTime},
}

func v3Route(h handlers) httpx.Route {
	return httpx.Route{
		Method: http.MethodGet, Path: "/api/public/v3/scores", Access: httpx.ProjectKey, Handler: h.listV3,
		Doc: httpx.Doc{OperationID: "scoresV3_getMany", Tag: "Scores", Response: ListV3{}, Query: v3Params,
			Summary: "The project's scores, newest first, by cursor; every list parameter takes comma-separated values (OR within, AND across)."},
	}
}

func (h handlers) listV3(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	limit, err := q.Int("limit", 50, 1, 100)
	if err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	for _, g := range q.List("fields") {
		if !slices.Contains(v3FieldGroups, g) {
			return nil, httpx.BadRequest("Invalid fields: unknown group %q; the groups are %s", g, strings.Join(v3FieldGroups, ", "))
		}
		groups[g] = true
	}
	search := chstore.ScoreSearch{ScoreFilter: chstore.ScoreFilter{ProjectID: httpx.ProjectID(r), Limit: limit}, Keyset: true}
	if c := q.String("cursor"); c != "" {
		search.After = &chstore.ScoreCursor{}
		if err := httpx.DecodeCursor(c, search.After, func() bool { return search.After.ID != "" }); err != nil {
			return nil, err
		}
	}
	if search.From, err = q.Micros("fromTimestamp"); err != nil {
		return nil, err
	}
	if search.To, err = q.Micros("toTimestamp"); err != nil {
		return nil, err
	}
	if search.Filters, search.ValueIn, err = v3Filters(q); err != nil {
		return nil, err
	}
	scores, _, err := h.store.SearchScores(r.Context(), search)
	if err != nil {
		return nil, err
	}
	out := ListV3{Data: make([]ScoreV3, 0, len(scores)), Meta: MetaV3{Limit: limit}}
	for _, sc := range scores {
		out.Data = append(out.Data, ToScoreV3(sc, groups))
	}
	if len(scores) == limit {
		last := scores[len(scores)-1]
		out.Meta.Cursor = httpx.EncodeCursor(chstore.ScoreCursor{Timestamp: last.Timestamp, ID: last.ID})
	}
	return out, nil
}

// v3Filters turns the comma-separated parameters into the filter grammar
// and the numbers a value must be one of, with v3's rules on which may go
// together.
func v3Filters(q httpx.Query) (out []chstore.Filter, valueIn []float64, err error) {
	anyOf := func(column string, values []string) {
		if len(values) > 0 {
			list := make([]any, len(values))
			for i, v := range values {
				list[i] = v
			}
			out = append(out, chstore.Filter{Column: column, Type: "stringOptions", Operator: "any of", Value: list})
		}
	}
	upper := func(vs []string) []string {
		up := make([]string, len(vs))
		for i, v := range vs {
			up[i] = strings.ToUpper(v)
		}
		return up
	}
	traces, sessions, observations, experiments := q.List("traceId"), q.List("sessionId"), q.List("observationId"), q.List("experimentId")
	switch {
	case len(observations) > 0 && len(traces) == 0:
		return nil, nil, httpx.BadRequest("Invalid observationId: observation ids are scoped to a trace; give traceId too")
	case len(sessions) > 0 && (len(traces) > 0 || len(observations) > 0 || len(experiments) > 0):
		return nil, nil, httpx.BadRequest("Invalid sessionId: it cannot be combined with traceId, observationId or experimentId")
	case len(experiments) > 0 && (len(traces) > 0 || len(observations) > 0):
		return nil, nil, httpx.BadRequest("Invalid experimentId: it cannot be combined with traceId or observationId")
	}
	anyOf("id", q.List("id"))
	anyOf("name", q.List("name"))
	anyOf("source", upper(q.List("source")))
	dataTypes := upper(q.List("dataType"))
	anyOf("dataType", dataTypes)
	anyOf("environment", q.List("environment"))
	anyOf("configId", q.List("configId"))
	anyOf("queueId", q.List("queueId"))
	anyOf("authorUserId", q.List("authorUserId"))
	anyOf("traceId", traces)
	anyOf("observationId", observations)
	anyOf("sessionId", sessions)
	anyOf("datasetRunId", experiments)

	values := q.List("value")
	single := ""
	if len(dataTypes) == 1 {
		single = dataTypes[0]
	}
	if len(values) > 0 {
		switch single {
		case chstore.ScoreNumeric:
			for _, v := range values {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
					return nil, nil, httpx.BadRequest("Invalid value %q: NUMERIC values are finite numbers", v)
				}
				valueIn = append(valueIn, f)
			}
		case chstore.ScoreBoolean:
			for _, v := range values {
				switch strings.ToLower(v) {
				case "true":
					valueIn = append(valueIn, 1)
				case "false":
					valueIn = append(valueIn, 0)
				default:
					return nil, nil, httpx.BadRequest("Invalid value %q: BOOLEAN values are true or false", v)
				}
			}
		case chstore.ScoreCategorical:
			anyOf("stringValue", values)
		default:
			return nil, nil, httpx.BadRequest("Invalid value: it needs exactly one dataType of NUMERIC, BOOLEAN or CATEGORICAL")
		}
	}
	for _, bound := range []struct{ name, op string }{{"valueMin", ">="}, {"valueMax", "<="}} {
		raw := q.String(bound.name)
		if raw == "" {
			continue
		}
		if single != chstore.ScoreNumeric {
			return nil, nil, httpx.BadRequest("Invalid %s: it needs dataType=NUMERIC alone", bound.name)
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, nil, httpx.BadRequest("Invalid %s=%q: expected a finite number", bound.name, raw)
		}
		out = append(out, chstore.Filter{Column: "value", Type: "number", Operator: bound.op, Value: f})
	}
	return out, valueIn, nil
}

// ToScoreV3 is sc as the v3 API writes it, with the field groups asked for
// (details, subject, annotation).
func ToScoreV3(sc chstore.Score, groups map[string]bool) ScoreV3 {
	api := ToScore(sc)
	out := ScoreV3{ID: sc.ID, ProjectID: sc.ProjectID, Name: sc.Name, Source: sc.Source, Timestamp: api.Timestamp,
		Environment: sc.Environment, CreatedAt: api.CreatedAt, UpdatedAt: api.UpdatedAt, DataType: sc.DataType, groups: groups}
	switch sc.DataType {
	case chstore.ScoreBoolean:
		out.Value = sc.Value == 1
	case chstore.ScoreCategorical, chstore.ScoreText, chstore.ScoreCorrection:
		out.Value = sc.StringValue
	default:
		out.Value = sc.Value
	}
	if groups["details"] {
		out.Comment, out.ConfigID, out.Metadata = api.Comment, api.ConfigID, api.Metadata
	}
	if groups["annotation"] {
		out.AuthorUserID, out.QueueID = api.AuthorUserID, api.QueueID
	}
	if groups["subject"] {
		switch {
		case sc.ObservationID != "":
			out.Subject = &Subject{Kind: "observation", ID: sc.ObservationID, TraceID: sc.TraceID}
		case sc.TraceID != "":
			out.Subject = &Subject{Kind: "trace", ID: sc.TraceID}
		case sc.SessionID != "":
			out.Subject = &Subject{Kind: "session", ID: sc.SessionID}
		case sc.DatasetRunID != "":
			out.Subject = &Subject{Kind: "experiment", ID: sc.DatasetRunID}
		}
	}
	return out
}
