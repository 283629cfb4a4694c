// Package datasets serves the dataset pages: the list by folder, a
// dataset's runs (with their latency, cost and scores) and items, the item
// editor that shows the dataset's schema errors inline, the comparison of
// runs item by item, and prompt experiments started from the page.
package datasets // import "github.com/glassbox-dev/glassbox/apiserver/ui/datasets"

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

//go:embed *.html
var pages embed.FS

// Store reads and writes datasets; *controlplane.Store implements it.
type Store interface {
	Experiments
	UpsertDataset(ctx context.Context, projectID string, u controlplane.DatasetUpsert) (controlplane.Dataset, error)
	GetDataset(ctx context.Context, projectID, name string) (controlplane.Dataset, error)
	GetDatasetByID(ctx context.Context, projectID, id string) (controlplane.Dataset, error)
	ListDatasets(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Dataset, int, error)
	UpsertDatasetItem(ctx context.Context, projectID string, u controlplane.DatasetItemUpsert) (controlplane.DatasetItem, error)
	GetDatasetItem(ctx context.Context, projectID, id string) (controlplane.DatasetItem, error)
	ListDatasetItems(ctx context.Context, projectID string, f controlplane.DatasetItemFilter) ([]controlplane.DatasetItem, int, error)
	ListDatasetRuns(ctx context.Context, projectID, datasetName string, offset, limit int) ([]controlplane.DatasetRun, int, error)
	ListDatasetRunItems(ctx context.Context, projectID string, f controlplane.DatasetRunItemFilter) ([]controlplane.DatasetRunItem, int, error)
}

// Traces reads the traces runs produced and their scores; *chstore.Store
// implements it.
type Traces interface {
	GetTraces(ctx context.Context, projectID string, traceIDs []string) (map[string]chstore.Trace, error)
	Metrics(ctx context.Context, projectID string, q chstore.MetricsQuery) ([]map[string]any, error)
}

type handlers struct {
	store  Store
	traces Traces
	t      *web.Templates
	now    func() time.Time
}

// Routes registers the dataset pages and their sidebar entry.
func Routes(app *web.App, store Store, traces Traces) error {
	t, err := app.Parse(pages, "_item_fields.html", "datasets.html", "dataset.html", "item.html", "compare.html", "experiment_new.html", "experiment.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, traces: traces, t: t, now: time.Now}
	app.AddNav(web.NavItem{Section: "Evaluation", Label: "Datasets", Path: "datasets", Action: access.ProjectRead, Order: 310})
	base := "/project/{projectId}/datasets"
	return app.Handle(
		web.InProjectRoute(http.MethodGet, base, access.ProjectRead, h.list),
		web.InProjectRoute(http.MethodPost, base, access.DatasetsWrite, h.create),
		web.InProjectRoute(http.MethodGet, base+"/{datasetId}", access.ProjectRead, h.dataset),
		web.InProjectRoute(http.MethodGet, base+"/{datasetId}/compare", access.ProjectRead, h.compare),
		web.InProjectRoute(http.MethodPost, base+"/{datasetId}/items", access.DatasetsWrite, h.createItem),
		web.InProjectRoute(http.MethodGet, base+"/{datasetId}/items/{itemId}", access.ProjectRead, h.item),
		web.InProjectRoute(http.MethodPost, base+"/{datasetId}/items/{itemId}", access.DatasetsWrite, h.updateItem),
		web.InProjectRoute(http.MethodGet, base+"/{datasetId}/experiments/new", access.DatasetsWrite, h.newExperiment),
		web.InProjectRoute(http.MethodPost, base+"/{datasetId}/experiments", access.DatasetsWrite, h.startExperiment),
		web.InProjectRoute(http.MethodGet, base+"/{datasetId}/experiments/{experimentId}", access.ProjectRead, h.experiment),
	)
}

// maxListed bounds the datasets, items and runs a page reads.
const maxListed = 500

type datasetRow struct {
	controlplane.Dataset
	Short       string
	Items, Runs int
}

type folderRow struct{ Name, Path string }

type listData struct {
	Folder  string
	Folders []folderRow
	Rows    []datasetRow
	Form    datasetForm
	Error   string
}

type datasetForm struct{ Name, Description, InputSchema, ExpectedOutputSchema string }

// list shows the datasets of a folder (names hold slashes, as prompts do)
// with their item and run counts.
func (h *handlers) list(r *web.Request) error {
	d, err := h.listData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "datasets", d)
}

func (h *handlers) listData(r *web.Request) (*listData, error) {
	all, _, err := h.store.ListDatasets(r.Context(), r.Project.ID, 0, maxListed)
	if err != nil {
		return nil, err
	}
	d := &listData{Folder: strings.Trim(r.URL.Query().Get("folder"), "/")}
	prefix := ""
	if d.Folder != "" {
		prefix = d.Folder + "/"
	}
	seen := map[string]bool{}
	for _, ds := range all {
		if !strings.HasPrefix(ds.Name, prefix) {
			continue
		}
		rest := strings.TrimPrefix(ds.Name, prefix)
		if sub, _, nested := strings.Cut(rest, "/"); nested {
			if !seen[sub] {
				seen[sub] = true
				d.Folders = append(d.Folders, folderRow{Name: sub, Path: prefix + sub})
			}
			continue
		}
		row := datasetRow{Dataset: ds, Short: rest}
		if _, row.Items, err = h.store.ListDatasetItems(r.Context(), r.Project.ID, controlplane.DatasetItemFilter{DatasetName: ds.Name, Limit: 1}); err != nil {
			return nil, err
		}
		if _, row.Runs, err = h.store.ListDatasetRuns(r.Context(), r.Project.ID, ds.Name, 0, 1); err != nil {
			return nil, err
		}
		d.Rows = append(d.Rows, row)
	}
	slices.SortFunc(d.Folders, func(a, b folderRow) int { return strings.Compare(a.Name, b.Name) })
	return d, nil
}

// create adds a dataset, with JSON Schemas for inputs and expected outputs
// when given.
func (h *handlers) create(r *web.Request) error {
	f := datasetForm{Name: strings.TrimSpace(r.PostFormValue("name")), Description: strings.TrimSpace(r.PostFormValue("description")),
		InputSchema: strings.TrimSpace(r.PostFormValue("input_schema")), ExpectedOutputSchema: strings.TrimSpace(r.PostFormValue("expected_output_schema"))}
	u := controlplane.DatasetUpsert{Name: f.Name, Description: &f.Description}
	if f.InputSchema != "" {
		u.InputSchema = json.RawMessage(f.InputSchema)
	}
	if f.ExpectedOutputSchema != "" {
		u.ExpectedOutputSchema = json.RawMessage(f.ExpectedOutputSchema)
	}
	var refusal *web.Error
	_, err := h.store.GetDataset(r.Context(), r.Project.ID, f.Name)
	switch {
	case f.Name == "":
		refusal = &web.Error{Status: http.StatusBadRequest, Message: "A dataset needs a name."}
	case err == nil:
		refusal = &web.Error{Status: http.StatusConflict, Message: "A dataset named " + f.Name + " exists already."}
	case !errors.Is(err, controlplane.ErrNotFound):
		return err
	default:
		ds, err := h.store.UpsertDataset(r.Context(), r.Project.ID, u)
		if err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "datasets", ds.ID))
		}
		if refusal = web.StoreRefusal(err); refusal == nil {
			return err
		}
	}
	d, lerr := h.listData(r)
	if lerr != nil {
		return lerr
	}
	d.Form, d.Error = f, refusal.Message
	return r.RenderStatus(refusal.Status, h.t, "datasets", d)
}
