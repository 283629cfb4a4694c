// Package models serves the model price definitions: a project's own
// definitions, which it creates and deletes, and the built-in catalogue,
// which every project reads (Langfuse's "managed" models). The cost
// processor prices generations with both, the project's first (see
// internal/pricing for the matching rule).
package models // import "github.com/glassbox-dev/glassbox/apiserver/models"

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// Store is what the routes need from the control plane store.
type Store interface {
	CreateModel(ctx context.Context, projectID string, m pricing.Model) (pricing.Model, error)
	UpsertModel(ctx context.Context, projectID string, m pricing.Model) (pricing.Model, error)
	GetModel(ctx context.Context, projectID, id string) (pricing.Model, error)
	ListModels(ctx context.Context, projectID string) ([]pricing.Model, error)
	DeleteModel(ctx context.Context, projectID, id string) error
}

// Model is a definition as the API shows it. The flat prices are the
// default tier's input, output and total prices.
type Model struct {
	ID                string                `json:"id"`
	ModelName         string                `json:"modelName"`
	MatchPattern      string                `json:"matchPattern"`
	StartDate         *httpx.Timestamp      `json:"startDate"`
	InputPrice        *float64              `json:"inputPrice"`
	OutputPrice       *float64              `json:"outputPrice"`
	TotalPrice        *float64              `json:"totalPrice"`
	Unit              string                `json:"unit"`
	TokenizerID       *string               `json:"tokenizerId"`
	TokenizerConfig   *TokenizerConfig      `json:"tokenizerConfig"`
	IsLangfuseManaged bool                  `json:"isLangfuseManaged"`
	CreatedAt         *httpx.Timestamp      `json:"createdAt"`
	Prices            map[string]PriceValue `json:"prices"`
	PricingTiers      []PricingTier         `json:"pricingTiers"`
}

// TokenizerConfig configures usage estimation for the model's tokenizer.
type TokenizerConfig = pricing.TokenizerConfig

// Condition is a pricing tier condition on the usage.
type Condition = pricing.Condition

// PriceValue is one price, in USD per unit.
type PriceValue struct {
	Price float64 `json:"price"`
}

// PricingTier is a set of prices and the conditions under which it applies.
type PricingTier struct {
	ID         string             `json:"id"`
	Name       string             `json:"name"`
	IsDefault  bool               `json:"isDefault"`
	Priority   int                `json:"priority"`
	Conditions []Condition        `json:"conditions"`
	Prices     map[string]float64 `json:"prices"`
}

// CreateModelRequest is the body of POST /api/public/models: either flat
// prices (inputPrice/outputPrice, or totalPrice alone) or pricingTiers.
type CreateModelRequest struct {
	ModelName       string           `json:"modelName"`
	MatchPattern    string           `json:"matchPattern"`
	StartDate       *httpx.Timestamp `json:"startDate,omitempty"`
	Unit            string           `json:"unit,omitempty"`
	InputPrice      *float64         `json:"inputPrice,omitempty"`
	OutputPrice     *float64         `json:"outputPrice,omitempty"`
	TotalPrice      *float64         `json:"totalPrice,omitempty"`
	TokenizerID     string           `json:"tokenizerId,omitempty"`
	TokenizerConfig *TokenizerConfig `json:"tokenizerConfig,omitempty"`
	PricingTiers    []TierRequest    `json:"pricingTiers,omitempty"`
}

// TierRequest is a pricing tier of a new model.
type TierRequest struct {
	Name       string             `json:"name"`
	IsDefault  bool               `json:"isDefault"`
	Priority   int                `json:"priority"`
	Conditions []Condition        `json:"conditions,omitempty"`
	Prices     map[string]float64 `json:"prices"`
}

// DeletionResponse answers a deletion.
type DeletionResponse struct {
	Message string `json:"message"`
}

type handlers struct {
	store   Store
	builtin []pricing.Model
	// builtinErr is why the built-in catalogue did not load; its tests
	// keep this from happening, but the routes answer 500 rather than
	// hide the catalogue.
	builtinErr error
}

// Routes returns the model routes over the store and the built-in catalogue.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	catalogue, err := pricing.Builtin()
	h.builtin, h.builtinErr = catalogue.Models(), err
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/models", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "models_list", Tag: "Models", Query: httpx.PageParams, Response: httpx.List[Model]{},
				Summary: "The project's own model definitions and the built-in ones, by model name, latest start date first."},
		},
		{
			Method: http.MethodPost, Path: "/api/public/models", Access: httpx.ProjectKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "models_create", Tag: "Models", Body: CreateModelRequest{}, Response: Model{},
				Summary: "Create a model definition; it prices the project's generations before the built-in ones."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/models/{id}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "models_get", Tag: "Models", Response: Model{},
				Summary: "A model definition of the project or of the built-in catalogue."},
		},
		{
			Method: http.MethodPut, Path: "/api/public/models/{id}", Access: httpx.ProjectKey, Handler: h.upsert,
			Doc: httpx.Doc{OperationID: "models_upsert", Tag: "Models", Body: CreateModelRequest{}, Response: Model{},
				Summary: "Create the model definition with this id, or replace the project's definition that has it."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/models/{id}", Access: httpx.ProjectKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "models_delete", Tag: "Models", Response: DeletionResponse{},
				Summary: "Delete one of the project's model definitions; built-in ones cannot be deleted."},
		},
	}
}

func (h handlers) list(r *http.Request) (any, error) {
	page, err := httpx.QueryOf(r).Page()
	if err != nil {
		return nil, err
	}
	if h.builtinErr != nil {
		return nil, h.builtinErr
	}
	own, err := h.store.ListModels(r.Context(), httpx.ProjectID(r))
	if err != nil {
		return nil, err
	}
	all := append(slices.Clone(own), h.builtin...)
	// Langfuse's order: model name, unit, the latest start date first and
	// definitions without one last.
	slices.SortStableFunc(all, func(a, b pricing.Model) int {
		if c := cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Unit, b.Unit)); c != 0 {
			return c
		}
		if a.StartDate.IsZero() != b.StartDate.IsZero() {
			if a.StartDate.IsZero() {
				return 1
			}
			return -1
		}
		return b.StartDate.Compare(a.StartDate)
	})
	from := min(page.Offset(), len(all))
	to := min(from+page.Limit, len(all))
	out := make([]Model, 0, to-from)
	for _, m := range all[from:to] {
		out = append(out, toModel(m))
	}
	return httpx.NewList(out, page, int64(len(all))), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	id := r.PathValue("id")
	m, err := h.store.GetModel(r.Context(), httpx.ProjectID(r), id)
	if errors.Is(err, controlplane.ErrNotFound) {
		b, ok, err := h.findBuiltin(id)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return toModel(b), nil
		}
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return toModel(m), nil
}

func (h handlers) create(r *http.Request) (any, error) {
	return h.write(r, "")
}

func (h handlers) upsert(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if _, ok, err := h.findBuiltin(id); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return nil, httpx.BadRequest("Model %s is built in and cannot be replaced; create a project model to override it", id)
	}
	return h.write(r, id)
}

// write stores the body's definition: a new one, or under id (PUT).
func (h handlers) write(r *http.Request, id string) (any, error) {
	var req CreateModelRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	m, err := req.model()
	if err != nil {
		return nil, err
	}
	var stored pricing.Model
	if id == "" {
		stored, err = h.store.CreateModel(r.Context(), httpx.ProjectID(r), m)
	} else {
		m.ID = id
		stored, err = h.store.UpsertModel(r.Context(), httpx.ProjectID(r), m)
	}
	switch {
	case errors.Is(err, controlplane.ErrConflict) && id != "" && h.idElsewhere(r, id):
		return nil, httpx.Conflict("Model id %s is used by another project; choose another id", id)
	case errors.Is(err, controlplane.ErrConflict):
		return nil, httpx.BadRequest("A model named %q with this start date already exists in the project", req.ModelName)
	case errors.Is(err, controlplane.ErrInvalid):
		return nil, httpx.BadRequest("%v", err)
	case err != nil:
		return nil, err
	}
	return toModel(stored), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	id := r.PathValue("id")
	err := h.store.DeleteModel(r.Context(), httpx.ProjectID(r), id)
	if errors.Is(err, controlplane.ErrNotFound) {
		_, ok, err := h.findBuiltin(id)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return nil, httpx.BadRequest("Model %s is built in and cannot be deleted; create a project model to override it", id)
		}
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return DeletionResponse{Message: "Model successfully deleted"}, nil
}

// idElsewhere reports whether a conflicting upsert's id is not the
// project's own, so another project holds it.
func (h handlers) idElsewhere(r *http.Request, id string) bool {
	_, err := h.store.GetModel(r.Context(), httpx.ProjectID(r), id)
	return errors.Is(err, controlplane.ErrNotFound)
}

func (h handlers) findBuiltin(id string) (pricing.Model, bool, error) {
	if !strings.HasPrefix(id, pricing.BuiltinPrefix) {
		return pricing.Model{}, false, nil
	}
	if h.builtinErr != nil {
		return pricing.Model{}, false, h.builtinErr
	}
	i := slices.IndexFunc(h.builtin, func(m pricing.Model) bool { return m.ID == id })
	if i < 0 {
		return pricing.Model{}, false, nil
	}
	return h.builtin[i], true, nil
}

func notFound(id string) error {
	return httpx.NotFound("Model %s not found within authorized project", id)
}

// model turns the request into a definition: flat prices become the
// default tier, as in Langfuse.
func (req CreateModelRequest) model() (pricing.Model, error) {
	if strings.TrimSpace(req.ModelName) == "" {
		return pricing.Model{}, httpx.BadRequest("modelName is required")
	}
	flat := req.InputPrice != nil || req.OutputPrice != nil || req.TotalPrice != nil
	switch {
	case flat && len(req.PricingTiers) > 0:
		return pricing.Model{}, httpx.BadRequest("Give either flat prices (inputPrice, outputPrice, totalPrice) or pricingTiers, not both")
	case !flat && len(req.PricingTiers) == 0:
		return pricing.Model{}, httpx.BadRequest("A model needs prices: inputPrice/outputPrice, totalPrice or pricingTiers")
	case req.TotalPrice != nil && (req.InputPrice != nil || req.OutputPrice != nil):
		return pricing.Model{}, httpx.BadRequest("totalPrice can only be given without inputPrice and outputPrice")
	}
	m := pricing.Model{
		Name:            strings.TrimSpace(req.ModelName),
		MatchPattern:    req.MatchPattern,
		Unit:            req.Unit,
		TokenizerID:     req.TokenizerID,
		TokenizerConfig: req.TokenizerConfig,
	}
	if req.StartDate != nil {
		m.StartDate = time.Time(*req.StartDate)
	}
	if flat {
		prices := map[string]float64{}
		for key, p := range map[string]*float64{pricing.KeyInput: req.InputPrice, pricing.KeyOutput: req.OutputPrice, pricing.KeyTotal: req.TotalPrice} {
			if p != nil {
				prices[key] = *p
			}
		}
		m.Tiers = pricing.FlatTiers(prices)
		return m, nil
	}
	for _, t := range req.PricingTiers {
		m.Tiers = append(m.Tiers, pricing.Tier{
			Name: t.Name, IsDefault: t.IsDefault, Priority: t.Priority, Conditions: t.Conditions, Prices: t.Prices,
		})
	}
	return m, nil
}

func toModel(m pricing.Model) Model {
	out := Model{
		ID:                m.ID,
		ModelName:         m.Name,
		MatchPattern:      m.MatchPattern,
		Unit:              m.Unit,
		TokenizerID:       httpx.OptionalString(m.TokenizerID),
		TokenizerConfig:   m.TokenizerConfig,
		IsLangfuseManaged: m.ProjectID == "",
		Prices:            map[string]PriceValue{},
		PricingTiers:      make([]PricingTier, 0, len(m.Tiers)),
	}
	if !m.StartDate.IsZero() {
		ts := httpx.FromTime(m.StartDate)
		out.StartDate = &ts
	}
	if !m.CreatedAt.IsZero() {
		ts := httpx.FromTime(m.CreatedAt)
		out.CreatedAt = &ts
	}
	for _, t := range m.Tiers {
		out.PricingTiers = append(out.PricingTiers, PricingTier{
			ID: t.ID, Name: t.Name, IsDefault: t.IsDefault, Priority: t.Priority,
			Conditions: httpx.NonNil(t.Conditions), Prices: t.Prices,
		})
	}
	if d := m.DefaultTier(); d != nil {
		for k, p := range d.Prices {
			out.Prices[k] = PriceValue{Price: p}
		}
		out.InputPrice = priceOf(d.Prices, pricing.KeyInput)
		out.OutputPrice = priceOf(d.Prices, pricing.KeyOutput)
		out.TotalPrice = priceOf(d.Prices, pricing.KeyTotal)
	}
	return out
}

func priceOf(prices map[string]float64, key string) *float64 {
	p, ok := prices[key]
	if !ok {
		return nil
	}
	return &p
}
