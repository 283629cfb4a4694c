// Package projectsettings serves a project's runtime settings: for now the
// sampling rates that the collector's glassbox_sampling processor applies
// to the project's traces, reloaded without a restart.
package projectsettings // import "github.com/glassbox-dev/glassbox/apiserver/projectsettings"

import (
	"context"
	"errors"
	"net/http"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

// Store is what the routes need from the control plane store.
type Store interface {
	GetSampling(ctx context.Context, projectID string) (sampling.Rates, error)
	SetSampling(ctx context.Context, projectID string, r sampling.Rates) (sampling.Rates, error)
}

// Settings is the body of both routes.
type Settings struct {
	ProjectID string `json:"projectId,omitempty"`
	// Sampling are the project's rates: each the fraction of traces kept,
	// in [0, 1]. A null rate leaves the project's default to the collector
	// configuration; environment rates take precedence over it.
	Sampling Sampling `json:"sampling"`
}

// Sampling are a project's sampling rates.
type Sampling struct {
	Rate         *float64           `json:"rate"`
	Environments map[string]float64 `json:"environments"`
}

type handlers struct {
	store Store
}

// Routes returns the project settings routes.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	const path = "/api/public/projects/{projectId}/settings"
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: path, Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "projectSettings_get", Tag: "Projects", Response: Settings{},
				Summary: "The project's settings: its sampling rates (the key's own project)."},
		},
		{
			Method: http.MethodPut, Path: path, Access: httpx.ProjectKey, Handler: h.put,
			Doc: httpx.Doc{OperationID: "projectSettings_update", Tag: "Projects", Body: Settings{}, Response: Settings{},
				Summary: "Replace the project's sampling rates; collectors apply them to the next request (within 5 s when they run apart from this API server)."},
		},
	}
}

// project returns the addressed project, which must be the key's own.
func project(r *http.Request) (string, error) {
	id := r.PathValue("projectId")
	if id != httpx.ProjectID(r) {
		return "", httpx.NotFound("Project %s not found within authorized project key", id)
	}
	return id, nil
}

func (h handlers) get(r *http.Request) (any, error) {
	id, err := project(r)
	if err != nil {
		return nil, err
	}
	rates, err := h.store.GetSampling(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return toSettings(id, rates), nil
}

func (h handlers) put(r *http.Request) (any, error) {
	id, err := project(r)
	if err != nil {
		return nil, err
	}
	var req Settings
	if err := httpx.DecodeStrictJSON(r, &req); err != nil {
		return nil, err
	}
	rates, err := h.store.SetSampling(r.Context(), id, sampling.Rates{
		Rate: req.Sampling.Rate, Environments: req.Sampling.Environments,
	})
	if errors.Is(err, controlplane.ErrInvalid) {
		return nil, httpx.BadRequest("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return toSettings(id, rates), nil
}

func toSettings(id string, r sampling.Rates) Settings {
	envs := r.Environments
	if envs == nil {
		envs = map[string]float64{}
	}
	return Settings{ProjectID: id, Sampling: Sampling{Rate: r.Rate, Environments: envs}}
}
