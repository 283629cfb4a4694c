package settings

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

type modelsData struct {
	Tabs   []web.Tab
	Custom []modelRow
	// Builtin is the catalogue Glassbox ships, filtered by Query.
	Builtin []modelRow
	Query   string
	Form    modelForm
	formState
}

type modelRow struct {
	ID, Name, Pattern, Unit string
	// Input and Output are USD per million units of the default tier.
	Input, Output string
	Tiers         int
}

type modelForm struct {
	Name, Pattern, Input, Output string
}

// perMillion shows a per-unit price per million units, as people quote
// model prices.
func perMillion(p float64, ok bool) string {
	if !ok {
		return "–"
	}
	return "$" + strconv.FormatFloat(p*1e6, 'f', -1, 64)
}

func rowOf(m pricing.Model) modelRow {
	row := modelRow{ID: m.ID, Name: m.Name, Pattern: m.MatchPattern, Unit: m.Unit, Tiers: len(m.Tiers)}
	for _, t := range m.Tiers {
		if t.IsDefault {
			in, okIn := t.Prices[pricing.KeyInput]
			out, okOut := t.Prices[pricing.KeyOutput]
			if total, ok := t.Prices[pricing.KeyTotal]; ok && !okIn {
				in, okIn = total, true
			}
			row.Input, row.Output = perMillion(in, okIn), perMillion(out, okOut)
		}
	}
	return row
}

func (h *handlers) modelsData(r *web.Request) (*modelsData, error) {
	own, err := h.store.ListModels(r.Context(), r.Project.ID)
	if err != nil {
		return nil, err
	}
	d := &modelsData{Tabs: tabs(r, "models"), Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	for _, m := range own {
		d.Custom = append(d.Custom, rowOf(m))
	}
	q := strings.ToLower(d.Query)
	for _, m := range h.builtins {
		if q == "" || strings.Contains(strings.ToLower(m.Name), q) {
			d.Builtin = append(d.Builtin, rowOf(m))
		}
	}
	slices.SortFunc(d.Builtin, func(a, b modelRow) int { return cmp.Compare(a.Name, b.Name) })
	return d, nil
}

func (h *handlers) models(r *web.Request) error {
	d, err := h.modelsData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "models", d)
}

// createModel adds a project model with flat prices per million tokens;
// its match pattern decides which generations it prices, ahead of the
// built-in catalogue.
func (h *handlers) createModel(r *web.Request) error {
	f := modelForm{Name: strings.TrimSpace(r.PostFormValue("name")), Pattern: strings.TrimSpace(r.PostFormValue("pattern")),
		Input: strings.TrimSpace(r.PostFormValue("input")), Output: strings.TrimSpace(r.PostFormValue("output"))}
	m, err := f.model()
	if err == nil {
		_, err = h.store.CreateModel(r.Context(), r.Project.ID, m)
	}
	if err != nil {
		return failed(h, r, err, "models", func(r *web.Request) (*modelsData, error) {
			d, err := h.modelsData(r)
			if d != nil {
				d.Form = f
			}
			return d, err
		})
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "models"))
}

func (f modelForm) model() (pricing.Model, error) {
	if f.Name == "" {
		return pricing.Model{}, fmt.Errorf("%w: a model needs a name", controlplane.ErrInvalid)
	}
	pattern := f.Pattern
	if pattern == "" {
		pattern = "(?i)^" + regexp.QuoteMeta(f.Name) + "$"
	}
	prices := map[string]float64{}
	for key, v := range map[string]string{pricing.KeyInput: f.Input, pricing.KeyOutput: f.Output} {
		if v == "" {
			continue
		}
		p, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
		if err != nil || p < 0 {
			return pricing.Model{}, fmt.Errorf("%w: the %s price must be a number of US dollars per million tokens", controlplane.ErrInvalid, key)
		}
		prices[key] = p / 1e6
	}
	if len(prices) == 0 {
		return pricing.Model{}, fmt.Errorf("%w: give an input or an output price", controlplane.ErrInvalid)
	}
	return pricing.Model{Name: f.Name, MatchPattern: pattern, Unit: "TOKENS", Tiers: pricing.FlatTiers(prices)}, nil
}

func (h *handlers) deleteModel(r *web.Request) error {
	err := h.store.DeleteModel(r.Context(), r.Project.ID, r.PathValue("modelId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "models"))
}
