package access

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// The whole matrix, written out: a change to who may do what shows up here
// as a diff a reviewer reads. Columns: OWNER ADMIN MEMBER VIEWER.
const matrix = `
alerts:read                 x x x .
alerts:write                x x . .
annotationQueues:write      x x x .
apiKeys:manage              x x . .
automations:manage          x x . .
dashboards:write            x x x .
datasets:write              x x x .
evaluators:write            x x x .
llmConnections:manage       x x . .
members:manage              x x . .
models:write                x x . .
organization:manage         x . . .
organization:read           x x x x
project:create              x x . .
project:delete              x . . .
project:read                x x x x
projectMembers:manage       x x . .
projectSettings:write       x x . .
prompts:protectedLabels     x x . .
prompts:write               x x x .
scoreConfigs:write          x x x .
scores:write                x x x .
traces:delete               x x . .
traces:publish              x x x .
usage:read                  x x . .
`

func TestMatrix(t *testing.T) {
	var b strings.Builder
	b.WriteString("\n")
	for _, a := range Actions() {
		b.WriteString(string(a) + strings.Repeat(" ", 28-len(a)))
		for i, r := range Roles() {
			if i > 0 {
				b.WriteString(" ")
			}
			if Allows(r, a) {
				b.WriteString("x")
			} else {
				b.WriteString(".")
			}
		}
		b.WriteString("\n")
	}
	assert.Equal(t, matrix, b.String())
}

func TestProductionIsTheProtectedLabel(t *testing.T) {
	assert.Equal(t, ProtectedLabelsMove, PromptLabelAction(controlplane.LabelProduction))
	assert.Equal(t, PromptsWrite, PromptLabelAction("staging"))
	assert.Equal(t, PromptsWrite, PromptLabelAction("Production"), "labels are lower case; this one is not the protected label")
}

func TestUnknownRolesAndActionsAreRefused(t *testing.T) {
	assert.False(t, Allows("", ProjectRead))
	assert.False(t, Allows("owner", ProjectRead), "roles are upper case")
	assert.False(t, Allows(controlplane.RoleOwner, "project:unknown"))
}

func TestCanGrant(t *testing.T) {
	o, a, m, v := controlplane.RoleOwner, controlplane.RoleAdmin, controlplane.RoleMember, controlplane.RoleViewer
	for _, target := range Roles() {
		assert.NoError(t, CanGrant(o, target))
	}
	assert.ErrorIs(t, CanGrant(a, o), ErrDenied, "an admin cannot make or touch an owner")
	require.NoError(t, CanGrant(a, a))
	require.NoError(t, CanGrant(a, v))
	assert.ErrorIs(t, CanGrant(m, v), ErrDenied, "members do not manage members")
	assert.ErrorIs(t, CanGrant(v, v), ErrDenied)
	assert.ErrorIs(t, CanGrant(o, "ROOT"), controlplane.ErrInvalid)
}
