package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// LLMConnection is a connection as listed: the secret key only in display
// form, the extra headers only by name. The first fields are Langfuse's.
type LLMConnection struct {
	ID               string          `json:"id"`
	Provider         string          `json:"provider"`
	Adapter          string          `json:"adapter"`
	DisplaySecretKey string          `json:"displaySecretKey"`
	BaseURL          string          `json:"baseURL"`
	CustomModels     []string        `json:"customModels"`
	ExtraHeaderKeys  []string        `json:"extraHeaderKeys"`
	CreatedAt        httpx.Timestamp `json:"createdAt"`
	UpdatedAt        httpx.Timestamp `json:"updatedAt"`
	DefaultModel     string          `json:"defaultModel"`
	DefaultParams    httpx.JSON      `json:"defaultParams"`
	MaxConcurrency   int             `json:"maxConcurrency"`
	TimeoutMS        int64           `json:"timeoutMs"`
}

// LLMConnectionRequest is the body of PUT /api/public/llm-connections: an
// upsert by provider name. The secret key is required when the connection
// is new; omitted fields keep their values.
type LLMConnectionRequest struct {
	// Provider names the connection within the project.
	Provider string `json:"provider"`
	// Adapter is "openai" (any OpenAI-compatible server) or "anthropic".
	Adapter   string `json:"adapter,omitempty"`
	SecretKey string `json:"secretKey,omitempty"`
	// BaseURL defaults to the provider's public API.
	BaseURL      string            `json:"baseURL,omitempty"`
	CustomModels []string          `json:"customModels,omitempty"`
	ExtraHeaders map[string]string `json:"extraHeaders,omitempty"`
	// DefaultModel and DefaultParams are used where an evaluator or an
	// experiment names none.
	DefaultModel  *string    `json:"defaultModel,omitempty"`
	DefaultParams httpx.JSON `json:"defaultParams,omitempty"`
	// MaxConcurrency bounds the calls in flight per API server process.
	MaxConcurrency int   `json:"maxConcurrency,omitempty"`
	TimeoutMS      int64 `json:"timeoutMs,omitempty"`
}

func (h handlers) connectionRoutes() []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/llm-connections", Access: httpx.ProjectKey, Handler: h.listConnections,
			Doc: httpx.Doc{OperationID: "llmConnections_list", Tag: "LlmConnections", Query: httpx.PageParams,
				Response: httpx.List[LLMConnection]{}, Summary: "The project's LLM connections, by provider name."},
		},
		{
			Method: http.MethodPut, Path: "/api/public/llm-connections", Access: httpx.ProjectKey, Handler: h.upsertConnection,
			Doc: httpx.Doc{OperationID: "llmConnections_upsert", Tag: "LlmConnections", Body: LLMConnectionRequest{},
				Response: LLMConnection{}, Summary: "Create or update the LLM connection named by provider; the key is stored encrypted, bound to the adapter and base URL, and never returned. Changing the adapter, baseURL or extraHeaders takes secretKey (and stored extraHeaders) again."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/llm-connections/{id}", Access: httpx.ProjectKey, Handler: h.getConnection,
			Doc: httpx.Doc{OperationID: "llmConnections_get", Tag: "LlmConnections", Response: LLMConnection{},
				Summary: "One LLM connection."},
		},
		{
			Method: http.MethodDelete, Path: "/api/public/llm-connections/{id}", Access: httpx.ProjectKey, Handler: h.deleteConnection,
			Doc: httpx.Doc{OperationID: "llmConnections_delete", Tag: "LlmConnections", Response: Deletion{},
				Summary: "Delete an LLM connection that no rule or experiment uses."},
		},
	}
}

func (h handlers) listConnections(r *http.Request) (any, error) {
	return httpx.ProjectList(r, h.store.ListLLMConnections, toConnection)
}

func (h handlers) upsertConnection(r *http.Request) (any, error) {
	var req LLMConnectionRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	// An omitted base URL is the provider's public API or the one saved
	// before; calls are checked again, since the policy may change.
	if req.BaseURL != "" {
		if err := h.llmHosts.CheckURL(req.BaseURL); err != nil {
			return nil, httpx.BadRequest("Invalid baseURL: %v", err)
		}
	}
	cn, err := h.store.UpsertLLMConnection(r.Context(), h.box, httpx.ProjectID(r), controlplane.LLMConnectionUpsert{
		Provider: req.Provider, Adapter: req.Adapter, SecretKey: req.SecretKey, BaseURL: req.BaseURL,
		ExtraHeaders: req.ExtraHeaders, CustomModels: req.CustomModels, DefaultModel: req.DefaultModel,
		DefaultParams: json.RawMessage(req.DefaultParams), MaxConcurrency: req.MaxConcurrency,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		return nil, storeError(err)
	}
	return toConnection(cn), nil
}

func (h handlers) getConnection(r *http.Request) (any, error) {
	cn, err := h.store.GetLLMConnection(r.Context(), httpx.ProjectID(r), r.PathValue("id"))
	if err != nil {
		return nil, storeError(err)
	}
	return toConnection(cn), nil
}

func (h handlers) deleteConnection(r *http.Request) (any, error) {
	if err := h.store.DeleteLLMConnection(r.Context(), httpx.ProjectID(r), r.PathValue("id")); err != nil {
		return nil, storeError(err)
	}
	return Deletion{Success: true, Message: "LLM connection deleted"}, nil
}

func toConnection(cn controlplane.LLMConnection) LLMConnection {
	return LLMConnection{
		ID: cn.ID, Provider: cn.Provider, Adapter: cn.Adapter, DisplaySecretKey: cn.DisplaySecret, BaseURL: cn.BaseURL,
		CustomModels: httpx.NonNil(cn.CustomModels), ExtraHeaderKeys: httpx.NonNil(cn.HeaderKeys),
		CreatedAt: httpx.FromTime(cn.CreatedAt), UpdatedAt: httpx.FromTime(cn.UpdatedAt),
		DefaultModel: cn.DefaultModel, DefaultParams: httpx.JSON(cn.DefaultParams), MaxConcurrency: cn.MaxConcurrency,
		TimeoutMS: cn.Timeout.Milliseconds(),
	}
}
