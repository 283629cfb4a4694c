package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// maxScoreConfigs bounds the configs the page lists.
const maxScoreConfigs = 500

type scoreConfigsData struct {
	formState
	Tabs    []web.Tab
	Configs []controlplane.ScoreConfig
	Form    scoreConfigForm
}

// scoreConfigForm is the new-config form as typed.
type scoreConfigForm struct {
	Name, DataType, Min, Max, Categories, Description string
}

func (h *handlers) scoreConfigsData(r *web.Request) (*scoreConfigsData, error) {
	cs, _, err := h.store.ListScoreConfigs(r.Context(), r.Project.ID, 0, maxScoreConfigs)
	if err != nil {
		return nil, err
	}
	return &scoreConfigsData{Tabs: tabs(r, "scores"), Configs: cs, Form: scoreConfigForm{DataType: controlplane.ScoreNumeric}}, nil
}

// scoreConfigs lists the project's score configs: what people score traces
// with, in the trace view and in annotation queues.
func (h *handlers) scoreConfigs(r *web.Request) error {
	d, err := h.scoreConfigsData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "scores", d)
}

func (h *handlers) createScoreConfig(r *web.Request) error {
	f := scoreConfigForm{Name: strings.TrimSpace(r.PostFormValue("name")), DataType: r.PostFormValue("data_type"),
		Min: strings.TrimSpace(r.PostFormValue("min")), Max: strings.TrimSpace(r.PostFormValue("max")),
		Categories: strings.TrimSpace(r.PostFormValue("categories")), Description: strings.TrimSpace(r.PostFormValue("description"))}
	n, err := f.config()
	if err == nil {
		_, err = h.store.CreateScoreConfig(r.Context(), r.Project.ID, n)
	}
	if err != nil {
		return failed(h, r, err, "scores", func(r *web.Request) (*scoreConfigsData, error) {
			d, err := h.scoreConfigsData(r)
			if d != nil {
				d.Form = f
			}
			return d, err
		})
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "scores"))
}

// config reads the form; the store checks the rest (ranges, categories by
// data type, unique names).
func (f scoreConfigForm) config() (controlplane.NewScoreConfig, error) {
	n := controlplane.NewScoreConfig{Name: f.Name, DataType: f.DataType, Description: f.Description}
	bound := func(s, which string) (*float64, error) {
		if s == "" {
			return nil, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: the %s must be a number", controlplane.ErrInvalid, which)
		}
		return &v, nil
	}
	var err error
	if n.MinValue, err = bound(f.Min, "minimum"); err != nil {
		return n, err
	}
	if n.MaxValue, err = bound(f.Max, "maximum"); err != nil {
		return n, err
	}
	// Categories are typed as "label=value, label=value"; a label alone
	// takes its position as its value.
	for i, part := range strings.Split(f.Categories, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		label, value, hasValue := strings.Cut(part, "=")
		c := controlplane.ScoreCategory{Label: strings.TrimSpace(label), Value: float64(i)}
		if hasValue {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return n, fmt.Errorf("%w: the value of category %q must be a number", controlplane.ErrInvalid, c.Label)
			}
			c.Value = v
		}
		n.Categories = append(n.Categories, c)
	}
	return n, nil
}

// archiveScoreConfig archives a config (`archived=true`) or restores it:
// an archived config is offered nowhere, and its scores stay.
func (h *handlers) archiveScoreConfig(r *web.Request) error {
	archived := r.PostFormValue("archived") == "true"
	_, err := h.store.UpdateScoreConfig(r.Context(), r.Project.ID, r.PathValue("configId"), controlplane.ScoreConfigUpdate{IsArchived: &archived})
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "scores"))
}
