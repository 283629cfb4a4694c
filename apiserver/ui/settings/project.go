package settings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

type generalData struct {
	Tabs         []web.Tab
	Project      controlplane.Project
	Rate         string // the project's default rate, "" when unset
	Environments []envRate
	Saved        bool
	formState
}

type envRate struct {
	Name string
	Rate float64
}

func (h *handlers) generalData(r *web.Request) (*generalData, error) {
	rates, err := h.store.GetSampling(r.Context(), r.Project.ID)
	if err != nil {
		return nil, err
	}
	d := &generalData{Tabs: tabs(r, ""), Project: *r.Project}
	if rates.Rate != nil {
		d.Rate = strconv.FormatFloat(*rates.Rate, 'f', -1, 64)
	}
	for _, env := range slices.Sorted(maps.Keys(rates.Environments)) {
		d.Environments = append(d.Environments, envRate{Name: env, Rate: rates.Environments[env]})
	}
	return d, nil
}

func (h *handlers) general(r *web.Request) error {
	d, err := h.generalData(r)
	if err != nil {
		return err
	}
	d.Saved = r.URL.Query().Get("saved") != ""
	return r.Render(h.t, "general", d)
}

func (h *handlers) generalFailed(r *web.Request, err error) error {
	return failed(h, r, err, "general", h.generalData)
}

// saveGeneral renames the project and sets its retention.
func (h *handlers) saveGeneral(r *web.Request) error {
	name := r.PostFormValue("name")
	days, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("retention_days")))
	if err != nil || days < 0 {
		return h.generalFailed(r, fmt.Errorf("%w: retention days must be a whole number, 0 to keep data forever", controlplane.ErrInvalid))
	}
	if _, err := h.store.UpdateProject(r.Context(), r.Org.ID, r.Project.ID, controlplane.ProjectUpdate{Name: &name, RetentionDays: &days}); err != nil {
		return h.generalFailed(r, err)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings") + "?saved=1")
}

// saveSampling sets the default rate and one rate per environment, from
// the rate and env_name/env_rate fields (an empty name drops the row).
func (h *handlers) saveSampling(r *web.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	var rates sampling.Rates
	parse := func(field, s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || v < 0 || v > 1 {
			return 0, fmt.Errorf("%w: %s must be a number from 0 to 1", controlplane.ErrInvalid, field)
		}
		return v, nil
	}
	if s := strings.TrimSpace(r.PostFormValue("rate")); s != "" {
		v, err := parse("the default rate", s)
		if err != nil {
			return h.generalFailed(r, err)
		}
		rates.Rate = &v
	}
	names, values := r.PostForm["env_name"], r.PostForm["env_rate"]
	for i, name := range names {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || i >= len(values) {
			continue
		}
		v, err := parse("the rate of "+name, values[i])
		if err != nil {
			return h.generalFailed(r, err)
		}
		if rates.Environments == nil {
			rates.Environments = map[string]float64{}
		}
		rates.Environments[name] = v
	}
	if _, err := h.store.SetSampling(r.Context(), r.Project.ID, rates); err != nil {
		return h.generalFailed(r, err)
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings") + "?saved=1")
}

// deleteProject deletes the project once its name is typed as confirmation.
func (h *handlers) deleteProject(r *web.Request) error {
	if strings.TrimSpace(r.PostFormValue("confirm")) != r.Project.Name {
		return h.generalFailed(r, fmt.Errorf("%w: type the project's name to delete it", controlplane.ErrInvalid))
	}
	if err := h.store.DeleteProject(r.Context(), r.Org.ID, r.Project.ID); err != nil {
		return err
	}
	return r.Redirect(r.Path("organization", r.Org.ID))
}
