package playground

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
	"github.com/glassbox-dev/glassbox/internal/llm"
)

// runTimeout bounds one run of one variant.
const runTimeout = 2 * time.Minute

// readForm reads every variant and the variables; a message row with
// neither role nor content is dropped.
func readForm(r *web.Request) (pageData, error) {
	if err := r.ParseForm(); err != nil {
		return pageData{}, web.BadRequest("The form could not be read.")
	}
	f := r.PostForm
	n, _ := strconv.Atoi(f.Get("variants"))
	if n < 1 || n > maxVariants {
		return pageData{}, web.BadRequest("The playground holds 1 to %d variants.", maxVariants)
	}
	d := pageData{PromptName: strings.TrimSpace(f.Get("prompt_name")), Commit: strings.TrimSpace(f.Get("commit"))}
	for i := range n {
		p := "v" + strconv.Itoa(i) + "_"
		v := variant{Connection: f.Get(p + "connection"), Model: strings.TrimSpace(f.Get(p + "model")),
			Temperature: strings.TrimSpace(f.Get(p + "temperature")), MaxTokens: strings.TrimSpace(f.Get(p + "max_tokens")),
			TopP: strings.TrimSpace(f.Get(p + "top_p")), Tools: strings.TrimSpace(f.Get(p + "tools")),
			ResponseFormat: strings.TrimSpace(f.Get(p + "response_format"))}
		rs, cs := f[p+"role"], f[p+"content"]
		for j := range min(len(rs), len(cs), maxMessages) {
			if rs[j] == "" && strings.TrimSpace(cs[j]) == "" {
				continue
			}
			v.Messages = append(v.Messages, controlplane.ChatMessage{Role: rs[j], Content: cs[j]})
		}
		d.Variants = append(d.Variants, v)
	}
	names, values := f["var_name"], f["var_value"]
	for i := range min(len(names), len(values)) {
		d.Variables = append(d.Variables, variable{Name: names[i], Value: values[i]})
	}
	return d, nil
}

// request is the call a variant makes: its messages with the variables
// filled in, its model (else the connection's default) and parameters.
func (d pageData) request(v variant, creds controlplane.LLMCredentials) (llm.Request, error) {
	values := map[string]any{}
	for _, x := range d.Variables {
		values[x.Name] = x.Value
	}
	req := llm.Request{Model: v.Model}
	if req.Model == "" {
		req.Model = creds.DefaultModel
	}
	if req.Model == "" {
		return req, errors.New("name a model: the connection has no default")
	}
	for _, m := range v.Messages {
		if m.Role == "" {
			return req, errors.New("every message needs a role")
		}
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: evaluator.Render(m.Content, values)})
	}
	if len(req.Messages) == 0 {
		return req, errors.New("add a message")
	}
	var err error
	req.Params, err = v.params()
	return req, err
}

// params are the variant's model parameters as the provider takes them.
func (v variant) params() (map[string]any, error) {
	out := map[string]any{}
	for _, p := range []struct{ key, text string }{{"temperature", v.Temperature}, {"max_tokens", v.MaxTokens}, {"top_p", v.TopP}} {
		if p.text == "" {
			continue
		}
		n, err := strconv.ParseFloat(p.text, 64)
		if err != nil {
			return nil, fmt.Errorf("%s must be a number", p.key)
		}
		out[p.key] = n
	}
	for _, p := range []struct{ key, text string }{{"tools", v.Tools}, {"response_format", v.ResponseFormat}} {
		if p.text == "" {
			continue
		}
		var x any
		if err := json.Unmarshal([]byte(p.text), &x); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", p.key, err)
		}
		out[p.key] = x
	}
	return out, nil
}

// endpoint opens the variant's connection.
func (h *handlers) endpoint(ctx context.Context, projectID string, v variant) (llm.Endpoint, controlplane.LLMCredentials, error) {
	if h.llm.Box == nil {
		return llm.Endpoint{}, controlplane.LLMCredentials{}, errors.New("this server has no GLASSBOX_ENCRYPTION_KEY, so it holds no LLM keys")
	}
	creds, err := h.store.LLMCredentials(ctx, h.llm.Box, projectID, v.Connection)
	if err != nil {
		return llm.Endpoint{}, creds, fmt.Errorf("llm connection: %w", err)
	}
	return creds.Endpoint(), creds, nil
}

// submit handles the form without scripts: `op=run` runs every variant
// (unstreamed) and shows the answers, `add`, `remove-N` and `save-N` add
// a variant, drop one, or save one as a prompt version.
func (h *handlers) submit(r *web.Request) error {
	d, err := readForm(r)
	if err != nil {
		return err
	}
	op := r.PostFormValue("op")
	switch {
	case op == "add":
		if len(d.Variants) >= maxVariants {
			d.Error = fmt.Sprintf("At most %d variants.", maxVariants)
			break
		}
		dup := d.Variants[len(d.Variants)-1]
		dup.Messages = append([]controlplane.ChatMessage(nil), dup.Messages...)
		dup.Output, dup.Error, dup.Usage = "", "", ""
		d.Variants = append(d.Variants, dup)
	case strings.HasPrefix(op, "remove-"):
		if i, err := strconv.Atoi(strings.TrimPrefix(op, "remove-")); err == nil && i >= 0 && i < len(d.Variants) && len(d.Variants) > 1 {
			d.Variants = append(d.Variants[:i], d.Variants[i+1:]...)
		}
	case strings.HasPrefix(op, "save-"):
		i, err := strconv.Atoi(strings.TrimPrefix(op, "save-"))
		if err != nil || i < 0 || i >= len(d.Variants) {
			return web.BadRequest("No such variant.")
		}
		p, err := h.save(r, d, d.Variants[i])
		if refusal := web.StoreRefusal(err); refusal != nil {
			d.Error = "Saving failed: " + refusal.Message
			return h.render(r, refusal.Status, d)
		}
		if err != nil {
			return err
		}
		return r.Redirect(r.Path("project", r.Project.ID, "prompts") + "/" + p.Name + "?version=" + strconv.Itoa(p.Version))
	default: // run
		for i := range d.Variants {
			v := &d.Variants[i]
			resp, err := h.run(r.Context(), r.Project.ID, d, *v, nil)
			if err != nil {
				v.Error = err.Error()
				continue
			}
			v.Output, v.Usage = resp.Content, usageText(resp)
		}
	}
	return h.render(r, http.StatusOK, d)
}

// run calls a variant's model; with onText the answer is streamed.
func (h *handlers) run(ctx context.Context, projectID string, d pageData, v variant, onText func(string)) (llm.Response, error) {
	ep, creds, err := h.endpoint(ctx, projectID, v)
	if err != nil {
		return llm.Response{}, err
	}
	req, err := d.request(v, creds)
	if err != nil {
		return llm.Response{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	if onText == nil {
		return h.llm.Client.Complete(ctx, ep, req)
	}
	return h.llm.Client.Stream(ctx, ep, req, onText)
}

func usageText(resp llm.Response) string {
	return fmt.Sprintf("%s · %d in, %d out tokens", resp.Model, resp.Usage.Input, resp.Usage.Output)
}

// stream runs one variant (`variant=`) and writes its answer as plain text
// while it arrives, for the page's script to show. A refusal before the
// first piece is a 4xx or 502 with the reason; a failure after it ends
// the text with the reason.
func (h *handlers) stream(r *web.Request) error {
	d, err := readForm(r)
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(r.URL.Query().Get("variant"))
	if err != nil || i < 0 || i >= len(d.Variants) {
		return web.BadRequest("No such variant.")
	}
	w := r.Writer()
	flusher, _ := w.(http.Flusher)
	started := false
	resp, err := h.run(r.Context(), r.Project.ID, d, d.Variants[i], func(piece string) {
		if !started {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		_, _ = w.Write([]byte(piece))
		if flusher != nil {
			flusher.Flush()
		}
	})
	switch {
	case err != nil && !started:
		// The page's script shows the body as the variant's error.
		status, msg := http.StatusBadRequest, err.Error()
		var se *llm.StatusError
		if errors.As(err, &se) {
			status, msg = http.StatusBadGateway, "The provider refused: "+se.Error()
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg))
		return nil
	case err != nil:
		_, _ = w.Write([]byte("\n[the answer broke off: " + err.Error() + "]"))
	case !started:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
	}
	// The usage follows the answer in a trailer-like last line the script
	// moves out of the text.
	_, _ = w.Write([]byte("\n\u0000" + usageText(resp)))
	return nil
}

// save stores a variant as the next version of the named prompt: its
// messages with their {{variables}}, and its model and parameters as the
// config. No label is set; moving production stays a deliberate act.
func (h *handlers) save(r *web.Request, d pageData, v variant) (controlplane.Prompt, error) {
	if d.PromptName == "" {
		return controlplane.Prompt{}, fmt.Errorf("%w: name the prompt to save to", controlplane.ErrInvalid)
	}
	cfg, err := v.params()
	if err != nil {
		return controlplane.Prompt{}, fmt.Errorf("%w: %w", controlplane.ErrInvalid, err)
	}
	if v.Model != "" {
		cfg["model"] = v.Model
	}
	msgs, _ := json.Marshal(v.Messages)
	config, _ := json.Marshal(cfg)
	return h.store.CreatePrompt(r.Context(), r.Project.ID, controlplane.NewPrompt{Name: d.PromptName, Type: controlplane.PromptChat,
		Prompt: msgs, Config: config, CommitMessage: d.Commit, CreatedBy: r.User.Email})
}
