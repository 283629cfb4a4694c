// Package settings serves the organization and project settings pages:
// projects, members and roles, API keys, model prices, score configs, LLM
// connections, automations, sampling and retention, and usage.
package settings // import "github.com/glassbox-dev/glassbox/apiserver/ui/settings"

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/ui/web"
	"github.com/glassbox-dev/glassbox/internal/access"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/sampling"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

//go:embed *.html
var pages embed.FS

// Store is what the settings pages read and write.
type Store interface {
	GetOrganization(ctx context.Context, orgID string) (controlplane.Organization, error)
	UpdateOrganization(ctx context.Context, orgID string, u controlplane.OrganizationUpdate) (controlplane.Organization, error)
	ListProjects(ctx context.Context, orgID string) ([]controlplane.Project, error)
	CreateProject(ctx context.Context, orgID string, p controlplane.NewProject) (controlplane.Project, error)
	UpdateProject(ctx context.Context, orgID, projectID string, u controlplane.ProjectUpdate) (controlplane.Project, error)
	DeleteProject(ctx context.Context, orgID, projectID string) error

	ListMembers(ctx context.Context, orgID string) ([]controlplane.Membership, error)
	GetMembership(ctx context.Context, orgID, userID string) (controlplane.Membership, error)
	InviteMember(ctx context.Context, orgID, email, name string, role controlplane.Role) (controlplane.User, bool, error)
	CreateInviteLink(ctx context.Context, userID string, ttl time.Duration) (string, error)
	SetMembership(ctx context.Context, orgID, userID string, role controlplane.Role) error
	RemoveMembership(ctx context.Context, orgID, userID string) error
	SetProjectRole(ctx context.Context, orgID, projectID, userID string, role controlplane.Role) error
	RemoveProjectRole(ctx context.Context, orgID, projectID, userID string) error

	CreateAPIKey(ctx context.Context, orgID, projectID string, k controlplane.NewAPIKey) (controlplane.APIKey, string, error)
	ListAPIKeys(ctx context.Context, orgID, projectID string) ([]controlplane.APIKey, error)
	RevokeAPIKey(ctx context.Context, orgID, projectID, keyID string) error

	GetSampling(ctx context.Context, projectID string) (sampling.Rates, error)
	SetSampling(ctx context.Context, projectID string, r sampling.Rates) (sampling.Rates, error)

	CreateModel(ctx context.Context, projectID string, m pricing.Model) (pricing.Model, error)
	ListModels(ctx context.Context, projectID string) ([]pricing.Model, error)
	DeleteModel(ctx context.Context, projectID, id string) error

	CreateScoreConfig(ctx context.Context, projectID string, n controlplane.NewScoreConfig) (controlplane.ScoreConfig, error)
	ListScoreConfigs(ctx context.Context, projectID string, offset, limit int) ([]controlplane.ScoreConfig, int, error)
	UpdateScoreConfig(ctx context.Context, projectID, id string, u controlplane.ScoreConfigUpdate) (controlplane.ScoreConfig, error)

	UpsertLLMConnection(ctx context.Context, box *secretbox.Box, projectID string, u controlplane.LLMConnectionUpsert) (controlplane.LLMConnection, error)
	ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]controlplane.LLMConnection, int, error)
	LLMCredentials(ctx context.Context, box *secretbox.Box, projectID, id string) (controlplane.LLMCredentials, error)
	DeleteLLMConnection(ctx context.Context, projectID, id string) error

	CreateAutomation(ctx context.Context, box *secretbox.Box, projectID string, n controlplane.NewAutomation) (controlplane.Automation, string, error)
	ListAutomations(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Automation, int, error)
	GetAutomation(ctx context.Context, projectID, id string) (controlplane.Automation, error)
	UpdateAutomation(ctx context.Context, box *secretbox.Box, projectID, id string, u controlplane.AutomationUpdate) (controlplane.Automation, error)
	DeleteAutomation(ctx context.Context, projectID, id string) error
	ListAutomationDeliveries(ctx context.Context, projectID, automationID, status string, offset, limit int) ([]controlplane.AutomationDelivery, int, error)
	EnqueueTestDelivery(ctx context.Context, projectID, id string) (controlplane.AutomationDelivery, error)
}

// inviteTTL is how long an invitation link works.
const inviteTTL = 7 * 24 * time.Hour

type handlers struct {
	store    Store
	usage    Usage
	builtins []pricing.Model
	llm      LLM
	// automations holds the box and egress policy of the automations tab.
	automations Automations
	t           *web.Templates
}

// Routes registers the settings pages and their sidebar entry.
func Routes(app *web.App, store Store, usage Usage, builtins []pricing.Model, llm LLM, automations Automations) error {
	t, err := app.Parse(pages, "organization.html", "general.html", "apikeys.html", "members.html", "models.html", "scores.html", "llm.html", "usage.html",
		"automations.html", "automation_deliveries.html")
	if err != nil {
		return err
	}
	h := &handlers{store: store, usage: usage, builtins: builtins, llm: llm, automations: automations, t: t}
	app.AddNav(web.NavItem{Section: "Settings", Label: "Settings", Path: "settings", Action: access.ProjectRead, Order: 900})
	const org, proj = web.InOrganization, web.InProject
	return app.Handle(
		web.Route{Method: http.MethodGet, Path: "/organization/{orgId}", Access: org, Action: access.OrganizationRead, Handler: h.organization},
		web.Route{Method: http.MethodPost, Path: "/organization/{orgId}/projects", Access: org, Action: access.ProjectCreate, Handler: h.createProject},
		web.Route{Method: http.MethodPost, Path: "/organization/{orgId}/settings", Access: org, Action: access.OrganizationManage, Handler: h.saveOrganization},
		web.Route{Method: http.MethodPost, Path: "/organization/{orgId}/members", Access: org, Action: access.MembersManage, Handler: h.invite},
		web.Route{Method: http.MethodPost, Path: "/organization/{orgId}/members/{userId}", Access: org, Action: access.MembersManage, Handler: h.setRole},
		web.Route{Method: http.MethodPost, Path: "/organization/{orgId}/members/{userId}/remove", Access: org, Action: access.MembersManage, Handler: h.removeMember},
		web.Route{Method: http.MethodGet, Path: "/organization/{orgId}/usage", Access: org, Action: access.UsageRead, Handler: h.orgUsage},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/usage", Access: proj, Action: access.UsageRead, Handler: h.projectUsage},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings", Access: proj, Action: access.ProjectRead, Handler: h.general},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings", Access: proj, Action: access.ProjectSettingsWrite, Handler: h.saveGeneral},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/sampling", Access: proj, Action: access.ProjectSettingsWrite, Handler: h.saveSampling},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/delete", Access: proj, Action: access.ProjectDelete, Handler: h.deleteProject},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/api-keys", Access: proj, Action: access.APIKeysManage, Handler: h.apiKeys},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/api-keys", Access: proj, Action: access.APIKeysManage, Handler: h.createAPIKey},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/api-keys/{keyId}/revoke", Access: proj, Action: access.APIKeysManage, Handler: h.revokeAPIKey},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/members", Access: proj, Action: access.ProjectRead, Handler: h.projectMembers},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/members/{userId}", Access: proj, Action: access.ProjectMembersManage, Handler: h.setProjectRole},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/models", Access: proj, Action: access.ProjectRead, Handler: h.models},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/models", Access: proj, Action: access.ModelsWrite, Handler: h.createModel},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/models/{modelId}/delete", Access: proj, Action: access.ModelsWrite, Handler: h.deleteModel},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/scores", Access: proj, Action: access.ProjectRead, Handler: h.scoreConfigs},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/scores", Access: proj, Action: access.ScoreConfigsWrite, Handler: h.createScoreConfig},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/scores/{configId}/archive", Access: proj, Action: access.ScoreConfigsWrite, Handler: h.archiveScoreConfig},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/llm-connections", Access: proj, Action: access.ProjectRead, Handler: h.llmConnections},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/llm-connections", Access: proj, Action: access.LLMConnectionsManage, Handler: h.saveLLMConnection},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/llm-connections/{connectionId}/test", Access: proj, Action: access.LLMConnectionsManage, Handler: h.testLLMConnection},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/llm-connections/{connectionId}/delete", Access: proj, Action: access.LLMConnectionsManage, Handler: h.deleteLLMConnection},

		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/automations", Access: proj, Action: access.AutomationsManage, Handler: h.listAutomations},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/automations", Access: proj, Action: access.AutomationsManage, Handler: h.createAutomation},
		web.Route{Method: http.MethodGet, Path: "/project/{projectId}/settings/automations/{automationId}", Access: proj, Action: access.AutomationsManage, Handler: h.automationDeliveries},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/automations/{automationId}/toggle", Access: proj, Action: access.AutomationsManage, Handler: h.toggleAutomation},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/automations/{automationId}/test", Access: proj, Action: access.AutomationsManage, Handler: h.testAutomation},
		web.Route{Method: http.MethodPost, Path: "/project/{projectId}/settings/automations/{automationId}/delete", Access: proj, Action: access.AutomationsManage, Handler: h.deleteAutomation},
	)
}

// tabs are the project settings' own navigation.
func tabs(r *web.Request, active string) []web.Tab {
	p := r.Project.ID
	all := []struct {
		label, path string
		action      access.Action
	}{
		{"General", "", access.ProjectRead},
		{"API keys", "api-keys", access.APIKeysManage},
		{"Members", "members", access.ProjectRead},
		{"Models", "models", access.ProjectRead},
		{"Scores", "scores", access.ProjectRead},
		{"LLM connections", "llm-connections", access.ProjectRead},
		{"Automations", "automations", access.AutomationsManage},
		{"Usage", "usage", access.UsageRead},
	}
	var out []web.Tab
	for _, t := range all {
		if !r.Can(t.action) {
			continue
		}
		href := r.Path("project", p, "settings")
		if t.path != "" {
			href += "/" + t.path
		}
		out = append(out, web.Tab{Label: t.label, Href: href, Active: t.path == active})
	}
	return out
}

// formError turns a store's validation or conflict error into the message
// a form shows; other errors are returned for the error page.
func formError(err error) (string, error) {
	switch {
	case errors.Is(err, controlplane.ErrInvalid), errors.Is(err, controlplane.ErrConflict), errors.Is(err, access.ErrDenied):
		msg := err.Error()
		for _, prefix := range []string{controlplane.ErrInvalid.Error() + ": ", controlplane.ErrConflict.Error() + ": ", access.ErrDenied.Error() + ": "} {
			if i := strings.LastIndex(msg, prefix); i >= 0 {
				msg = msg[i+len(prefix):]
			}
		}
		if msg == "" {
			return "", err
		}
		return strings.ToUpper(msg[:1]) + msg[1:] + ".", nil
	}
	return "", err
}

// formState is embedded in the data of pages with forms: the problem the
// last post had, if any.
type formState struct {
	Error string
}

func (f *formState) setError(msg string) { f.Error = msg }

// failed answers a post whose input the store refused: the page again, as
// load builds it, with the reason. Errors of another kind go to the error
// page.
func failed[D interface{ setError(string) }](h *handlers, r *web.Request, err error, page string, load func(*web.Request) (D, error)) error {
	msg, err := formError(err)
	if err != nil {
		return err
	}
	d, err := load(r)
	if err != nil {
		return err
	}
	d.setError(msg)
	return r.RenderStatus(http.StatusBadRequest, h.t, page, d)
}
