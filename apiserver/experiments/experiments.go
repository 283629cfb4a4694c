// Package experiments serves Langfuse's v4 experiment reads,
// GET /api/public/experiments and GET /api/public/experiment-items, over the
// spans that the SDKs' experiment runner sends (langfuse.experiment.*).
package experiments // import "github.com/glassbox-dev/glassbox/apiserver/experiments"

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/scores"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Store is what the routes read.
type Store interface {
	ListExperiments(ctx context.Context, q chstore.ExperimentSearch) ([]chstore.Experiment, error)
	ListExperimentItems(ctx context.Context, q chstore.ExperimentSearch) ([]chstore.ExperimentItem, error)
	ScoresOf(ctx context.Context, projectID string, keys []string, byRun bool, perKey int) (map[string][]chstore.Score, error)
}

// Experiment is one experiment as the v4 API answers it.
type Experiment struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	StartTime   httpx.Timestamp `json:"startTime"`
	EndTime     httpx.Timestamp `json:"endTime"`
	ItemCount   int64           `json:"itemCount"`
	DatasetID   *string         `json:"datasetId"`
	// metadata group
	Metadata *httpx.JSON `json:"metadata,omitzero"`
	// scores group
	Scores []scores.ScoreV3 `json:"scores,omitzero"`
}

// Item is one experiment item: the root span of one item's run.
type Item struct {
	ID             string           `json:"id"`
	TraceID        string           `json:"traceId"`
	StartTime      httpx.Timestamp  `json:"startTime"`
	EndTime        *httpx.Timestamp `json:"endTime"`
	Level          string           `json:"level"`
	Environment    string           `json:"environment"`
	ExperimentID   string           `json:"experimentId"`
	ExperimentName string           `json:"experimentName"`
	ItemID         string           `json:"experimentItemId"`
	// The groups below are written only when asked for (see MarshalJSON).
	DatasetID             *string          `json:"experimentDatasetId"`
	ItemVersion           *string          `json:"experimentItemVersion"`
	Input                 httpx.JSON       `json:"input"`
	Output                httpx.JSON       `json:"output"`
	ExpectedOutput        httpx.JSON       `json:"expectedOutput"`
	Metadata              httpx.JSON       `json:"metadata"`
	ItemMetadata          httpx.JSON       `json:"experimentItemMetadata"`
	ExperimentMetadata    httpx.JSON       `json:"experimentMetadata"`
	ExperimentDescription *string          `json:"experimentDescription"`
	Scores                []scores.ScoreV3 `json:"scores"`

	groups map[string]bool
}

// MarshalJSON writes the core fields and the groups asked for; a field of
// an asked-for group is present even when null.
func (it Item) MarshalJSON() ([]byte, error) {
	out := map[string]any{"id": it.ID, "traceId": it.TraceID, "startTime": it.StartTime, "endTime": it.EndTime,
		"level": it.Level, "environment": it.Environment, "experimentId": it.ExperimentID,
		"experimentName": it.ExperimentName, "experimentItemId": it.ItemID}
	if it.groups["dataset"] {
		out["experimentDatasetId"], out["experimentItemVersion"] = it.DatasetID, it.ItemVersion
	}
	if it.groups["io"] {
		out["input"], out["output"], out["expectedOutput"] = it.Input, it.Output, it.ExpectedOutput
	}
	if it.groups["metadata"] {
		out["metadata"] = it.Metadata
	}
	if it.groups["itemMetadata"] {
		out["experimentItemMetadata"] = it.ItemMetadata
	}
	if it.groups["experimentMetadata"] {
		out["experimentMetadata"], out["experimentDescription"] = it.ExperimentMetadata, it.ExperimentDescription
	}
	if it.groups["scores"] {
		out["scores"] = httpx.NonNil(it.Scores)
	}
	return json.Marshal(out)
}

// Meta is the cursor paging of both lists.
type Meta struct {
	Cursor string `json:"cursor,omitempty"`
}

// Experiments is the experiments list answer.
type Experiments struct {
	Data []Experiment `json:"data"`
	Meta Meta         `json:"meta"`
}

// Items is the experiment items list answer.
type Items struct {
	Data []Item `json:"data"`
	Meta Meta   `json:"meta"`
}

var (
	experimentGroups = []string{"core", "metadata", "scores"}
	itemGroups       = []string{"core", "dataset", "io", "metadata", "itemMetadata", "experimentMetadata", "scores"}
	// The `filter` columns of each list and the observations view fields
	// they stand for.
	experimentColumns = map[string]string{"id": "experimentId", "name": "experimentName", "datasetId": "experimentDatasetId"}
	itemColumns       = map[string]string{"experimentId": "experimentId", "experimentName": "experimentName",
		"experimentItemId": "experimentItemId", "datasetId": "experimentDatasetId"}
)

func commonParams(groups []string, columns map[string]string) []httpx.Param {
	return []httpx.Param{
		{Name: "fields", Type: httpx.TypeString, Description: "Comma-separated field groups: " + strings.Join(groups, ", ") + "."},
		{Name: "limit", Type: httpx.TypeInteger, Description: "1 to 100, default 50."},
		{Name: "scoreLimit", Type: httpx.TypeInteger, Description: "Scores per row with fields=scores, 1 to 50, default 50."},
		{Name: "cursor", Type: httpx.TypeString, Description: "The meta.cursor of the previous page."},
		{Name: "fromStartTime", Type: httpx.TypeDateTime, Required: true},
		{Name: "toStartTime", Type: httpx.TypeDateTime},
		{Name: "datasetId", Type: httpx.TypeString, Description: "Comma-separated dataset ids."},
		{Name: "filter", Type: httpx.TypeString, Description: "JSON array of filter conditions over " + strings.Join(sortedKeys(columns), ", ") + "."},
	}
}

// Routes serves both lists.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/experiments", Access: httpx.ProjectKey, Handler: h.experiments,
			Doc: httpx.Doc{OperationID: "experiments_list", Tag: "Experiments", Response: Experiments{},
				Query: append(commonParams(experimentGroups, experimentColumns),
					httpx.Param{Name: "id", Type: httpx.TypeString, Description: "Comma-separated experiment ids."},
					httpx.Param{Name: "name", Type: httpx.TypeString, Description: "Comma-separated experiment names."}),
				Summary: "Experiments run by the SDKs' experiment runner whose spans started in the window, the most recently active first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/experiment-items", Access: httpx.ProjectKey, Handler: h.items,
			Doc: httpx.Doc{OperationID: "experiments_listItems", Tag: "Experiments", Response: Items{},
				Query: append(commonParams(itemGroups, itemColumns),
					httpx.Param{Name: "experimentId", Type: httpx.TypeString, Description: "Comma-separated experiment ids."},
					httpx.Param{Name: "experimentName", Type: httpx.TypeString, Description: "Comma-separated experiment names."},
					httpx.Param{Name: "experimentItemId", Type: httpx.TypeString, Description: "Comma-separated item ids."}),
				Summary: "Experiment items (each item's root span) that started in the window, newest first."},
		},
	}
}

type handlers struct {
	store Store
}

// request is what both lists parse alike.
type request struct {
	search     chstore.ExperimentSearch
	groups     map[string]bool
	scoreLimit int
}

func parse(r *http.Request, allowed []string, defaults string, columns map[string]string) (request, error) {
	q := httpx.QueryOf(r)
	req := request{groups: map[string]bool{}, search: chstore.ExperimentSearch{ProjectID: httpx.ProjectID(r)}}
	fields := q.List("fields")
	if len(fields) == 0 {
		fields = strings.Split(defaults, ",")
	}
	for _, g := range fields {
		if !slices.Contains(allowed, g) {
			return req, httpx.BadRequest("Invalid fields: unknown group %q; the groups are %s", g, strings.Join(allowed, ", "))
		}
		req.groups[g] = true
	}
	var err error
	if req.search.Limit, err = q.Int("limit", 50, 1, 100); err != nil {
		return req, err
	}
	if req.scoreLimit, err = q.Int("scoreLimit", 50, 1, 50); err != nil {
		return req, err
	}
	if !q.Has("fromStartTime") {
		return req, httpx.BadRequest("fromStartTime is required: the lists read a bounded window of spans")
	}
	if req.search.From, err = q.Micros("fromStartTime"); err != nil {
		return req, err
	}
	if req.search.To, err = q.Micros("toStartTime"); err != nil {
		return req, err
	}
	if req.search.To > 0 && req.search.To <= req.search.From {
		return req, httpx.BadRequest("toStartTime must be after fromStartTime")
	}
	if c := q.String("cursor"); c != "" {
		after := &chstore.ExperimentCursor{}
		if err := httpx.DecodeCursor(c, after, func() bool { return after.ID != "" && after.Time > 0 }); err != nil {
			return req, err
		}
		req.search.After = after
	}
	req.search.DatasetIDs = q.List("datasetId")
	if text := q.String("filter"); text != "" {
		filters, err := chstore.ParseFilters(text)
		if err != nil {
			return req, httpx.BadRequest("Invalid filter: %v", err)
		}
		for i, f := range filters {
			field, ok := columns[f.Column]
			if !ok {
				return req, httpx.BadRequest("Invalid filter: column %q; the columns are %s", f.Column, strings.Join(sortedKeys(columns), ", "))
			}
			filters[i].Column = field
		}
		req.search.Filters = filters
	}
	return req, nil
}

func (h handlers) experiments(r *http.Request) (any, error) {
	req, err := parse(r, experimentGroups, "core", experimentColumns)
	if err != nil {
		return nil, err
	}
	q := httpx.QueryOf(r)
	req.search.IDs, req.search.Names = q.List("id"), q.List("name")
	req.search.Details = req.groups["metadata"]
	found, err := h.store.ListExperiments(r.Context(), req.search)
	if err != nil {
		return nil, err
	}
	var byRun map[string][]chstore.Score
	if req.groups["scores"] {
		ids := make([]string, len(found))
		for i, e := range found {
			ids[i] = e.ID
		}
		// Scores attached to the experiment itself carry its id as their
		// dataset run id, as the SDK writes run-level evaluations.
		if byRun, err = h.store.ScoresOf(r.Context(), req.search.ProjectID, ids, true, req.scoreLimit); err != nil {
			return nil, err
		}
	}
	out := Experiments{Data: make([]Experiment, 0, len(found))}
	for _, e := range found {
		x := Experiment{ID: e.ID, Name: e.Name, Description: httpx.OptionalString(e.Description),
			StartTime: httpx.FromMicros(e.StartTime), EndTime: httpx.FromMicros(e.EndTime),
			ItemCount: e.ItemCount, DatasetID: httpx.OptionalString(e.DatasetID)}
		if req.groups["metadata"] {
			m := metadataObject(e.Metadata)
			x.Metadata = &m
		}
		if req.groups["scores"] {
			x.Scores = v3Scores(byRun[e.ID], nil)
		}
		out.Data = append(out.Data, x)
	}
	if len(found) == req.search.Limit {
		last := found[len(found)-1]
		out.Meta.Cursor = httpx.EncodeCursor(chstore.ExperimentCursor{Time: last.EndTime, ID: last.ID})
	}
	return out, nil
}

func (h handlers) items(r *http.Request) (any, error) {
	req, err := parse(r, itemGroups, "core,dataset", itemColumns)
	if err != nil {
		return nil, err
	}
	q := httpx.QueryOf(r)
	req.search.IDs, req.search.Names, req.search.ItemIDs = q.List("experimentId"), q.List("experimentName"), q.List("experimentItemId")
	g := req.groups
	req.search.Details = g["io"] || g["metadata"] || g["itemMetadata"] || g["experimentMetadata"]
	found, err := h.store.ListExperimentItems(r.Context(), req.search)
	if err != nil {
		return nil, err
	}
	var byTrace map[string][]chstore.Score
	if g["scores"] {
		traces := make([]string, len(found))
		for i, it := range found {
			traces[i] = it.TraceID
		}
		if byTrace, err = h.store.ScoresOf(r.Context(), req.search.ProjectID, traces, false, req.scoreLimit); err != nil {
			return nil, err
		}
	}
	out := Items{Data: make([]Item, 0, len(found))}
	for _, it := range found {
		x := Item{ID: it.ObservationID, TraceID: it.TraceID, StartTime: httpx.FromMicros(it.StartTime),
			EndTime: httpx.OptionalMicros(it.EndTime), Level: it.Level, Environment: it.Environment,
			ExperimentID: it.ExperimentID, ExperimentName: it.ExperimentName, ItemID: it.ItemID,
			DatasetID: httpx.OptionalString(it.DatasetID), groups: g,
			Input: httpx.JSONValue(it.Input), Output: httpx.JSONValue(it.Output), ExpectedOutput: httpx.JSONValue(it.ExpectedOutput),
			Metadata: metadataObject(it.Metadata), ItemMetadata: metadataObject(it.ItemMetadata),
			ExperimentMetadata: metadataObject(it.ExperimentMetadata), ExperimentDescription: httpx.OptionalString(it.ExperimentDescription)}
		if g["scores"] {
			// The item's own scores and its trace's, not those of other
			// observations in the trace.
			x.Scores = v3Scores(byTrace[it.TraceID], func(sc chstore.Score) bool {
				return sc.ObservationID == "" || sc.ObservationID == it.ObservationID
			})
		}
		out.Data = append(out.Data, x)
	}
	if len(found) == req.search.Limit {
		last := found[len(found)-1]
		out.Meta.Cursor = httpx.EncodeCursor(chstore.ExperimentCursor{Time: last.StartTime, ID: last.ObservationID})
	}
	return out, nil
}

// scoreGroups are the v3 field groups the embedded scores carry.
var scoreGroups = map[string]bool{"details": true, "subject": true, "annotation": true}

func v3Scores(found []chstore.Score, keep func(chstore.Score) bool) []scores.ScoreV3 {
	out := []scores.ScoreV3{}
	for _, sc := range found {
		if keep == nil || keep(sc) {
			out = append(out, scores.ToScoreV3(sc, scoreGroups))
		}
	}
	return out
}

// metadataObject is stored metadata as a JSON value: an object when the
// text is one, null when absent.
func metadataObject(text string) httpx.JSON {
	v := httpx.JSONValue(text)
	if len(v) == 0 || v[0] != '{' {
		return httpx.JSON("null")
	}
	return v
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
