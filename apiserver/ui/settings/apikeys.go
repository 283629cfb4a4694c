package settings

import (
	"errors"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

type apiKeysData struct {
	Tabs []web.Tab
	Keys []controlplane.APIKey
	// New is the key just created: its secret is shown this once.
	New       *controlplane.APIKey
	NewSecret string
	BaseURL   string
	Error     string
}

func (h *handlers) apiKeysData(r *web.Request) (*apiKeysData, error) {
	keys, err := h.store.ListAPIKeys(r.Context(), r.Org.ID, r.Project.ID)
	if err != nil {
		return nil, err
	}
	return &apiKeysData{Tabs: tabs(r, "api-keys"), Keys: keys, BaseURL: r.App().Config().PublicURL}, nil
}

func (h *handlers) apiKeys(r *web.Request) error {
	d, err := h.apiKeysData(r)
	if err != nil {
		return err
	}
	return r.Render(h.t, "apikeys", d)
}

// createAPIKey shows the new secret once, in the page that answers the post;
// it is never shown again (only its hash is stored).
func (h *handlers) createAPIKey(r *web.Request) error {
	note := strings.TrimSpace(r.PostFormValue("note"))
	if len(note) > 255 {
		note = note[:255]
	}
	k, secret, err := h.store.CreateAPIKey(r.Context(), r.Org.ID, r.Project.ID, controlplane.NewAPIKey{Note: note})
	if err != nil {
		return err
	}
	d, err := h.apiKeysData(r)
	if err != nil {
		return err
	}
	d.New, d.NewSecret = &k, secret
	r.Writer().Header().Set("Cache-Control", "no-store")
	return r.Render(h.t, "apikeys", d)
}

func (h *handlers) revokeAPIKey(r *web.Request) error {
	err := h.store.RevokeAPIKey(r.Context(), r.Org.ID, r.Project.ID, r.PathValue("keyId"))
	if errors.Is(err, controlplane.ErrNotFound) {
		return web.ErrNotFound
	}
	if err != nil {
		return err
	}
	return r.Redirect(r.Path("project", r.Project.ID, "settings", "api-keys"))
}
