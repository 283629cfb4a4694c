package prompts

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

// editorForm is the new-version form as the person filled it in.
type editorForm struct {
	Name, Type, Text, Config, Labels, Tags, Commit string
	Messages                                       []controlplane.ChatMessage
	// Existing is set when the name has versions: its type is fixed.
	Existing bool
	// Base is the version the form started from, 0 for a new prompt.
	Base int
}

type editorData struct {
	Form editorForm
	// Variables and Placeholders are what the content asks for at compile
	// time; Preview is the content with its references resolved.
	Variables    []string
	Placeholders []string
	Preview      *content
	Error        string
	Roles        []string
}

// blankMessages are the empty rows under a chat prompt's messages, for
// adding messages without scripts; a preview adds more.
const blankMessages = 2

var messageRoles = []string{"system", "user", "assistant", "placeholder"}

// editor opens the form: for `name=` prefilled from `version=` (else the
// latest version), else empty for a new prompt.
func (h *handlers) editor(r *web.Request) error {
	q := r.URL.Query()
	f := editorForm{Type: controlplane.PromptText, Config: "{}"}
	if q.Get("type") == controlplane.PromptChat {
		f.Type = controlplane.PromptChat
	}
	if name := q.Get("name"); name != "" {
		sel := controlplane.PromptSelector{Label: controlplane.LabelLatest}
		if v, err := strconv.Atoi(q.Get("version")); err == nil && v > 0 {
			sel = controlplane.PromptSelector{Version: v}
		}
		p, err := h.store.GetPrompt(r.Context(), r.Project.ID, name, sel)
		if errors.Is(err, controlplane.ErrNotFound) {
			return &web.Error{Status: http.StatusNotFound, Message: "This project has no prompt " + name + " with that version."}
		}
		if err != nil {
			return err
		}
		c := contentOf(p)
		f = editorForm{Name: p.Name, Type: p.Type, Text: c.Text, Messages: c.Messages, Config: string(p.Config),
			Tags: strings.Join(p.Tags, ", "), Existing: true, Base: p.Version}
	}
	return h.renderEditor(r, http.StatusOK, f, nil, nil)
}

// save previews the form (`op=preview`: variables, placeholders, references
// resolved, every check of a save) or stores it as the next version.
func (h *handlers) save(r *web.Request) error {
	f := readEditorForm(r)
	np := controlplane.NewPrompt{Name: f.Name, Type: f.Type, Config: json.RawMessage(f.Config), CommitMessage: f.Commit,
		Labels: splitList(f.Labels), Tags: splitList(f.Tags), CreatedBy: r.User.Email}
	if f.Type == controlplane.PromptChat {
		np.Prompt, _ = json.Marshal(f.Messages)
	} else {
		np.Prompt, _ = json.Marshal(f.Text)
	}
	if strings.TrimSpace(f.Config) == "" {
		np.Config = nil
	}
	for _, l := range np.Labels {
		if !r.Can(access.PromptLabelAction(l)) {
			return h.renderEditor(r, http.StatusForbidden, f, nil, protected(l))
		}
	}
	if r.PostFormValue("op") == "preview" {
		p, err := h.store.PreviewPrompt(r.Context(), r.Project.ID, np)
		if err != nil {
			return h.renderEditor(r, http.StatusBadRequest, f, nil, err)
		}
		return h.renderEditor(r, http.StatusOK, f, &p, nil)
	}
	p, err := h.store.CreatePrompt(r.Context(), r.Project.ID, np)
	if err != nil {
		return h.renderEditor(r, http.StatusBadRequest, f, nil, err)
	}
	return r.Redirect(h.promptPath(r, p.Name) + "?version=" + strconv.Itoa(p.Version))
}

func readEditorForm(r *web.Request) editorForm {
	f := editorForm{Name: strings.TrimSpace(r.PostFormValue("name")), Type: r.PostFormValue("type"), Text: r.PostFormValue("text"),
		Config: r.PostFormValue("config"), Labels: r.PostFormValue("labels"), Tags: r.PostFormValue("tags"),
		Commit: strings.TrimSpace(r.PostFormValue("commit")), Existing: r.PostFormValue("existing") == "1"}
	f.Base, _ = strconv.Atoi(r.PostFormValue("base"))
	roles, contents := r.PostForm["role"], r.PostForm["content"]
	for i := range min(len(roles), len(contents)) {
		role, body := strings.TrimSpace(roles[i]), contents[i]
		switch {
		case role == "placeholder":
			f.Messages = append(f.Messages, controlplane.ChatMessage{Type: "placeholder", Name: strings.TrimSpace(body)})
		case role != "" || strings.TrimSpace(body) != "":
			f.Messages = append(f.Messages, controlplane.ChatMessage{Role: role, Content: body})
		}
	}
	return f
}

// renderEditor shows the form with what a preview found, or with the error
// that stopped a preview or a save.
func (h *handlers) renderEditor(r *web.Request, status int, f editorForm, preview *controlplane.Prompt, failure error) error {
	d := editorData{Form: f, Roles: messageRoles}
	for range blankMessages {
		d.Form.Messages = append(d.Form.Messages, controlplane.ChatMessage{})
	}
	texts := []string{f.Text}
	if f.Type == controlplane.PromptChat {
		texts = texts[:0]
		for _, m := range f.Messages {
			if m.Type == "placeholder" {
				d.Placeholders = append(d.Placeholders, m.Name)
			}
			texts = append(texts, m.Content)
		}
	}
	for _, t := range texts {
		for _, v := range controlplane.PromptVariables(t) {
			if !slices.Contains(d.Variables, v) {
				d.Variables = append(d.Variables, v)
			}
		}
	}
	if preview != nil {
		c := contentOf(*preview)
		d.Preview = &c
	}
	var we *web.Error
	switch {
	case failure == nil:
	case errors.As(failure, &we):
		d.Error = we.Message
	case errors.Is(failure, controlplane.ErrInvalid), errors.Is(failure, promptcompose.ErrComposition):
		d.Error = strings.TrimPrefix(failure.Error(), controlplane.ErrInvalid.Error()+": ")
	default:
		return failure
	}
	return r.RenderStatus(status, h.t, "editor", d)
}

// splitList reads a comma-separated field; an empty field is an empty list,
// so clearing the tags removes them.
func splitList(s string) []string {
	out := []string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
