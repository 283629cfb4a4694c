package datasets

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// maxRuns bounds the runs the runs tab reads figures for.
const maxRuns = 50

type datasetData struct {
	Dataset controlplane.Dataset
	Tab     string // "runs" or "items"
	Runs    []runResult
	Scores  []string // the score names of the runs table's columns
	Items   []itemRow
	Total   int
	Form    itemForm
	Error   string
	// SchemaIn and SchemaOut are the dataset's schemas, indented.
	SchemaIn, SchemaOut string
}

type itemRow struct {
	controlplane.DatasetItem
	Input, Expected, Metadata string // shortened JSON
}

// itemForm is the item editor as typed: JSON text per field.
type itemForm struct {
	ID, Input, ExpectedOutput, Metadata string
	// Field names the field the error is about, to show it there.
	Field string
}

// dataset shows a dataset's runs (default) or items.
func (h *handlers) dataset(r *web.Request) error {
	d, err := h.datasetData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "dataset", d)
}

func (h *handlers) getDataset(r *web.Request) (controlplane.Dataset, error) {
	ds, err := h.store.GetDatasetByID(r.Context(), r.Project.ID, r.PathValue("datasetId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return ds, web.ErrNotFound
	}
	return ds, err
}

func (h *handlers) datasetData(r *web.Request) (*datasetData, error) {
	ds, err := h.getDataset(r)
	if err != nil {
		return nil, err
	}
	d := &datasetData{Dataset: ds, Tab: "runs", SchemaIn: indent(ds.InputSchema), SchemaOut: indent(ds.ExpectedOutputSchema)}
	if r.URL.Query().Get("tab") == "items" || r.Method == http.MethodPost {
		d.Tab = "items"
	}
	if d.Tab == "items" {
		items, total, err := h.store.ListDatasetItems(r.Context(), r.Project.ID, controlplane.DatasetItemFilter{DatasetName: ds.Name, Limit: maxListed})
		if err != nil {
			return nil, err
		}
		d.Total = total
		for _, it := range items {
			d.Items = append(d.Items, itemRow{DatasetItem: it, Input: short(it.Input), Expected: short(it.ExpectedOutput), Metadata: short(it.Metadata)})
		}
		return d, nil
	}
	runs, total, err := h.store.ListDatasetRuns(r.Context(), r.Project.ID, ds.Name, 0, maxRuns)
	if err != nil {
		return nil, err
	}
	d.Total = total
	if d.Runs, _, d.Scores, err = h.readRuns(r, ds, runs); err != nil {
		return nil, err
	}
	return d, nil
}

// short is a JSON value on one line, cut to what a table cell shows.
func short(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	return web.Truncate(160, string(raw))
}

func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// readItemForm reads the editor; a field left empty is JSON null.
func readItemForm(r *web.Request) (itemForm, controlplane.DatasetItemUpsert, error) {
	f := itemForm{ID: strings.TrimSpace(r.PostFormValue("id")), Input: r.PostFormValue("input"),
		ExpectedOutput: r.PostFormValue("expected_output"), Metadata: r.PostFormValue("metadata")}
	u := controlplane.DatasetItemUpsert{ID: f.ID}
	for _, field := range []struct {
		name, label, text string
		dst               *json.RawMessage
	}{
		{"input", "Input", f.Input, &u.Input},
		{"expected_output", "Expected output", f.ExpectedOutput, &u.ExpectedOutput},
		{"metadata", "Metadata", f.Metadata, &u.Metadata},
	} {
		text := strings.TrimSpace(field.text)
		if text == "" {
			*field.dst = json.RawMessage("null")
			continue
		}
		if !json.Valid([]byte(text)) {
			f.Field = field.name
			return f, u, web.BadRequest("%s is not valid JSON. Strings need quotes: \"like this\".", field.label)
		}
		*field.dst = json.RawMessage(text)
	}
	return f, u, nil
}

// createItem adds an item; the dataset's schemas are checked by the store
// and a refusal is shown beside the form.
func (h *handlers) createItem(r *web.Request) error {
	ds, err := h.getDataset(r)
	if err != nil {
		return err
	}
	f, u, err := readItemForm(r)
	if err == nil {
		u.DatasetName = ds.Name
		if u.ID != "" {
			// A chosen id must be new: the editor of an existing item is
			// its own page.
			if _, gerr := h.store.GetDatasetItem(r.Context(), r.Project.ID, u.ID); gerr == nil {
				err = web.BadRequest("An item with the id %s exists already.", u.ID)
			}
		}
	}
	if err == nil {
		if _, err = h.store.UpsertDatasetItem(r.Context(), r.Project.ID, u); err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "datasets", ds.ID) + "?tab=items")
		}
	}
	d, derr := h.datasetData(r)
	if derr != nil {
		return derr
	}
	return h.refused(r, err, f, "dataset", d, &d.Form, &d.Error)
}

// refused renders page again with the form as typed and why it was
// refused; errors of other kinds go to the error page.
func (h *handlers) refused(r *web.Request, err error, f itemForm, page string, data any, form *itemForm, msg *string) error {
	var refusal *web.Error
	if !errors.As(err, &refusal) {
		if refusal = web.StoreRefusal(err); refusal == nil {
			return err
		}
		if m := refusal.Message; strings.Contains(m, "expected output") || strings.Contains(m, "expectedOutput") {
			f.Field = "expected_output"
		} else if strings.Contains(m, "input") {
			f.Field = "input"
		}
	}
	*msg, *form = refusal.Message, f
	return r.RenderStatus(refusal.Status, h.t, page, data)
}

type itemData struct {
	Dataset controlplane.Dataset
	Item    controlplane.DatasetItem
	Form    itemForm
	Error   string
	Source  string // the trace page the item came from, if any
}

// item opens an item in the editor.
func (h *handlers) item(r *web.Request) error {
	d, err := h.itemData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "item", d)
}

func (h *handlers) itemData(r *web.Request) (*itemData, error) {
	ds, err := h.getDataset(r)
	if err != nil {
		return nil, err
	}
	it, err := h.store.GetDatasetItem(r.Context(), r.Project.ID, r.PathValue("itemId"))
	if errors.Is(err, controlplane.ErrNotFound) || (err == nil && it.DatasetID != ds.ID) {
		return nil, web.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	d := &itemData{Dataset: ds, Item: it, Form: itemForm{ID: it.ID, Input: indent(it.Input), ExpectedOutput: indent(it.ExpectedOutput), Metadata: indent(it.Metadata)}}
	if it.SourceTraceID != "" {
		d.Source = r.Path("project", r.Project.ID, "traces", it.SourceTraceID)
		if it.SourceObservationID != "" {
			d.Source += "?observation=" + url.QueryEscape(it.SourceObservationID)
		}
	}
	return d, nil
}

// updateItem saves the editor (`op=save`) or archives (`op=archive`) or
// restores (`op=restore`) the item.
func (h *handlers) updateItem(r *web.Request) error {
	d, err := h.itemData(r)
	if err != nil {
		return err
	}
	u := controlplane.DatasetItemUpsert{DatasetName: d.Dataset.Name, ID: d.Item.ID}
	f := d.Form
	switch r.PostFormValue("op") {
	case "archive":
		u.Status = controlplane.ItemArchived
	case "restore":
		u.Status = controlplane.ItemActive
	default:
		f, u, err = readItemForm(r)
		u.DatasetName, u.ID = d.Dataset.Name, d.Item.ID
		f.ID = d.Item.ID
	}
	if err == nil {
		if _, err = h.store.UpsertDatasetItem(r.Context(), r.Project.ID, u); err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "datasets", d.Dataset.ID, "items", d.Item.ID))
		}
	}
	return h.refused(r, err, f, "item", d, &d.Form, &d.Error)
}

type compareData struct {
	Dataset controlplane.Dataset
	Runs    []runResult
	Scores  []string
	Rows    []compareRow
	Charts  []distribution
	// Choices are all runs, for the picker.
	Choices  []controlplane.DatasetRun
	Selected []string
}

type compareRow struct {
	Item  controlplane.DatasetItem
	Input string
	Cells []compareCell
}

type compareCell struct {
	Found   bool
	Href    string
	Output  web.IO
	Latency float64
	Cost    float64
	Scores  []string // formatted, in compareData.Scores order
}

// maxCompared bounds the runs compared side by side.
const maxCompared = 6

// compare shows the chosen runs (`runs=` repeated, else the two newest)
// item by item: each run's output, scores, latency and cost for the item,
// with links to the traces, and the distribution of each score per run.
func (h *handlers) compare(r *web.Request) error {
	ds, err := h.getDataset(r)
	if err != nil {
		return err
	}
	all, _, err := h.store.ListDatasetRuns(r.Context(), r.Project.ID, ds.Name, 0, maxListed)
	if err != nil {
		return err
	}
	d := compareData{Dataset: ds, Choices: all, Selected: r.URL.Query()["runs"]}
	if len(d.Selected) == 0 {
		// The runs come newest first; compare the two newest, older first.
		for _, run := range all[:min(2, len(all))] {
			d.Selected = append([]string{run.Name}, d.Selected...)
		}
	}
	// Columns keep the order the runs were chosen in.
	var runs []controlplane.DatasetRun
	for _, name := range d.Selected {
		if i := slices.IndexFunc(all, func(r controlplane.DatasetRun) bool { return r.Name == name }); i >= 0 {
			runs = append(runs, all[i])
		}
	}
	if len(runs) > maxCompared {
		return web.BadRequest("Compare at most %d runs at once.", maxCompared)
	}
	results, scores, names, err := h.readRuns(r, ds, runs)
	if err != nil {
		return err
	}
	d.Runs, d.Scores, d.Charts = results, names, distributions(results, scores, names)
	items, _, err := h.store.ListDatasetItems(r.Context(), r.Project.ID, controlplane.DatasetItemFilter{DatasetName: ds.Name, Limit: maxListed})
	if err != nil {
		return err
	}
	for _, it := range items {
		row := compareRow{Item: it, Input: short(it.Input)}
		for _, res := range results {
			t, ok := res.ByItem[it.ID]
			c := compareCell{Found: ok}
			if ok {
				c.Href = r.Path("project", r.Project.ID, "traces", t.ID)
				c.Output, c.Latency, c.Cost = web.RenderIO(t.Output), t.LatencySeconds*1000, t.TotalCost
				for _, name := range names {
					if v, ok := scores[t.ID][name]; ok {
						c.Scores = append(c.Scores, web.FormatFloat(v))
					} else {
						c.Scores = append(c.Scores, "")
					}
				}
			}
			row.Cells = append(row.Cells, c)
		}
		d.Rows = append(d.Rows, row)
	}
	return r.Render(h.t, "compare", d)
}
