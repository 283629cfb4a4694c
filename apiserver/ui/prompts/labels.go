package prompts

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// addLabel puts a label on a version, taking it off the version that had
// it: how a version is promoted to staging or production.
func (h *handlers) addLabel(r *web.Request) error {
	name := r.PostFormValue("name")
	label := strings.TrimSpace(r.PostFormValue("label"))
	v, err := strconv.Atoi(r.PostFormValue("version"))
	if err != nil || v <= 0 {
		return &web.Error{Status: http.StatusBadRequest, Message: "The form names no version."}
	}
	if !r.Can(access.PromptLabelAction(label)) {
		return protected(label)
	}
	_, err = h.store.SetPromptLabels(r.Context(), r.Project.ID, name, v, []string{label})
	if err := labelError(err); err != nil {
		return err
	}
	return r.Redirect(h.promptPath(r, name) + "?version=" + strconv.Itoa(v))
}

// removeLabel takes a label off the version that has it.
func (h *handlers) removeLabel(r *web.Request) error {
	name := r.PostFormValue("name")
	label := r.PostFormValue("label")
	if !r.Can(access.PromptLabelAction(label)) {
		return protected(label)
	}
	if err := labelError(h.store.RemovePromptLabel(r.Context(), r.Project.ID, name, label)); err != nil {
		return err
	}
	back := h.promptPath(r, name)
	if v, err := strconv.Atoi(r.PostFormValue("version")); err == nil && v > 0 {
		back += "?version=" + strconv.Itoa(v)
	}
	return r.Redirect(back)
}

func protected(label string) error {
	return &web.Error{Status: http.StatusForbidden,
		Message: "Only admins and owners move the " + label + " label: it decides what applications fetch by default."}
}

func labelError(err error) error {
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return &web.Error{Status: http.StatusNotFound, Message: "That prompt version or label does not exist."}
	case errors.Is(err, controlplane.ErrInvalid):
		return &web.Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), controlplane.ErrInvalid.Error()+": ")}
	}
	return err
}
