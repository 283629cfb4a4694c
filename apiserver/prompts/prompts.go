// Package prompts serves prompt management: versions of named text and chat
// prompts, labels that move between versions, listing, deletion, and
// composition (references to other prompts resolved on fetch).
package prompts // import "github.com/glassbox-dev/glassbox/apiserver/prompts"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// Store is what the routes need from the control plane store.
type Store interface {
	CreatePrompt(ctx context.Context, projectID string, np controlplane.NewPrompt) (controlplane.Prompt, error)
	GetPrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	ResolvePrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	SetPromptLabels(ctx context.Context, projectID, name string, version int, labels []string) (controlplane.Prompt, error)
	DeletePrompts(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) error
	ListPrompts(ctx context.Context, projectID string, f controlplane.PromptFilter) ([]controlplane.PromptSummary, int, error)
}

// Prompt is one prompt version as the SDKs read it.
type Prompt struct {
	ID        string          `json:"id"`
	CreatedAt httpx.Timestamp `json:"createdAt"`
	UpdatedAt httpx.Timestamp `json:"updatedAt"`
	ProjectID string          `json:"projectId"`
	CreatedBy string          `json:"createdBy"`
	Name      string          `json:"name"`
	Version   int             `json:"version"`
	Type      string          `json:"type"`
	// Prompt is a string (text) or an array of {role, content} messages and
	// {type: "placeholder", name} entries (chat).
	Prompt httpx.JSON `json:"prompt"`
	Config httpx.JSON `json:"config"`
	Labels []string   `json:"labels"`
	Tags   []string   `json:"tags"`
	// IsActive mirrors the production label.
	IsActive        bool             `json:"isActive"`
	CommitMessage   *string          `json:"commitMessage"`
	ResolutionGraph *ResolutionGraph `json:"resolutionGraph"`
}

// ResolutionGraph says which prompt versions a resolved prompt was built from.
type ResolutionGraph struct {
	Root PromptRef `json:"root"`
	// Dependencies maps a prompt version id to the versions it references.
	Dependencies map[string][]PromptRef `json:"dependencies"`
}

// PromptRef names one prompt version.
type PromptRef struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// CreateRequest is the body of POST /api/public/v2/prompts.
type CreateRequest struct {
	Name string `json:"name"`
	// Type is "text" (default) or "chat".
	Type          string     `json:"type,omitempty"`
	Prompt        httpx.JSON `json:"prompt"`
	Config        httpx.JSON `json:"config,omitempty"`
	Labels        []string   `json:"labels,omitempty"`
	Tags          []string   `json:"tags,omitempty"`
	CommitMessage *string    `json:"commitMessage,omitempty"`
}

// CreateRequestV1 is the body of POST /api/public/prompts: the v2 body and
// isActive, which gives the new version the production label when true.
type CreateRequestV1 struct {
	CreateRequest
	IsActive *bool `json:"isActive"`
}

// LabelsRequest is the body of PATCH /api/public/v2/prompts/{name}/versions/{version}.
type LabelsRequest struct {
	NewLabels []string `json:"newLabels"`
}

// Summary describes a prompt name in the list.
type Summary struct {
	Name          string          `json:"name"`
	Type          string          `json:"type"`
	Versions      []int           `json:"versions"`
	Labels        []string        `json:"labels"`
	Tags          []string        `json:"tags"`
	LastUpdatedAt httpx.Timestamp `json:"lastUpdatedAt"`
	LastConfig    httpx.JSON      `json:"lastConfig"`
}

// List is the body of GET /api/public/v2/prompts: besides meta, the same
// numbers under pagination, which older clients read.
type List struct {
	Data       []Summary  `json:"data"`
	Meta       httpx.Meta `json:"meta"`
	Pagination httpx.Meta `json:"pagination"`
}

// Prompt list limits differ from the other lists.
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

type handlers struct {
	store Store
}

var selectorParams = []httpx.Param{
	{Name: "version", Type: httpx.TypeInteger, Description: "Version to pick; not with label."},
	{Name: "label", Type: httpx.TypeString, Description: "Label to pick (default production); not with version."},
}

// Routes returns the prompt routes. Names may hold '/' (folders): clients
// encode it as %2F, or send it raw through FolderNames.
func Routes(store Store) []httpx.Route {
	h := handlers{store: store}
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/api/public/v2/prompts", Access: httpx.ProjectKey, Handler: h.create,
			Doc: httpx.Doc{OperationID: "prompts_create", Tag: "Prompts", Body: CreateRequest{}, Response: Prompt{},
				Status: http.StatusCreated, Summary: "Create a new version of a prompt; it gets the latest label."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/prompts", Access: httpx.ProjectKey, Handler: h.list,
			Doc: httpx.Doc{OperationID: "prompts_list", Tag: "Prompts", Response: List{},
				Summary: "Prompt names with their versions, labels and tags, by name.",
				Query: []httpx.Param{
					{Name: "name", Type: httpx.TypeString},
					{Name: "label", Type: httpx.TypeString},
					{Name: "tag", Type: httpx.TypeString},
					{Name: "version", Type: httpx.TypeInteger},
					{Name: "fromUpdatedAt", Type: httpx.TypeDateTime},
					{Name: "toUpdatedAt", Type: httpx.TypeDateTime},
					{Name: "page", Type: httpx.TypeInteger, Description: "Page number, from 1 (default 1)."},
					{Name: "limit", Type: httpx.TypeInteger, Description: "Items per page, 1 to 100 (default 10)."},
				}},
		},
		{
			Method: http.MethodGet, Path: "/api/public/v2/prompts/{promptName}", Access: httpx.ProjectKey, Handler: h.get,
			Doc: httpx.Doc{OperationID: "prompts_get", Tag: "Prompts", Response: Prompt{},
				Summary: "One prompt version, with references to other prompts resolved unless resolve=false.",
				Query: append(selectorParams[:len(selectorParams):len(selectorParams)],
					httpx.Param{Name: "resolve", Type: httpx.TypeBoolean, Description: "Resolve prompt references (default true)."})},
		},
		// The v1 routes: one version by query rather than path, and creation
		// with isActive.
		{
			Method: http.MethodGet, Path: "/api/public/prompts", Access: httpx.ProjectKey, Handler: h.getV1,
			Doc: httpx.Doc{OperationID: "prompts_getV1", Tag: "Prompts", Response: Prompt{},
				Summary: "One prompt version by name (v1 path of GET /api/public/v2/prompts/{promptName}).",
				Query:   append([]httpx.Param{{Name: "name", Type: httpx.TypeString, Required: true}}, selectorParams...)},
		},
		{
			Method: http.MethodPost, Path: "/api/public/prompts", Access: httpx.ProjectKey, Handler: h.createV1,
			Doc: httpx.Doc{OperationID: "prompts_createV1", Tag: "Prompts", Body: CreateRequestV1{}, Response: Prompt{},
				Status: http.StatusCreated, Summary: "Create a new version of a prompt; isActive gives it the production label (v1)."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/v2/prompts/{promptName}", Access: httpx.ProjectKey, Handler: h.delete,
			Doc: httpx.Doc{OperationID: "prompts_delete", Tag: "Prompts", Status: http.StatusNoContent,
				Summary: "Delete all versions of a prompt, or those with a label, or one version.", Query: selectorParams},
		},
		{
			Method: http.MethodPatch, Path: "/api/public/v2/prompts/{promptName}/versions/{version}", Access: httpx.ProjectKey,
			Handler: h.setLabels,
			Doc: httpx.Doc{OperationID: "promptVersion_update", Tag: "Prompts", Body: LabelsRequest{}, Response: Prompt{},
				Summary: "Add labels to a version; they leave the versions that had them."},
		},
	}
}

func (h handlers) create(r *http.Request) (any, error) {
	var req CreateRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	return h.createPrompt(r, req)
}

func (h handlers) createV1(r *http.Request) (any, error) {
	var req CreateRequestV1
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.IsActive == nil {
		return nil, httpx.BadRequest("isActive is required: true gives the new version the %s label", controlplane.LabelProduction)
	}
	if *req.IsActive && !slices.Contains(req.Labels, controlplane.LabelProduction) {
		req.Labels = append(req.Labels, controlplane.LabelProduction)
	}
	return h.createPrompt(r, req.CreateRequest)
}

func (h handlers) createPrompt(r *http.Request, req CreateRequest) (any, error) {
	np := controlplane.NewPrompt{
		Name: req.Name, Type: req.Type, Prompt: req.Prompt, Config: req.Config, Labels: req.Labels, Tags: req.Tags,
	}
	if req.CommitMessage != nil {
		np.CommitMessage = *req.CommitMessage
	}
	p, err := h.store.CreatePrompt(r.Context(), httpx.ProjectID(r), np)
	if err != nil {
		return nil, storeError(err, req.Name, controlplane.PromptSelector{})
	}
	return httpx.WithStatus(http.StatusCreated, toPrompt(p)), nil
}

func (h handlers) get(r *http.Request) (any, error) {
	return h.getPrompt(r, r.PathValue("promptName"))
}

func (h handlers) getV1(r *http.Request) (any, error) {
	name := httpx.QueryOf(r).String("name")
	if name == "" {
		return nil, httpx.BadRequest("Query parameter name is required")
	}
	return h.getPrompt(r, name)
}

func (h handlers) getPrompt(r *http.Request, name string) (any, error) {
	q := httpx.QueryOf(r)
	sel, err := selector(q)
	if err != nil {
		return nil, err
	}
	resolve, err := q.Bool("resolve")
	if err != nil {
		return nil, err
	}
	var p controlplane.Prompt
	if resolve == nil || *resolve {
		p, err = h.store.ResolvePrompt(r.Context(), httpx.ProjectID(r), name, sel)
	} else {
		p, err = h.store.GetPrompt(r.Context(), httpx.ProjectID(r), name, sel)
	}
	if err != nil {
		if sel == (controlplane.PromptSelector{}) {
			sel.Label = controlplane.LabelProduction
		}
		return nil, storeError(err, name, sel)
	}
	return toPrompt(p), nil
}

func (h handlers) delete(r *http.Request) (any, error) {
	sel, err := selector(httpx.QueryOf(r))
	if err != nil {
		return nil, err
	}
	name := r.PathValue("promptName")
	if err := h.store.DeletePrompts(r.Context(), httpx.ProjectID(r), name, sel); err != nil {
		return nil, storeError(err, name, sel)
	}
	return httpx.WithStatus(http.StatusNoContent, nil), nil
}

func (h handlers) setLabels(r *http.Request) (any, error) {
	raw := r.PathValue("version")
	version, err := strconv.Atoi(raw)
	if err != nil || version < 1 {
		return nil, httpx.BadRequest("Invalid version %q: expected a positive integer", raw)
	}
	var req LabelsRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.NewLabels == nil {
		return nil, httpx.BadRequest("newLabels is required: a list of labels")
	}
	name := r.PathValue("promptName")
	p, err := h.store.SetPromptLabels(r.Context(), httpx.ProjectID(r), name, version, req.NewLabels)
	if err != nil {
		return nil, storeError(err, name, controlplane.PromptSelector{Version: version})
	}
	return toPrompt(p), nil
}

func (h handlers) list(r *http.Request) (any, error) {
	q := httpx.QueryOf(r)
	limit, err := q.Int("limit", defaultListLimit, 1, maxListLimit)
	if err != nil {
		return nil, err
	}
	page, err := q.Int("page", 1, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	version, err := q.Int("version", 0, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	from, err := q.Micros("fromUpdatedAt")
	if err != nil {
		return nil, err
	}
	to, err := q.Micros("toUpdatedAt")
	if err != nil {
		return nil, err
	}
	p := httpx.Page{Number: page, Limit: limit}
	summaries, total, err := h.store.ListPrompts(r.Context(), httpx.ProjectID(r), controlplane.PromptFilter{
		Name: q.String("name"), Label: q.String("label"), Tag: q.String("tag"), Version: version,
		UpdatedFrom: optionalTime(from), UpdatedTo: optionalTime(to), Offset: p.Offset(), Limit: p.Limit,
	})
	if err != nil {
		return nil, err
	}
	data := make([]Summary, 0, len(summaries))
	for _, s := range summaries {
		data = append(data, Summary{
			Name: s.Name, Type: s.Type, Versions: s.Versions, Labels: s.Labels, Tags: s.Tags,
			LastUpdatedAt: httpx.FromTime(s.LastUpdatedAt), LastConfig: httpx.JSON(s.LastConfig),
		})
	}
	l := httpx.NewList(data, p, int64(total))
	return List{Data: l.Data, Meta: l.Meta, Pagination: l.Meta}, nil
}

func selector(q httpx.Query) (controlplane.PromptSelector, error) {
	version, err := q.Int("version", 0, 1, math.MaxInt32)
	if err != nil {
		return controlplane.PromptSelector{}, err
	}
	label := q.String("label")
	if version > 0 && label != "" {
		return controlplane.PromptSelector{}, httpx.BadRequest("Invalid query: give either version or label, not both")
	}
	return controlplane.PromptSelector{Version: version, Label: label}, nil
}

// storeError maps the store's error kinds to API errors; name and sel say
// what a 404 did not find.
func storeError(err error, name string, sel controlplane.PromptSelector) error {
	if errors.Is(err, promptcompose.ErrComposition) && !errors.Is(err, controlplane.ErrInvalid) {
		return httpx.BadRequest("%s", err.Error()) // the references, not the store, refused it
	}
	return httpx.StoreErrorAs(err, func(v *httpx.Error) string {
		switch {
		case v.Status == http.StatusNotFound && sel == (controlplane.PromptSelector{}):
			return fmt.Sprintf("Prompt not found: '%s'", name)
		case v.Status == http.StatusNotFound:
			return fmt.Sprintf("Prompt not found: '%s' with %s", name, sel)
		}
		return strings.ReplaceAll(v.Message, controlplane.ErrInvalid.Error()+": ", "")
	})
}

func toPrompt(p controlplane.Prompt) Prompt {
	out := Prompt{
		ID:        p.ID,
		CreatedAt: httpx.FromTime(p.CreatedAt),
		UpdatedAt: httpx.FromTime(p.UpdatedAt),
		ProjectID: p.ProjectID,
		CreatedBy: p.CreatedBy,
		Name:      p.Name,
		Version:   p.Version,
		Type:      p.Type,
		Prompt:    httpx.JSON(p.Prompt),
		Config:    httpx.JSON(p.Config),
		Labels:    p.Labels,
		Tags:      p.Tags,
		IsActive:  slices.Contains(p.Labels, controlplane.LabelProduction),
	}
	if p.CommitMessage != "" {
		out.CommitMessage = &p.CommitMessage
	}
	if g := p.Graph; g != nil {
		out.ResolutionGraph = &ResolutionGraph{Root: ref(g.Root), Dependencies: map[string][]PromptRef{}}
		for parent, children := range g.Dependencies {
			for _, c := range children {
				out.ResolutionGraph.Dependencies[parent] = append(out.ResolutionGraph.Dependencies[parent], ref(c))
			}
		}
	}
	return out
}

// optionalTime converts Unix microseconds, the zero time for 0.
func optionalTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

func ref(n promptcompose.Node) PromptRef {
	return PromptRef{ID: n.ID, Name: n.Name, Version: n.Version}
}
