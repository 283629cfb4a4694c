package settings

import (
	"context"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Usage counts billing units; *chstore.Store implements it.
type Usage interface {
	Usage(ctx context.Context, projectIDs []string, from time.Time) ([]chstore.MonthUsage, error)
}

// usageMonths is how far back usage goes.
const usageMonths = 12

type usageRow struct {
	chstore.MonthUsage
	Project string // the project's name
}

type usageData struct {
	Tabs []web.Tab // set on the project's page
	// Rows are per project and month, newest month first; Totals per month
	// over the projects shown.
	Rows   []usageRow
	Totals []chstore.MonthUsage
}

// readUsage counts the units of the projects (id to name) in the last
// twelve months.
func (h *handlers) readUsage(r *web.Request, projects map[string]string) (*usageData, error) {
	ids := make([]string, 0, len(projects))
	for id := range projects {
		ids = append(ids, id)
	}
	now := time.Now().UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -(usageMonths - 1), 0)
	months, err := h.usage.Usage(r.Context(), ids, from)
	if err != nil {
		return nil, err
	}
	d := &usageData{}
	totals := map[time.Time]*chstore.MonthUsage{}
	for i := len(months) - 1; i >= 0; i-- {
		m := months[i]
		d.Rows = append(d.Rows, usageRow{MonthUsage: m, Project: projects[m.ProjectID]})
		if totals[m.Month] == nil {
			totals[m.Month] = &chstore.MonthUsage{Month: m.Month}
		}
		t := totals[m.Month]
		t.Traces, t.Observations, t.Scores = t.Traces+m.Traces, t.Observations+m.Observations, t.Scores+m.Scores
	}
	for month := now; !month.Before(from); month = month.AddDate(0, -1, 0) {
		if t := totals[time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)]; t != nil {
			d.Totals = append(d.Totals, *t)
		}
	}
	return d, nil
}

// orgUsage shows the organization's units per month, in total and per
// project.
func (h *handlers) orgUsage(r *web.Request) error {
	ps, err := h.store.ListProjects(r.Context(), r.Org.ID)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	d, err := h.readUsage(r, names)
	if err != nil {
		return err
	}
	return r.Render(h.t, "usage", d)
}

// projectUsage shows one project's units per month.
func (h *handlers) projectUsage(r *web.Request) error {
	d, err := h.readUsage(r, map[string]string{r.Project.ID: r.Project.Name})
	if err != nil {
		return err
	}
	d.Tabs = tabs(r, "usage")
	return r.Render(h.t, "usage", d)
}
