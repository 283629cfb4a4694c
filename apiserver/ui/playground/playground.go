// Package playground serves the playground: several variants of a chat
// (messages, model and parameters, tools and response format) run side by
// side against the project's LLM connections with their answers streamed,
// variables shared by the variants, and a variant saved as a prompt
// version. It opens from a prompt version or from any generation.
package playground // import "github.com/glassbox-dev/glassbox/apiserver/ui/playground"

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

//go:embed *.html
var pages embed.FS

// Store reads connections and prompts and saves versions;
// *controlplane.Store implements it.
type Store interface {
	ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]controlplane.LLMConnection, int, error)
	LLMCredentials(ctx context.Context, box *secretbox.Box, projectID, id string) (controlplane.LLMCredentials, error)
	GetPrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	CreatePrompt(ctx context.Context, projectID string, np controlplane.NewPrompt) (controlplane.Prompt, error)
}

// Traces reads the generation a playground opens from; *chstore.Store
// implements it.
type Traces interface {
	GetTraceObservation(ctx context.Context, projectID, traceID, observationID string) (chstore.Observation, error)
}

// LLM is how the playground calls providers: the box that opens the keys
// and a client bound to the operator's host policy.
type LLM struct {
	Box    *secretbox.Box
	Client *llm.Client
}

type handlers struct {
	store  Store
	traces Traces
	llm    LLM
	t      *web.Templates
}

// Routes registers the playground and its sidebar entry.
func Routes(app *web.App, store Store, traces Traces, l LLM) error {
	t, err := app.Parse(pages, "playground.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, traces: traces, llm: l, t: t}
	app.AddNav(web.NavItem{Section: "Prompt management", Label: "Playground", Path: "playground", Action: access.ProjectRead, Order: 210})
	base := "/project/{projectId}/playground"
	return app.Handle(
		web.Route{Method: http.MethodGet, Path: base, Access: web.InProject, Action: access.ProjectRead, Handler: h.page},
		// Runs cost money and saves change prompts: prompt editors only.
		web.Route{Method: http.MethodPost, Path: base, Access: web.InProject, Action: access.PromptsWrite, Handler: h.submit},
		web.Route{Method: http.MethodPost, Path: base + "/stream", Access: web.InProject, Action: access.PromptsWrite, Handler: h.stream},
	)
}

// Limits of one playground.
const (
	maxVariants    = 4
	maxMessages    = 30
	blankMessages  = 1
	maxConnections = 100
)

// variant is one column: a chat and how to run it, with its last answer.
type variant struct {
	Messages                     []controlplane.ChatMessage
	Connection, Model            string
	Temperature, MaxTokens, TopP string
	// Tools and ResponseFormat are JSON, as the OpenAI API takes them.
	Tools, ResponseFormat string
	Output, Error, Usage  string
}

type variable struct{ Name, Value string }

type pageData struct {
	Variants    []variant
	Variables   []variable
	Connections []controlplane.LLMConnection
	Roles       []string
	// PromptName and Commit fill the save form.
	PromptName, Commit string
	Error              string
	// From says where the playground was opened from.
	From string
}

var roles = []string{"system", "user", "assistant"}

// page opens the playground: empty, from a prompt version (`prompt=`,
// `version=`), or from a generation (`trace=`, `observation=`).
func (h *handlers) page(r *web.Request) error {
	q := r.URL.Query()
	v := variant{Messages: []controlplane.ChatMessage{{Role: "system", Content: "You are a helpful assistant."}, {Role: "user", Content: ""}}}
	d := pageData{}
	switch {
	case q.Get("prompt") != "":
		sel := controlplane.PromptSelector{Label: controlplane.LabelLatest}
		if n, err := strconv.Atoi(q.Get("version")); err == nil && n > 0 {
			sel = controlplane.PromptSelector{Version: n}
		}
		p, err := h.store.GetPrompt(r.Context(), r.Project.ID, q.Get("prompt"), sel)
		if errors.Is(err, controlplane.ErrNotFound) {
			return web.ErrNotFound
		}
		if err != nil {
			return err
		}
		v = fromPrompt(p)
		d.PromptName, d.From = p.Name, fmt.Sprintf("prompt %s v%d", p.Name, p.Version)
	case q.Get("observation") != "":
		o, err := h.traces.GetTraceObservation(r.Context(), r.Project.ID, q.Get("trace"), q.Get("observation"))
		if errors.Is(err, chstore.ErrNotFound) {
			return web.ErrNotFound
		}
		if err != nil {
			return err
		}
		v = fromGeneration(o)
		d.PromptName, d.From = o.PromptName, "generation "+o.Name
	}
	d.Variants = []variant{v}
	return h.render(r, http.StatusOK, d)
}

// fromPrompt is a variant holding a prompt version: its messages (a text
// prompt as one user message) and its config's model and parameters.
func fromPrompt(p controlplane.Prompt) variant {
	v := variant{}
	if p.Type == controlplane.PromptChat {
		_ = json.Unmarshal(p.Prompt, &v.Messages)
	} else {
		var text string
		_ = json.Unmarshal(p.Prompt, &text)
		v.Messages = []controlplane.ChatMessage{{Role: "user", Content: text}}
	}
	applyParams(&v, p.Config)
	return v
}

// fromGeneration is a variant holding what a generation sent: its input
// messages (text parts of multi-part content joined), model and
// parameters.
func fromGeneration(o chstore.Observation) variant {
	v := variant{Model: o.Model}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(o.Input), &msgs) == nil && len(msgs) > 0 {
		for _, m := range msgs {
			if m.Role == "" {
				continue
			}
			v.Messages = append(v.Messages, controlplane.ChatMessage{Role: m.Role, Content: contentText(m.Content)})
		}
	} else {
		v.Messages = []controlplane.ChatMessage{{Role: "user", Content: o.Input}}
	}
	applyParams(&v, json.RawMessage(o.ModelParameters))
	if v.Model == "" {
		v.Model = o.Model
	}
	return v
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &parts) == nil {
		var texts []string
		for _, p := range parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return string(raw)
}

// applyParams reads a prompt config or a generation's model parameters.
func applyParams(v *variant, raw json.RawMessage) {
	var cfg map[string]any
	if json.Unmarshal(raw, &cfg) != nil {
		return
	}
	text := func(key string) string {
		switch x := cfg[key].(type) {
		case nil:
			return ""
		case string:
			return x
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		default:
			b, _ := json.Marshal(x)
			return string(b)
		}
	}
	if m := text("model"); m != "" {
		v.Model = m
	}
	v.Temperature, v.MaxTokens, v.TopP = text("temperature"), text("max_tokens"), text("top_p")
	v.Tools, v.ResponseFormat = text("tools"), text("response_format")
}

func (h *handlers) render(r *web.Request, status int, d pageData) error {
	cs, _, err := h.store.ListLLMConnections(r.Context(), r.Project.ID, 0, maxConnections)
	if err != nil {
		return err
	}
	d.Connections, d.Roles = cs, roles
	// The variables are those the messages use, keeping typed values.
	typed := map[string]string{}
	for _, v := range d.Variables {
		typed[v.Name] = v.Value
	}
	d.Variables = nil
	for i := range d.Variants {
		for _, m := range d.Variants[i].Messages {
			for _, name := range controlplane.PromptVariables(m.Content) {
				if !slices.ContainsFunc(d.Variables, func(v variable) bool { return v.Name == name }) {
					d.Variables = append(d.Variables, variable{Name: name, Value: typed[name]})
				}
			}
		}
		for range blankMessages {
			d.Variants[i].Messages = append(d.Variants[i].Messages, controlplane.ChatMessage{})
		}
		if d.Variants[i].Connection == "" && len(cs) > 0 {
			d.Variants[i].Connection = cs[0].ID
		}
	}
	return r.RenderStatus(status, h.t, "playground", d)
}
