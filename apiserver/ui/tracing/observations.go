package tracing

import (
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

var observationColumns = []web.Column{
	{Key: "start", Label: "Start time"},
	{Key: "type", Label: "Type"},
	{Key: "name", Label: "Name"},
	{Key: "model", Label: "Model"},
	{Key: "prompt", Label: "Prompt"},
	{Key: "level", Label: "Level"},
	{Key: "latency", Label: "Latency", Numeric: true},
	{Key: "ttft", Label: "Time to first token", Numeric: true, Hidden: true},
	{Key: "tokens", Label: "Tokens", Numeric: true},
	{Key: "cost", Label: "Cost", Numeric: true},
	{Key: "environment", Label: "Environment", Hidden: true},
	{Key: "input", Label: "Input", Hidden: true},
	{Key: "output", Label: "Output", Hidden: true},
	{Key: "trace", Label: "Trace"},
}

// Observation types and levels offered as filters.
var (
	observationTypes = []string{"GENERATION", "SPAN", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR", "EMBEDDING", "GUARDRAIL"}
	levels           = []string{"DEBUG", "DEFAULT", "WARNING", "ERROR"}
)

type observationsData struct {
	Table             *web.Table
	Range             web.TimeRange
	Type, Name, Level string
	Env               []string
	Types, Levels     []string
	Notice            string // what the last bulk action did
}

func (h *handlers) observations(r *web.Request) error {
	q := r.URL.Query()
	notice := q.Get("notice")
	q.Del("notice")
	state := web.ReadTableState(q, observationColumns, "start", true)
	d := observationsData{Range: web.ReadTimeRange(q, "7d", h.now()), Type: strings.ToUpper(strings.TrimSpace(q.Get("type"))),
		Name: strings.TrimSpace(q.Get("name")), Level: strings.ToUpper(strings.TrimSpace(q.Get("level"))), Env: nonEmpty(q["env"]),
		Types: observationTypes, Levels: levels, Notice: notice}
	page, err := h.store.ListObservations(r.Context(), chstore.ObservationFilter{
		ProjectID: r.Project.ID, Type: d.Type, Name: d.Name, Level: d.Level, Environment: d.Env,
		From: d.Range.From.UnixMicro(), To: d.Range.To.UnixMicro(), Page: state.Page, Limit: state.Limit,
	})
	if err != nil {
		return err
	}
	t := web.NewTable("observations", r.Path("project", r.Project.ID, "observations"), observationColumns, state)
	t.Total = page.Total
	t.Empty = "No observations match these filters in " + strings.ToLower(d.Range.Label()) + "."
	if err := BulkTargets(r, h.cp, t, "observations"); err != nil {
		return err
	}
	for i := range page.Observations {
		o := &page.Observations[i].Observation
		href := r.Path("project", r.Project.ID, "traces", o.TraceID) + "?observation=" + o.ID
		row := web.Row{ID: o.ID, Href: href}
		for _, c := range t.Columns {
			var cell web.Cell
			switch c.Key {
			case "start":
				cell = web.Cell{Text: web.FormatTime(time.UnixMicro(o.StartTime)), Href: href}
			case "type":
				cell = web.Cell{Text: o.Type, Class: "badge " + o.Type}
			case "name":
				cell = web.Cell{Text: o.Name, Title: o.Name}
			case "model":
				cell = web.Cell{Text: o.Model}
			case "prompt":
				if o.PromptName != "" {
					cell = web.Cell{Text: o.PromptName + " v" + web.FormatInt(o.PromptVersion)}
				}
			case "level":
				cell = web.Cell{Text: o.Level, Class: "level-" + o.Level}
			case "latency":
				if o.EndTime >= o.StartTime && o.EndTime > 0 {
					cell = web.Cell{Text: web.FormatMillis(float64(o.EndTime-o.StartTime) / 1000)}
				}
			case "ttft":
				if o.CompletionStartTime >= o.StartTime && o.CompletionStartTime > 0 {
					cell = web.Cell{Text: web.FormatMillis(float64(o.CompletionStartTime-o.StartTime) / 1000)}
				}
			case "tokens":
				if n := tokens(o); n > 0 {
					cell = web.Cell{Text: web.FormatInt(n)}
				}
			case "cost":
				if c := cost(o); c > 0 {
					cell = web.Cell{Text: web.FormatCost(c)}
				}
			case "environment":
				cell = web.Cell{Text: o.Environment}
			case "input":
				cell = web.Cell{Text: web.Truncate(120, o.Input), Title: web.Truncate(1000, o.Input), Class: "mono"}
			case "output":
				cell = web.Cell{Text: web.Truncate(120, o.Output), Title: web.Truncate(1000, o.Output), Class: "mono"}
			case "trace":
				cell = web.Cell{Text: o.TraceID[:min(12, len(o.TraceID))] + "…", Href: r.Path("project", r.Project.ID, "traces", o.TraceID), Class: "mono"}
			}
			row.Cells = append(row.Cells, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	d.Table = t
	return r.Render(h.t, "observations", d)
}
