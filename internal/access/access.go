// Package access is the one place that decides what a role may do. The web
// UI checks every page and form against it, and the membership routes of
// the public API use the same rules, so the two cannot drift apart.
package access // import "github.com/glassbox-dev/glassbox/internal/access"

import (
	"errors"
	"fmt"
	"slices"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Action is something a person (or an organization key) does inside an
// organization or one of its projects.
type Action string

// Actions inside a project; the role that counts is the member's role in
// that project (a project role when one is set, else the organization role).
const (
	// ProjectRead opens the project's pages: traces, sessions, users,
	// dashboards, settings (read only).
	ProjectRead Action = "project:read"
	// ScoresWrite adds and removes scores and comments by hand.
	ScoresWrite Action = "scores:write"
	// ScoreConfigsWrite creates score configs and archives them.
	ScoreConfigsWrite Action = "scoreConfigs:write"
	// DashboardsWrite creates, edits and deletes custom dashboards.
	DashboardsWrite Action = "dashboards:write"
	// AlertsRead shows alerts with their state, history and webhook host.
	AlertsRead Action = "alerts:read"
	// AlertsWrite creates, pauses and deletes alerts, which post to
	// webhooks outside the server.
	AlertsWrite Action = "alerts:write"
	// DatasetsWrite creates datasets and adds traces to them.
	DatasetsWrite Action = "datasets:write"
	// PromptsWrite creates prompt versions and moves labels.
	PromptsWrite Action = "prompts:write"
	// ProtectedLabelsMove moves and removes the production label of a
	// prompt, which decides what applications fetch by default.
	ProtectedLabelsMove Action = "prompts:protectedLabels"
	// AnnotationQueuesWrite adds items to annotation queues and works them.
	AnnotationQueuesWrite Action = "annotationQueues:write"
	// EvaluatorsWrite manages evaluators and their rules.
	EvaluatorsWrite Action = "evaluators:write"
	// TracesPublish marks traces public (shared by link) or private again.
	TracesPublish Action = "traces:publish"
	// TracesDelete deletes traces.
	TracesDelete Action = "traces:delete"
	// APIKeysManage creates, lists (secret-less) and revokes project keys.
	APIKeysManage Action = "apiKeys:manage"
	// ModelsWrite edits the project's model prices.
	ModelsWrite Action = "models:write"
	// ProjectSettingsWrite changes sampling, retention and the name.
	ProjectSettingsWrite Action = "projectSettings:write"
	// LLMConnectionsManage stores and removes LLM provider keys.
	LLMConnectionsManage Action = "llmConnections:manage"
	// AutomationsManage sees, creates, changes and deletes the project's
	// automations (webhooks on prompt changes) and their delivery log.
	AutomationsManage Action = "automations:manage"
	// ProjectMembersManage sets and removes project-level roles.
	ProjectMembersManage Action = "projectMembers:manage"
	// ProjectDelete deletes the project.
	ProjectDelete Action = "project:delete"
)

// Actions on the organization itself; the organization role counts.
const (
	// OrganizationRead lists the organization's projects and members.
	OrganizationRead Action = "organization:read"
	// ProjectCreate creates projects in the organization.
	ProjectCreate Action = "project:create"
	// MembersManage invites members, changes their roles and removes them,
	// within the limits of CanGrant.
	MembersManage Action = "members:manage"
	// UsageRead sees the organization's usage across projects.
	UsageRead Action = "usage:read"
	// OrganizationManage renames the organization.
	OrganizationManage Action = "organization:manage"
)

// rank orders the roles; a higher rank includes everything below it.
var rank = map[controlplane.Role]int{
	controlplane.RoleViewer: 1,
	controlplane.RoleMember: 2,
	controlplane.RoleAdmin:  3,
	controlplane.RoleOwner:  4,
}

// minimum is the lowest role allowed to do each action. Every action is
// listed; Allows refuses one that is not.
var minimum = map[Action]controlplane.Role{
	ProjectRead:           controlplane.RoleViewer,
	OrganizationRead:      controlplane.RoleViewer,
	ScoresWrite:           controlplane.RoleMember,
	ScoreConfigsWrite:     controlplane.RoleMember,
	DashboardsWrite:       controlplane.RoleMember,
	AlertsRead:            controlplane.RoleMember,
	AlertsWrite:           controlplane.RoleAdmin,
	DatasetsWrite:         controlplane.RoleMember,
	PromptsWrite:          controlplane.RoleMember,
	AnnotationQueuesWrite: controlplane.RoleMember,
	EvaluatorsWrite:       controlplane.RoleMember,
	TracesPublish:         controlplane.RoleMember,
	TracesDelete:          controlplane.RoleAdmin,
	ProtectedLabelsMove:   controlplane.RoleAdmin,
	APIKeysManage:         controlplane.RoleAdmin,
	ModelsWrite:           controlplane.RoleAdmin,
	ProjectSettingsWrite:  controlplane.RoleAdmin,
	LLMConnectionsManage:  controlplane.RoleAdmin,
	AutomationsManage:     controlplane.RoleAdmin,
	ProjectMembersManage:  controlplane.RoleAdmin,
	ProjectCreate:         controlplane.RoleAdmin,
	MembersManage:         controlplane.RoleAdmin,
	UsageRead:             controlplane.RoleAdmin,
	ProjectDelete:         controlplane.RoleOwner,
	OrganizationManage:    controlplane.RoleOwner,
}

// PromptLabelAction is what moving or removing a prompt label needs:
// production is protected, other labels are ordinary prompt edits.
func PromptLabelAction(label string) Action {
	if label == controlplane.LabelProduction {
		return ProtectedLabelsMove
	}
	return PromptsWrite
}

// Allows reports whether role may do action. Unknown roles and actions are
// refused.
func Allows(role controlplane.Role, action Action) bool {
	need, ok := minimum[action]
	have := rank[role]
	return ok && have > 0 && have >= rank[need]
}

// Actions lists every action, for tests and documentation.
func Actions() []Action {
	out := make([]Action, 0, len(minimum))
	for a := range minimum {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// Roles lists the roles from the highest down.
func Roles() []controlplane.Role {
	return []controlplane.Role{controlplane.RoleOwner, controlplane.RoleAdmin, controlplane.RoleMember, controlplane.RoleViewer}
}

// CanGrant reports whether an actor with role actor may give someone the
// role target, or change or remove the role of someone who has target now:
// members managers act only on roles up to their own, so an ADMIN can
// neither create an OWNER nor demote one.
func CanGrant(actor, target controlplane.Role) error {
	if !Allows(actor, MembersManage) {
		return fmt.Errorf("%w: the %s role cannot manage members", ErrDenied, actor)
	}
	if rank[target] == 0 {
		return fmt.Errorf("%w: role %q is not one of OWNER, ADMIN, MEMBER, VIEWER", controlplane.ErrInvalid, target)
	}
	if rank[target] > rank[actor] {
		return fmt.Errorf("%w: the %s role cannot grant or change the %s role", ErrDenied, actor, target)
	}
	return nil
}

// ErrDenied means the role does not allow what was asked.
var ErrDenied = errors.New("access denied")
