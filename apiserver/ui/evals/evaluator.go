package evals

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// evaluatorForm is the evaluator editor as typed.
type evaluatorForm struct {
	Kind, Name, Description, ScoreName                  string
	DataType, Min, Max, Categories                      string
	Prompt, Model, Expression, URL                      string
	Variables                                           []controlplane.VariableMapping
	Template                                            string
	PreviewTrace, PreviewObservation, PreviewConnection string
}

type evaluatorData struct {
	Form        evaluatorForm
	Templates   []template
	Traces      []chstore.Trace
	Connections []controlplane.LLMConnection
	Error       string
	// Detected are the variables the prompt or expression uses.
	Detected []string
	Preview  *previewView
	// Choices of the form's selects.
	DataTypes, Fields []string
}

type previewView struct {
	Values   string
	Rendered string
	Answer   string
	Score    string
	Comment  string
	Ran      bool
}

// blankVariables are the empty mapping rows the editor offers.
const blankVariables = 2

// maxPreviewTraces bounds the recent traces offered for the preview.
const maxPreviewTraces = 20

// newEvaluator opens the editor: from a template (`template=`), or empty
// for a code (`kind=cel`) or webhook evaluator.
func (h *handlers) newEvaluator(r *web.Request) error {
	q := r.URL.Query()
	f := evaluatorForm{Kind: controlplane.EvaluatorLLM, DataType: controlplane.ScoreNumeric, Min: "0", Max: "1"}
	switch k := q.Get("kind"); k {
	case controlplane.EvaluatorCEL:
		f.Kind, f.Name, f.ScoreName = k, "Exact match", "exact_match"
		f.DataType, f.Min, f.Max = controlplane.ScoreBoolean, "", ""
		f.Expression = "output == expected_output"
	case controlplane.EvaluatorWebhook:
		f.Kind = k
	}
	if t, ok := templateByKey(q.Get("template")); ok {
		f = formOf(t)
	}
	return h.renderEditor(r, http.StatusOK, f, nil, "")
}

func formOf(t template) evaluatorForm {
	f := evaluatorForm{Kind: controlplane.EvaluatorLLM, Template: t.Key, Name: t.Name, Description: t.Description,
		ScoreName: strings.ToLower(t.Key), DataType: t.Output.DataType, Prompt: t.Prompt, Variables: t.Variables,
		Categories: strings.Join(t.Output.Categories, ", ")}
	if t.Output.Min != nil {
		f.Min = web.FormatFloat(*t.Output.Min)
	}
	if t.Output.Max != nil {
		f.Max = web.FormatFloat(*t.Output.Max)
	}
	return f
}

func readEvaluatorForm(r *web.Request) evaluatorForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := evaluatorForm{Kind: v("kind"), Name: v("name"), Description: v("description"), ScoreName: v("score_name"), DataType: v("data_type"),
		Min: v("min"), Max: v("max"), Categories: v("categories"), Prompt: r.PostFormValue("prompt"), Model: v("model"),
		Expression: r.PostFormValue("expression"), URL: v("url"), Template: v("template"),
		PreviewTrace: v("preview_trace"), PreviewObservation: v("preview_observation"), PreviewConnection: v("preview_connection")}
	names, sources, fields, keys, obs := r.PostForm["var_name"], r.PostForm["var_source"], r.PostForm["var_field"], r.PostForm["var_key"], r.PostForm["var_observation"]
	for i := range min(len(names), len(sources), len(fields), len(keys), len(obs)) {
		if name := strings.TrimSpace(names[i]); name != "" {
			f.Variables = append(f.Variables, controlplane.VariableMapping{Name: name, Source: sources[i], Field: fields[i],
				Key: strings.TrimSpace(keys[i]), ObservationName: strings.TrimSpace(obs[i])})
		}
	}
	return f
}

// evaluator turns the form into the store's input; numbers that do not
// read are refused with the field's name.
func (f evaluatorForm) evaluator() (controlplane.NewEvaluator, string) {
	n := controlplane.NewEvaluator{Name: f.Name, Description: f.Description, Kind: f.Kind, ScoreName: f.ScoreName,
		Output: controlplane.ScoreOutput{DataType: f.DataType, Description: f.Description}, Variables: f.Variables,
		Prompt: f.Prompt, Model: f.Model, Expression: f.Expression, URL: f.URL}
	for _, b := range []struct {
		text, name string
		dst        **float64
	}{{f.Min, "minimum", &n.Output.Min}, {f.Max, "maximum", &n.Output.Max}} {
		if b.text == "" || f.DataType != controlplane.ScoreNumeric {
			continue
		}
		v, err := strconv.ParseFloat(b.text, 64)
		if err != nil {
			return n, "The " + b.name + " must be a number."
		}
		*b.dst = &v
	}
	if f.DataType == controlplane.ScoreCategorical {
		for _, c := range strings.Split(f.Categories, ",") {
			if c = strings.TrimSpace(c); c != "" {
				n.Output.Categories = append(n.Output.Categories, c)
			}
		}
	}
	return n, ""
}

// saveEvaluator previews the evaluator on a stored trace (`op=preview`),
// or stores it.
func (h *handlers) saveEvaluator(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	f := readEvaluatorForm(r)
	n, msg := f.evaluator()
	if msg != "" {
		return h.renderEditor(r, http.StatusBadRequest, f, nil, msg)
	}
	if r.PostFormValue("op") == "preview" {
		e, err := controlplane.CheckEvaluator(r.Project.ID, n)
		if refusal := web.StoreRefusal(err); refusal != nil {
			return h.renderEditor(r, refusal.Status, f, nil, refusal.Message)
		} else if err != nil {
			return err
		}
		if f.PreviewTrace == "" {
			return h.renderEditor(r, http.StatusBadRequest, f, nil, "Choose a trace to preview on.")
		}
		p, err := h.preview.Run(r.Context(), r.Project.ID, e, nil, f.PreviewConnection, f.PreviewTrace, f.PreviewObservation)
		view := &previewView{Values: prettyValues(p.Values), Rendered: p.Rendered, Answer: p.Answer, Ran: p.Ran}
		if p.Ran {
			view.Score, view.Comment = p.Result.StringValue, p.Result.Comment
			if view.Score == "" {
				view.Score = web.FormatFloat(p.Result.Value)
			}
		}
		if err != nil {
			return h.renderEditor(r, http.StatusOK, f, view, "The preview failed: "+err.Error())
		}
		return h.renderEditor(r, http.StatusOK, f, view, "")
	}
	_, err := h.store.CreateEvaluator(r.Context(), r.Project.ID, n)
	if refusal := web.StoreRefusal(err); refusal != nil {
		return h.renderEditor(r, refusal.Status, f, nil, refusal.Message)
	}
	if err != nil {
		return err
	}
	return h.back(r, "evaluators")
}

func (h *handlers) renderEditor(r *web.Request, status int, f evaluatorForm, preview *previewView, failure string) error {
	d := evaluatorData{Form: f, Templates: templates, Error: failure, Preview: preview,
		DataTypes: []string{controlplane.ScoreNumeric, controlplane.ScoreBoolean, controlplane.ScoreCategorical},
		Fields:    []string{controlplane.FieldInput, controlplane.FieldOutput, controlplane.FieldMetadata, controlplane.FieldName, controlplane.FieldExpectedOutput}}
	var err error
	if d.Traces, _, err = h.traces.ListTraces(r.Context(), chstore.TraceFilter{ProjectID: r.Project.ID, Limit: maxPreviewTraces}); err != nil {
		return err
	}
	if d.Connections, _, err = h.store.ListLLMConnections(r.Context(), r.Project.ID, 0, maxListed); err != nil {
		return err
	}
	text := f.Prompt
	if f.Kind != controlplane.EvaluatorLLM {
		text = ""
	}
	d.Detected = controlplane.PromptVariables(text)
	// A row per used variable, so the mapping can be changed, then blanks.
	for _, name := range d.Detected {
		if !slices.ContainsFunc(d.Form.Variables, func(v controlplane.VariableMapping) bool { return v.Name == name }) {
			d.Form.Variables = append(d.Form.Variables, defaultMapping(name))
		}
	}
	for range blankVariables {
		d.Form.Variables = append(d.Form.Variables, controlplane.VariableMapping{})
	}
	return r.RenderStatus(status, h.t, "evaluator", d)
}

// defaultMapping is the editor's first guess for a variable: a field of
// the evaluated target by that name, expected_output from the dataset
// item, anything else from the trace's metadata under its name.
func defaultMapping(name string) controlplane.VariableMapping {
	switch name {
	case controlplane.FieldInput, controlplane.FieldOutput, controlplane.FieldMetadata, controlplane.FieldName:
		return controlplane.VariableMapping{Name: name, Field: name}
	case controlplane.FieldExpectedOutput:
		return controlplane.VariableMapping{Name: name, Source: controlplane.SourceDatasetItem, Field: name}
	}
	return controlplane.VariableMapping{Name: name, Source: controlplane.SourceTrace, Field: controlplane.FieldMetadata, Key: name}
}
