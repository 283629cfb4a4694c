package settings

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// LLM is what the LLM connections tab needs beyond the store: the box that
// seals keys (nil when GLASSBOX_ENCRYPTION_KEY is unset), the operator's
// policy of hosts the server may call, and a client bound to it.
type LLM struct {
	Box    *secretbox.Box
	Hosts  interface{ CheckURL(raw string) error }
	Client *llm.Client
}

type llmData struct {
	formState
	Tabs        []web.Tab
	Connections []controlplane.LLMConnection
	Form        llmForm
	// Sealed is false when the server has no encryption key to store keys.
	Sealed bool
	// Tested is the result of the last connection test.
	Tested   *llmTest
	Adapters []string
}

type llmForm struct{ Provider, Adapter, BaseURL, Config, DefaultModel string }

type llmTest struct {
	Provider string
	OK       bool
	Message  string
}

func (h *handlers) llmData(r *web.Request) (*llmData, error) {
	cs, _, err := h.store.ListLLMConnections(r.Context(), r.Project.ID, 0, maxScoreConfigs)
	if err != nil {
		return nil, err
	}
	return &llmData{Tabs: tabs(r, "llm-connections"), Connections: cs, Sealed: h.llm.Box != nil,
		Form: llmForm{Adapter: controlplane.AdapterOpenAI}, Adapters: llm.Adapters()}, nil
}

// llmConnections lists the project's LLM connections, their keys only in
// display form.
func (h *handlers) llmConnections(r *web.Request) error {
	d, err := h.llmData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "llm", d)
}

// saveLLMConnection adds a connection (or replaces one of the same name);
// the key is sealed and never shown again.
func (h *handlers) saveLLMConnection(r *web.Request) error {
	f := llmForm{Provider: strings.TrimSpace(r.PostFormValue("provider")), Adapter: r.PostFormValue("adapter"),
		BaseURL: strings.TrimSpace(r.PostFormValue("base_url")), Config: strings.TrimSpace(r.PostFormValue("config")),
		DefaultModel: strings.TrimSpace(r.PostFormValue("default_model"))}
	secret := strings.TrimSpace(r.PostFormValue("secret_key"))
	var config json.RawMessage
	if f.Config != "" {
		config = json.RawMessage(f.Config)
	}
	var err error
	if h.llm.Box == nil {
		err = errors.Join(controlplane.ErrInvalid, errors.New("this server has no GLASSBOX_ENCRYPTION_KEY, so it cannot store keys"))
	} else {
		// The store holds every host the key will go to against the
		// operator's policy, as the API does.
		_, err = h.store.UpsertLLMConnection(r.Context(), h.llm.Box, r.Project.ID, controlplane.LLMConnectionUpsert{Provider: f.Provider,
			Adapter: f.Adapter, SecretKey: secret, BaseURL: f.BaseURL, Config: config, DefaultModel: &f.DefaultModel,
			CheckURL: h.llm.Hosts.CheckURL})
		if err == nil {
			return r.Redirect(r.Path("project", r.Project.ID, "settings", "llm-connections"))
		}
	}
	return failed(h, r, err, "llm", func(r *web.Request) (*llmData, error) {
		d, err := h.llmData(r)
		if d != nil {
			d.Form = f
		}
		return d, err
	})
}

// testTimeout bounds a connection test.
const testTimeout = 20 * time.Second

// testLLMConnection sends the provider a one-word question with the stored
// key, to show whether the key, the URL and the model work.
func (h *handlers) testLLMConnection(r *web.Request) error {
	d, err := h.llmData(r)
	if err != nil {
		return err
	}
	if h.llm.Box == nil {
		return web.BadRequest("This server has no GLASSBOX_ENCRYPTION_KEY, so it holds no keys to test.")
	}
	creds, err := h.store.LLMCredentials(r.Context(), h.llm.Box, r.Project.ID, r.PathValue("connectionId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	d.Tested = &llmTest{Provider: creds.Provider}
	ctx, cancel := context.WithTimeout(r.Context(), testTimeout)
	defer cancel()
	resp, err := h.llm.Client.Complete(ctx, creds.Endpoint(),
		llm.Request{Model: creds.DefaultModel, Messages: []llm.Message{{Role: "user", Content: "Reply with the word OK."}},
			Params: map[string]any{"max_tokens": 5}})
	if err != nil {
		d.Tested.Message = err.Error()
	} else {
		d.Tested.OK, d.Tested.Message = true, web.Truncate(200, resp.Content)
	}
	return r.Render(h.t, "llm", d)
}

func (h *handlers) deleteLLMConnection(r *web.Request) error {
	err := h.store.DeleteLLMConnection(r.Context(), r.Project.ID, r.PathValue("connectionId"))
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return web.ErrNotFound
	case errors.Is(err, controlplane.ErrConflict):
		return failed(h, r, err, "llm", h.llmData)
	case err != nil:
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "llm-connections"))
}
