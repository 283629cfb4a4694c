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
	ID               string `json:"id"`
	Provider         string `json:"provider"`
	Adapter          string `json:"adapter"`
	DisplaySecretKey string `json:"displaySecretKey"`
	// BaseURL is null where the config decides the host (Bedrock's region,
	// Vertex AI's location).
	BaseURL           *string  `json:"baseURL"`
	CustomModels      []string `json:"customModels"`
	WithDefaultModels bool     `json:"withDefaultModels"`
	ExtraHeaderKeys   []string `json:"extraHeaderKeys"`
	// Config is the adapter's settings, null when it has none.
	Config         httpx.JSON      `json:"config"`
	CreatedAt      httpx.Timestamp `json:"createdAt"`
	UpdatedAt      httpx.Timestamp `json:"updatedAt"`
	DefaultModel   string          `json:"defaultModel"`
	DefaultParams  httpx.JSON      `json:"defaultParams"`
	MaxConcurrency int             `json:"maxConcurrency"`
	TimeoutMS      int64           `json:"timeoutMs"`
}

// LLMConnectionRequest is the body of PUT /api/public/llm-connections: an
// upsert by provider name. The secret key is required when the connection
// is new; omitted fields keep their values.
type LLMConnectionRequest struct {
	// Provider names the connection within the project.
	Provider string `json:"provider"`
	// Adapter is "openai" (any OpenAI-compatible server), "anthropic",
	// "azure", "bedrock", "google-vertex-ai" or "google-ai-studio".
	Adapter string `json:"adapter,omitempty"`
	// SecretKey is the API key; for bedrock the JSON object
	// {"accessKeyId", "secretAccessKey", "sessionToken"?}, for
	// google-vertex-ai a service account key file (JSON).
	SecretKey string `json:"secretKey,omitempty"`
	// BaseURL defaults to the provider's public API (for bedrock and
	// google-vertex-ai, the one of the config's region or location); azure
	// requires it.
	BaseURL      string   `json:"baseURL,omitempty"`
	CustomModels []string `json:"customModels,omitempty"`
	// WithDefaultModels offers the adapter's well-known models besides the
	// custom ones; true for a new connection.
	WithDefaultModels *bool             `json:"withDefaultModels,omitempty"`
	ExtraHeaders      map[string]string `json:"extraHeaders,omitempty"`
	// Config is the adapter's settings: bedrock {"region"} (required),
	// openai {"useResponsesApi"}, google-vertex-ai {"location"}, azure
	// {"apiVersion"}; other keys are refused. Omitted keeps the stored
	// settings (or clears them when the adapter changes).
	Config httpx.JSON `json:"config,omitempty"`
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
				Response: LLMConnection{}, Summary: "Create or update the LLM connection named by provider; the key is stored encrypted, bound to the adapter, base URL and the config's region or location, and never returned. Changing any of them or extraHeaders takes secretKey (and stored extraHeaders) again."},
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
	config := json.RawMessage(req.Config)
	if string(config) == "null" {
		config = json.RawMessage(`{}`) // Langfuse's way to say "none"
	}
	// Every host a new key will be sent to is held against the policy when
	// it is saved (calls are checked again, since the policy may change).
	cn, err := h.store.UpsertLLMConnection(r.Context(), h.box, httpx.ProjectID(r), controlplane.LLMConnectionUpsert{
		Provider: req.Provider, Adapter: req.Adapter, SecretKey: req.SecretKey, BaseURL: req.BaseURL,
		ExtraHeaders: req.ExtraHeaders, CustomModels: req.CustomModels, DefaultModel: req.DefaultModel,
		DefaultParams: json.RawMessage(req.DefaultParams), MaxConcurrency: req.MaxConcurrency,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Config: config, WithDefaultModels: req.WithDefaultModels,
		CheckURL: h.llmHosts.CheckURL,
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
	var baseURL *string
	if cn.BaseURL != "" {
		baseURL = &cn.BaseURL
	}
	var config httpx.JSON
	if string(cn.Config) != "{}" && len(cn.Config) > 0 {
		config = httpx.JSON(cn.Config)
	}
	return LLMConnection{
		ID: cn.ID, Provider: cn.Provider, Adapter: cn.Adapter, DisplaySecretKey: cn.DisplaySecret, BaseURL: baseURL,
		CustomModels: httpx.NonNil(cn.CustomModels), WithDefaultModels: cn.WithDefaultModels, Config: config,
		ExtraHeaderKeys: httpx.NonNil(cn.HeaderKeys),
		CreatedAt:       httpx.FromTime(cn.CreatedAt), UpdatedAt: httpx.FromTime(cn.UpdatedAt),
		DefaultModel: cn.DefaultModel, DefaultParams: httpx.JSON(cn.DefaultParams), MaxConcurrency: cn.MaxConcurrency,
		TimeoutMS: cn.Timeout.Milliseconds(),
	}
}
