package scores // import "github.com/glassbox-dev/glassbox/apiserver/scores"

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Config is a score config.
type Config struct {
	ID          string                       `json:"id"`
	Name        string                       `json:"name"`
	DataType    string                       `json:"dataType"`
	IsArchived  bool                         `json:"isArchived"`
	MinValue    *float64                     `json:"minValue,omitempty"`
	MaxValue    *float64                     `json:"maxValue,omitempty"`
	Categories  []controlplane.ScoreCategory `json:"categories,omitempty"`
	Description *string                      `json:"description,omitempty"`
	ProjectID   string                       `json:"projectId"`
	CreatedAt   httpx.Timestamp              `json:"createdAt"`
	UpdatedAt   httpx.Timestamp              `json:"updatedAt"`
}

// ConfigRequest is the body of POST /api/public/score-configs.
type ConfigRequest struct {
	Name        string                       `json:"name"`
	DataType    string                       `json:"dataType"`
	MinValue    *float64                     `json:"minValue,omitempty"`
	MaxValue    *float64                     `json:"maxValue,omitempty"`
	Categories  []controlplane.ScoreCategory `json:"categories,omitempty"`
	Description string                       `json:"description,omitempty"`
}

// ConfigUpdate is the body of PATCH /api/public/score-configs/{configId};
// at least one field is required. Sending minValue or maxValue replaces the
// range (an absent bound becomes open).
type ConfigUpdate struct {
	IsArchived  *bool                        `json:"isArchived,omitempty"`
	Name        *string                      `json:"name,omitempty"`
	MinValue    *float64                     `json:"minValue,omitempty"`
	MaxValue    *float64                     `json:"maxValue,omitempty"`
	Categories  []controlplane.ScoreCategory `json:"categories,omitempty"`
	Description *string                      `json:"description,omitempty"`
}

type configHandlers struct {
	store ConfigStore
}

func configRoutes(store ConfigStore) []httpx.Route {
	h := configHandlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/score-configs", Access: httpx.ProjectKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "scoreConfigs_create", Tag: "ScoreConfigs", Body: ConfigRequest{}, Response: Config{},
				Summary: "Create a score config: a NUMERIC range, CATEGORICAL categories or BOOLEAN."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/score-configs", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "scoreConfigs_get", Tag: "ScoreConfigs", Response: httpx.List[Config]{},
				Query: httpx.PageParams, Summary: "The project's score configs, oldest first."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/score-configs/{configId}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "scoreConfigs_getById", Tag: "ScoreConfigs", Response: Config{}, Summary: "One score config."},
		},
		{
			Method: http.MethodPatch, Path: "/api/public/score-configs/{configId}", Access: httpx.ProjectKey, Handler: h.update,
			Doc: httpx.Doc{OperationID: "scoreConfigs_update", Tag: "ScoreConfigs", Body: ConfigUpdate{}, Response: Config{},
				Summary: "Archive, rename or change a score config."},
		},
	}
}

func (h configHandlers) create(r *http.Request) (any, error) {
	var req ConfigRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	cfg, err := h.store.CreateScoreConfig(r.Context(), httpx.ProjectID(r), controlplane.NewScoreConfig{
		Name: req.Name, DataType: req.DataType, MinValue: req.MinValue, MaxValue: req.MaxValue,
		Categories: req.Categories, Description: req.Description,
	})
	if err != nil {
		return nil, configError(err, "")
	}
	return toConfig(cfg), nil
}

func (h configHandlers) list(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListScoreConfigs, toConfig)
}

func (h configHandlers) get(r *http.Request) (any, error) {
	id := r.PathValue("configId")
	cfg, err := h.store.GetScoreConfig(r.Context(), httpx.ProjectID(r), id)
	if err != nil {
		return nil, configError(err, id)
	}
	return toConfig(cfg), nil
}

func (h configHandlers) update(r *http.Request) (any, error) {
	var raw map[string]json.RawMessage
	if err := httpx.DecodeJSON(r, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, httpx.BadRequest("Request body must set at least one of isArchived, name, minValue, maxValue, categories, description")
	}
	buf, _ := json.Marshal(raw)
	var req ConfigUpdate
	if err := json.Unmarshal(buf, &req); err != nil {
		return nil, httpx.BadRequest("Invalid request body: %v", err)
	}
	_, setMin := raw["minValue"]
	_, setMax := raw["maxValue"]
	id := r.PathValue("configId")
	cfg, err := h.store.UpdateScoreConfig(r.Context(), httpx.ProjectID(r), id, controlplane.ScoreConfigUpdate{
		IsArchived: req.IsArchived, Name: req.Name, Description: req.Description, Categories: req.Categories,
		SetRange: setMin || setMax, MinValue: req.MinValue, MaxValue: req.MaxValue,
	})
	if err != nil {
		return nil, configError(err, id)
	}
	return toConfig(cfg), nil
}

func configError(err error, id string) error {
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return httpx.NotFound("Score config %s not found", id)
	case errors.Is(err, controlplane.ErrInvalid):
		return httpx.BadRequest("%s", strings.ReplaceAll(err.Error(), controlplane.ErrInvalid.Error()+": ", ""))
	}
	return err
}

func toConfig(cfg controlplane.ScoreConfig) Config {
	return Config{
		ID: cfg.ID, Name: cfg.Name, DataType: cfg.DataType, IsArchived: cfg.IsArchived, MinValue: cfg.MinValue,
		MaxValue: cfg.MaxValue, Categories: cfg.Categories, Description: httpx.OptionalString(cfg.Description),
		ProjectID: cfg.ProjectID, CreatedAt: httpx.FromTime(cfg.CreatedAt), UpdatedAt: httpx.FromTime(cfg.UpdatedAt),
	}
}
