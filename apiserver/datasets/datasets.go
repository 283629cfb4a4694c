// Package datasets serves datasets, their items, and the runs (experiments)
// over them: run items link a dataset item to the trace a run produced.
package datasets // import "github.com/glassbox-dev/glassbox/apiserver/datasets"

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Store is what the routes need from the control plane store.
type Store interface {
	UpsertDataset(ctx context.Context, projectID string, u controlplane.DatasetUpsert) (controlplane.Dataset, error)
	GetDataset(ctx context.Context, projectID, name string) (controlplane.Dataset, error)
	ListDatasets(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dataset, int, error)
	UpsertDatasetItem(ctx context.Context, projectID string, u controlplane.DatasetItemUpsert) (controlplane.DatasetItem, error)
	GetDatasetItem(ctx context.Context, projectID, id string) (controlplane.DatasetItem, error)
	ListDatasetItems(ctx context.Context, projectID string, f controlplane.DatasetItemFilter) ([]controlplane.DatasetItem, int, error)
	DeleteDatasetItem(ctx context.Context, projectID, id string) error
	CreateDatasetRunItem(ctx context.Context, projectID string, n controlplane.NewDatasetRunItem) (controlplane.DatasetRunItem, error)
	GetDatasetRun(ctx context.Context, projectID, datasetName, runName string) (controlplane.DatasetRun, error)
	ListDatasetRuns(ctx context.Context, projectID, datasetName string, offset, limit int) ([]controlplane.DatasetRun, int, error)
	DeleteDatasetRun(ctx context.Context, projectID, datasetName, runName string) error
	ListDatasetRunItems(ctx context.Context, projectID string, f controlplane.DatasetRunItemFilter) ([]controlplane.DatasetRunItem, int, error)
}

// Observations finds the trace of an observation, for run items that name
// only the observation.
type Observations interface {
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
}

// Dataset is a dataset as the SDKs read it.
type Dataset struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          *string         `json:"description"`
	Metadata             httpx.JSON      `json:"metadata"`
	InputSchema          httpx.JSON      `json:"inputSchema"`
	ExpectedOutputSchema httpx.JSON      `json:"expectedOutputSchema"`
	ProjectID            string          `json:"projectId"`
	CreatedAt            httpx.Timestamp `json:"createdAt"`
	UpdatedAt            httpx.Timestamp `json:"updatedAt"`
}

// DatasetRequest is the body of POST /api/public/v2/datasets: an upsert by
// name. Omitted fields keep their values; null clears metadata and schemas.
type DatasetRequest struct {
	Name                 string     `json:"name"`
	Description          *string    `json:"description,omitempty"`
	Metadata             httpx.JSON `json:"metadata,omitempty"`
	InputSchema          httpx.JSON `json:"inputSchema,omitempty"`
	ExpectedOutputSchema httpx.JSON `json:"expectedOutputSchema,omitempty"`
}

// Item is a dataset item.
type Item struct {
	ID                  string          `json:"id"`
	Status              string          `json:"status"`
	Input               httpx.JSON      `json:"input"`
	ExpectedOutput      httpx.JSON      `json:"expectedOutput"`
	Metadata            httpx.JSON      `json:"metadata"`
	SourceTraceID       *string         `json:"sourceTraceId"`
	SourceObservationID *string         `json:"sourceObservationId"`
	DatasetID           string          `json:"datasetId"`
	DatasetName         string          `json:"datasetName"`
	CreatedAt           httpx.Timestamp `json:"createdAt"`
	UpdatedAt           httpx.Timestamp `json:"updatedAt"`
	// MediaReferences are the media references in input, expected output
	// and metadata whose media is stored, resolved with a download URL.
	MediaReferences []MediaReference `json:"mediaReferences"`
}

// MediaReference is one resolved media reference of an item.
type MediaReference struct {
	Field           string          `json:"field"` // input, expectedOutput or metadata
	ReferenceString string          `json:"referenceString"`
	JSONPath        string          `json:"jsonPath"`
	Media           MediaReferenced `json:"media"`
}

// MediaReferenced is the media a reference names.
type MediaReferenced struct {
	MediaID       string          `json:"mediaId"`
	ContentType   string          `json:"contentType"`
	ContentLength int64           `json:"contentLength"`
	URL           string          `json:"url"`
	URLExpiry     httpx.Timestamp `json:"urlExpiry"`
}

// ItemRequest is the body of POST /api/public/dataset-items: an upsert by
// id. Omitted fields keep their values; null clears input, expected output
// and metadata.
type ItemRequest struct {
	DatasetName         string     `json:"datasetName"`
	ID                  string     `json:"id,omitempty"`
	Input               httpx.JSON `json:"input,omitempty"`
	ExpectedOutput      httpx.JSON `json:"expectedOutput,omitempty"`
	Metadata            httpx.JSON `json:"metadata,omitempty"`
	SourceTraceID       *string    `json:"sourceTraceId,omitempty"`
	SourceObservationID *string    `json:"sourceObservationId,omitempty"`
	Status              string     `json:"status,omitempty"`
}

// Run is a dataset run.
type Run struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Metadata    httpx.JSON      `json:"metadata"`
	DatasetID   string          `json:"datasetId"`
	DatasetName string          `json:"datasetName"`
	CreatedAt   httpx.Timestamp `json:"createdAt"`
	UpdatedAt   httpx.Timestamp `json:"updatedAt"`
}

// RunWithItems is a run with all its run items.
type RunWithItems struct {
	Run
	DatasetRunItems []RunItem `json:"datasetRunItems"`
}

// RunItem links a dataset item to the trace a run produced for it.
type RunItem struct {
	ID             string          `json:"id"`
	DatasetRunID   string          `json:"datasetRunId"`
	DatasetRunName string          `json:"datasetRunName"`
	DatasetItemID  string          `json:"datasetItemId"`
	TraceID        string          `json:"traceId"`
	ObservationID  *string         `json:"observationId"`
	CreatedAt      httpx.Timestamp `json:"createdAt"`
	UpdatedAt      httpx.Timestamp `json:"updatedAt"`
}

// RunItemRequest is the body of POST /api/public/dataset-run-items. The run
// is created on first use with the description and metadata given then.
type RunItemRequest struct {
	RunName        string     `json:"runName"`
	RunDescription string     `json:"runDescription,omitempty"`
	Metadata       httpx.JSON `json:"metadata,omitempty"`
	DatasetItemID  string     `json:"datasetItemId"`
	// TraceID is required unless ObservationID names a stored observation.
	TraceID       string `json:"traceId,omitempty"`
	ObservationID string `json:"observationId,omitempty"`
	// CreatedAt sets the run item's creation time (now when absent).
	CreatedAt *httpx.Timestamp `json:"createdAt,omitempty"`
	// DatasetVersion is the dataset version the run used; the item must
	// have been active then.
	DatasetVersion *httpx.Timestamp `json:"datasetVersion,omitempty"`
}

// DatasetV1 is a dataset as the v1 routes answer it: with its active items
// and the names of its runs.
type DatasetV1 struct {
	Dataset
	Items []Item   `json:"items"`
	Runs  []string `json:"runs"`
}

// Message answers deletions.
type Message struct {
	Message string `json:"message"`
}

// MediaRecords resolves a project's media with a signed download URL
// (media.Service).
type MediaRecords interface {
	Record(r *http.Request, projectID, mediaID string) (media.Record, error)
}

type handlers struct {
	store        Store
	observations Observations
	media        MediaRecords
}

// Routes returns the dataset, dataset item, run and run item routes.
// Items' media references are resolved through mediaRecords.
func Routes(store Store, observations Observations, mediaRecords MediaRecords) []httpx.Route {
	h := handlers{store: store, observations: observations, media: mediaRecords}
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/v2/datasets", Access: httpx.ProjectKey, Handler: h.upsertDataset,
			Doc: httpx.Doc{OperationID: "datasets_create", Tag: "Datasets", Body: DatasetRequest{}, Response: Dataset{},
				Summary: "Create a dataset, or update the one with the same name."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/datasets", Access: httpx.ProjectKey, Handler: h.listDatasets,
			Doc: httpx.Doc{OperationID: "datasets_list", Tag: "Datasets", Response: httpx.List[Dataset]{}, Query: httpx.PageParams,
				Summary: "The project's datasets, newest first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/datasets/{datasetName}", Access: httpx.ProjectKey, Handler: h.getDataset,
			Doc: httpx.Doc{OperationID: "datasets_get", Tag: "Datasets", Response: Dataset{},
				Summary: "One dataset by name ('/' in folder names encoded as %2F)."},
		},
		// The v1 dataset routes: the list is v2's, the others add items and runs.
		{
			Method: http.MethodPost, Path: "/api/public/datasets", Access: httpx.ProjectKey, Handler: h.upsertDatasetV1,
			Doc: httpx.Doc{OperationID: "datasets_createV1", Tag: "Datasets", Body: DatasetRequest{}, Response: DatasetV1{},
				Summary: "Create a dataset, or update the one with the same name (v1: answered with empty items and runs)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/datasets", Access: httpx.ProjectKey, Handler: h.listDatasets,
			Doc: httpx.Doc{OperationID: "datasets_listV1", Tag: "Datasets", Response: httpx.List[Dataset]{}, Query: httpx.PageParams,
				Summary: "The project's datasets, newest first (v1 path of GET /api/public/v2/datasets)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/datasets/{datasetName}", Access: httpx.ProjectKey, Handler: h.getDatasetV1,
			Doc: httpx.Doc{OperationID: "datasets_getV1", Tag: "Datasets", Response: DatasetV1{},
				Summary: "One dataset by name with its active items and the names of its runs (v1)."},
		},
		{
			Method: http.MethodPost, Path: "/api/public/dataset-items", Access: httpx.ProjectKey, Handler: h.upsertItem, LargeBody: true,
			Doc: httpx.Doc{OperationID: "datasetItems_create", Tag: "Datasets", Body: ItemRequest{}, Response: Item{},
				Summary: "Create a dataset item, or update the one with the same id; checked against the dataset's schemas."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/dataset-items", Access: httpx.ProjectKey, Handler: h.listItems,
			Doc: httpx.Doc{OperationID: "datasetItems_list", Tag: "Datasets", Response: httpx.List[Item]{},
				Summary: "Active dataset items, oldest first.",
				Query: append([]httpx.Param{
					{Name: "datasetName", Type: httpx.TypeString},
					{Name: "sourceTraceId", Type: httpx.TypeString},
					{Name: "sourceObservationId", Type: httpx.TypeString},
					{Name: "version", Type: httpx.TypeDateTime, Description: "The dataset's items as they were at this time; needs datasetName."},
				}, httpx.PageParams...)},
		},
		{
			Method: http.MethodGet, Path: "/api/public/dataset-items/{id}", Access: httpx.ProjectKey, Handler: h.getItem,
			Doc: httpx.Doc{OperationID: "datasetItems_get", Tag: "Datasets", Response: Item{},
				Summary: "One dataset item, active or archived."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/dataset-items/{id}", Access: httpx.ProjectKey, Handler: h.deleteItem,
			Doc: httpx.Doc{OperationID: "datasetItems_delete", Tag: "Datasets", Response: Message{},
				Summary: "Delete a dataset item; run items that used it remain."},
		},
		{
			Method: http.MethodPost, Path: "/api/public/dataset-run-items", Access: httpx.ProjectKey, Handler: h.createRunItem,
			Doc: httpx.Doc{OperationID: "datasetRunItems_create", Tag: "Datasets", Body: RunItemRequest{}, Response: RunItem{},
				Summary: "Link an active dataset item to a trace in a run; the run is created on first use."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/dataset-run-items", Access: httpx.ProjectKey, Handler: h.listRunItems,
			Doc: httpx.Doc{OperationID: "datasetRunItems_list", Tag: "Datasets", Response: httpx.List[RunItem]{},
				Summary: "The run items of one run, oldest first.",
				Query: append([]httpx.Param{
					{Name: "datasetId", Type: httpx.TypeString, Required: true},
					{Name: "runName", Type: httpx.TypeString, Required: true},
				}, httpx.PageParams...)},
		},
		{
			Method: http.MethodGet, Path: "/api/public/datasets/{datasetName}/runs", Access: httpx.ProjectKey, Handler: h.listRuns,
			Doc: httpx.Doc{OperationID: "datasets_getRuns", Tag: "Datasets", Response: httpx.List[Run]{}, Query: httpx.PageParams,
				Summary: "The runs of a dataset, newest first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/datasets/{datasetName}/runs/{runName}", Access: httpx.ProjectKey, Handler: h.getRun,
			Doc: httpx.Doc{OperationID: "datasets_getRun", Tag: "Datasets", Response: RunWithItems{},
				Summary: "One run with its run items."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/datasets/{datasetName}/runs/{runName}", Access: httpx.ProjectKey, Handler: h.deleteRun,
			Doc: httpx.Doc{OperationID: "datasets_deleteRun", Tag: "Datasets", Response: Message{},
				Summary: "Delete a run and its run items."},
		},
	}
}

func (h handlers) upsertDataset(r *http.Request) (any, error) {
	d, err := h.upsert(r)
	if err != nil {
		return nil, err
	}
	return toDataset(d), nil
}

// upsertDatasetV1 answers as Langfuse's v1 route does: with no items or
// runs, whether the dataset is new or not.
func (h handlers) upsertDatasetV1(r *http.Request) (any, error) {
	d, err := h.upsert(r)
	if err != nil {
		return nil, err
	}
	return DatasetV1{Dataset: toDataset(d), Items: []Item{}, Runs: []string{}}, nil
}

func (h handlers) upsert(r *http.Request) (controlplane.Dataset, error) {
	var req DatasetRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return controlplane.Dataset{}, err
	}
	d, err := h.store.UpsertDataset(r.Context(), httpx.ProjectID(r), controlplane.DatasetUpsert{
		Name: req.Name, Description: req.Description, Metadata: json.RawMessage(req.Metadata),
		InputSchema: json.RawMessage(req.InputSchema), ExpectedOutputSchema: json.RawMessage(req.ExpectedOutputSchema),
	})
	if err != nil {
		return controlplane.Dataset{}, storeError(err)
	}
	return d, nil
}

func (h handlers) listDatasets(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListDatasets, toDataset)
}

func (h handlers) getDataset(r *http.Request) (any, error) {
	d, err := h.dataset(r)
	if err != nil {
		return nil, err
	}
	return toDataset(d), nil
}

// maxV1Embedded bounds the items, and the runs, that GET of a v1 dataset
// embeds; a larger dataset is refused with the paged routes named rather
// than cut short. A variable for the tests.
var maxV1Embedded = 10000

func (h handlers) getDatasetV1(r *http.Request) (any, error) {
	d, err := h.dataset(r)
	if err != nil {
		return nil, err
	}
	project := httpx.ProjectID(r)
	items, total, err := h.store.ListDatasetItems(r.Context(), project, controlplane.DatasetItemFilter{
		DatasetName: d.Name, Limit: maxV1Embedded,
	})
	if err != nil {
		return nil, notFound(err, "Dataset not found")
	}
	if total > len(items) {
		return nil, httpx.BadRequest("Dataset %s has %d active items, more than the %d this route returns; "+
			"page through GET /api/public/dataset-items?datasetName=... instead", d.Name, total, maxV1Embedded)
	}
	runs, total, err := h.store.ListDatasetRuns(r.Context(), project, d.Name, 0, maxV1Embedded)
	if err != nil {
		return nil, notFound(err, "Dataset not found")
	}
	if total > len(runs) {
		return nil, httpx.BadRequest("Dataset %s has %d runs, more than the %d this route returns; "+
			"page through GET /api/public/datasets/{datasetName}/runs instead", d.Name, total, maxV1Embedded)
	}
	out := DatasetV1{Dataset: toDataset(d), Runs: make([]string, 0, len(runs))}
	if out.Items, err = h.itemsOf(r, items); err != nil {
		return nil, err
	}
	for _, run := range runs {
		out.Runs = append(out.Runs, run.Name)
	}
	return out, nil
}

// dataset is the dataset the path names, in the key's project.
func (h handlers) dataset(r *http.Request) (controlplane.Dataset, error) {
	d, err := h.store.GetDataset(r.Context(), httpx.ProjectID(r), r.PathValue("datasetName"))
	if err != nil {
		return controlplane.Dataset{}, notFound(err, "Dataset not found")
	}
	return d, nil
}

func (h handlers) upsertItem(r *http.Request) (any, error) {
	var req ItemRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.DatasetName == "" {
		return nil, httpx.BadRequest("datasetName is required")
	}
	item, err := h.store.UpsertDatasetItem(r.Context(), httpx.ProjectID(r), controlplane.DatasetItemUpsert{
		DatasetName: req.DatasetName, ID: req.ID, Input: json.RawMessage(req.Input),
		ExpectedOutput: json.RawMessage(req.ExpectedOutput), Metadata: json.RawMessage(req.Metadata),
		SourceTraceID: req.SourceTraceID, SourceObservationID: req.SourceObservationID, Status: req.Status,
	})
	if err != nil {
		return nil, notFound(err, "Dataset "+req.DatasetName+" not found")
	}
	return h.itemOf(r, item)
}

func (h handlers) listItems(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	p, err := q.Page()
	if err != nil {
		return nil, err
	}
	name := q.String("datasetName")
	version, err := q.Micros("version")
	if err != nil {
		return nil, err
	}
	if version != 0 && name == "" {
		return nil, httpx.BadRequest("version needs datasetName: a point-in-time read covers one dataset")
	}
	f := controlplane.DatasetItemFilter{
		DatasetName: name, SourceTraceID: q.String("sourceTraceId"), SourceObservationID: q.String("sourceObservationId"),
		Offset: p.Offset(), Limit: p.Limit,
	}
	if version != 0 {
		f.AsOf = time.UnixMicro(version)
	}
	list, total, err := h.store.ListDatasetItems(r.Context(), httpx.ProjectID(r), f)
	if err != nil {
		return nil, notFound(err, "Dataset "+name+" not found")
	}
	data, err := h.itemsOf(r, list)
	if err != nil {
		return nil, err
	}
	return httpx.NewList(data, p, int64(total)), nil
}

func (h handlers) getItem(r *http.Request) (any, error) {
	id := r.PathValue("id")
	item, err := h.store.GetDatasetItem(r.Context(), httpx.ProjectID(r), id)
	if err != nil {
		return nil, notFound(err, "Dataset item "+id+" not found")
	}
	return h.itemOf(r, item)
}

func (h handlers) deleteItem(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := h.store.DeleteDatasetItem(r.Context(), httpx.ProjectID(r), id); err != nil {
		return nil, notFound(err, "Dataset item "+id+" not found")
	}
	return Message{Message: "Dataset item successfully deleted"}, nil
}

func (h handlers) createRunItem(r *http.Request) (any, error) {
	var req RunItemRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	switch {
	case req.RunName == "":
		return nil, httpx.BadRequest("runName is required")
	case req.DatasetItemID == "":
		return nil, httpx.BadRequest("datasetItemId is required")
	case req.TraceID == "" && req.ObservationID == "":
		return nil, httpx.BadRequest("traceId or observationId is required")
	}
	project := httpx.ProjectID(r)
	if req.TraceID == "" {
		if h.observations == nil {
			return nil, httpx.BadRequest("traceId is required")
		}
		o, err := h.observations.GetObservation(r.Context(), project, req.ObservationID)
		if errors.Is(err, chstore.ErrNotFound) {
			return nil, httpx.NotFound("Observation %s not found; send its traceId with it", req.ObservationID)
		}
		if err != nil {
			return nil, err
		}
		req.TraceID = o.TraceID
	}
	n := controlplane.NewDatasetRunItem{
		RunName: req.RunName, RunDescription: req.RunDescription, Metadata: json.RawMessage(req.Metadata),
		DatasetItemID: req.DatasetItemID, TraceID: req.TraceID, ObservationID: req.ObservationID,
	}
	if req.CreatedAt != nil {
		n.CreatedAt = time.Time(*req.CreatedAt)
	}
	if req.DatasetVersion != nil {
		n.DatasetVersion = time.Time(*req.DatasetVersion)
	}
	ri, err := h.store.CreateDatasetRunItem(r.Context(), project, n)
	if err != nil {
		return nil, notFound(err, "Dataset item "+req.DatasetItemID+" not found or not active")
	}
	return toRunItem(ri), nil
}

func (h handlers) listRunItems(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	datasetID, runName := q.String("datasetId"), q.String("runName")
	switch {
	case datasetID == "":
		return nil, httpx.BadRequest("Query parameter datasetId is required")
	case runName == "":
		return nil, httpx.BadRequest("Query parameter runName is required")
	}
	p, err := q.Page()
	if err != nil {
		return nil, err
	}
	list, total, err := h.store.ListDatasetRunItems(r.Context(), httpx.ProjectID(r), controlplane.DatasetRunItemFilter{
		DatasetID: datasetID, RunName: runName, Offset: p.Offset(), Limit: p.Limit,
	})
	if err != nil {
		return nil, notFound(err, "Dataset run "+runName+" not found")
	}
	return httpx.NewList(toRunItems(list), p, int64(total)), nil
}

func (h handlers) listRuns(r *http.Request) (any, error) {
	p, err := httpx.QueryOf(r).Page()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("datasetName")
	list, total, err := h.store.ListDatasetRuns(r.Context(), httpx.ProjectID(r), name, p.Offset(), p.Limit)
	if err != nil {
		return nil, notFound(err, "Dataset not found")
	}
	data := make([]Run, 0, len(list))
	for _, run := range list {
		data = append(data, toRun(run))
	}
	return httpx.NewList(data, p, int64(total)), nil
}

// maxRunItems bounds the run items one GET of a run returns.
const maxRunItems = 10000

func (h handlers) getRun(r *http.Request) (any, error) {
	project, name, runName := httpx.ProjectID(r), r.PathValue("datasetName"), r.PathValue("runName")
	run, err := h.store.GetDatasetRun(r.Context(), project, name, runName)
	if err != nil {
		return nil, notFound(err, "Dataset run not found")
	}
	items, _, err := h.store.ListDatasetRunItems(r.Context(), project, controlplane.DatasetRunItemFilter{RunID: run.ID, Limit: maxRunItems})
	if err != nil {
		return nil, err
	}
	return RunWithItems{Run: toRun(run), DatasetRunItems: toRunItems(items)}, nil
}

func (h handlers) deleteRun(r *http.Request) (any, error) {
	project, name, runName := httpx.ProjectID(r), r.PathValue("datasetName"), r.PathValue("runName")
	if err := h.store.DeleteDatasetRun(r.Context(), project, name, runName); err != nil {
		return nil, notFound(err, "Dataset run not found")
	}
	return Message{Message: "Dataset run successfully deleted"}, nil
}

// notFound maps the store's error kinds to API errors, with message for a 404.
func notFound(err error, message string) error {
	if errors.Is(err, controlplane.ErrNotFound) {
		return httpx.NotFound("%s", message)
	}
	return storeError(err)
}

func storeError(err error) error {
	return httpx.StoreErrorAs(err, func(v *httpx.Error) string {
		msg := strings.ReplaceAll(v.Message, controlplane.ErrInvalid.Error()+": ", "")
		return strings.ReplaceAll(msg, controlplane.ErrConflict.Error()+": ", "")
	})
}

// jsonOrNull sends stored JSON as is and absence as null.
func jsonOrNull(raw json.RawMessage) httpx.JSON {
	if raw == nil {
		return httpx.JSON("null")
	}
	return httpx.JSON(raw)
}

func toDataset(d controlplane.Dataset) Dataset {
	return Dataset{
		ID: d.ID, Name: d.Name, Description: httpx.OptionalString(d.Description), Metadata: jsonOrNull(d.Metadata),
		InputSchema: jsonOrNull(d.InputSchema), ExpectedOutputSchema: jsonOrNull(d.ExpectedOutputSchema),
		ProjectID: d.ProjectID, CreatedAt: httpx.FromTime(d.CreatedAt), UpdatedAt: httpx.FromTime(d.UpdatedAt),
	}
}

// itemsOf answers items with their media references resolved; a media
// named several times is read once per request.
func (h handlers) itemsOf(r *http.Request, list []controlplane.DatasetItem) ([]Item, error) {
	resolved := map[string]*MediaReferenced{}
	out := make([]Item, 0, len(list))
	for _, it := range list {
		item := Item{
			ID: it.ID, Status: it.Status, Input: jsonOrNull(it.Input), ExpectedOutput: jsonOrNull(it.ExpectedOutput),
			Metadata: jsonOrNull(it.Metadata), SourceTraceID: httpx.OptionalString(it.SourceTraceID),
			SourceObservationID: httpx.OptionalString(it.SourceObservationID), DatasetID: it.DatasetID, DatasetName: it.DatasetName,
			CreatedAt: httpx.FromTime(it.CreatedAt), UpdatedAt: httpx.FromTime(it.UpdatedAt),
			MediaReferences: []MediaReference{},
		}
		for _, field := range []struct {
			name string
			raw  []byte
		}{{"input", it.Input}, {"expectedOutput", it.ExpectedOutput}, {"metadata", it.Metadata}} {
			for _, ref := range media.FindReferences(field.raw) {
				m, seen := resolved[ref.MediaID]
				if !seen && h.media != nil {
					rec, err := h.media.Record(r, it.ProjectID, ref.MediaID)
					var apiErr *httpx.Error
					switch {
					case err == nil:
						m = &MediaReferenced{MediaID: rec.MediaID, ContentType: rec.ContentType, ContentLength: rec.ContentLength,
							URL: rec.URL, URLExpiry: rec.URLExpiry}
					case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
						// Not uploaded (yet): the reference stays unresolved.
					default:
						return nil, err
					}
					resolved[ref.MediaID] = m
				}
				if m != nil {
					item.MediaReferences = append(item.MediaReferences, MediaReference{
						Field: field.name, ReferenceString: ref.Text, JSONPath: ref.JSONPath, Media: *m})
				}
			}
		}
		out = append(out, item)
	}
	return out, nil
}

func (h handlers) itemOf(r *http.Request, it controlplane.DatasetItem) (Item, error) {
	items, err := h.itemsOf(r, []controlplane.DatasetItem{it})
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

func toRun(run controlplane.DatasetRun) Run {
	return Run{
		ID: run.ID, Name: run.Name, Description: httpx.OptionalString(run.Description), Metadata: jsonOrNull(run.Metadata),
		DatasetID: run.DatasetID, DatasetName: run.DatasetName,
		CreatedAt: httpx.FromTime(run.CreatedAt), UpdatedAt: httpx.FromTime(run.UpdatedAt),
	}
}

func toRunItems(list []controlplane.DatasetRunItem) []RunItem {
	out := make([]RunItem, 0, len(list))
	for _, ri := range list {
		out = append(out, toRunItem(ri))
	}
	return out
}

func toRunItem(ri controlplane.DatasetRunItem) RunItem {
	return RunItem{
		ID: ri.ID, DatasetRunID: ri.DatasetRunID, DatasetRunName: ri.DatasetRunName, DatasetItemID: ri.DatasetItemID,
		TraceID: ri.TraceID, ObservationID: httpx.OptionalString(ri.ObservationID),
		CreatedAt: httpx.FromTime(ri.CreatedAt), UpdatedAt: httpx.FromTime(ri.UpdatedAt),
	}
}
