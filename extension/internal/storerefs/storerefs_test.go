package storerefs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

func TestRefs(t *testing.T) {
	err := Refs{}.CheckRefs()
	assert.ErrorContains(t, err, "storage is required")
	assert.ErrorContains(t, err, "control_plane is required")

	r := Refs{Storage: component.MustNewID("glassbox_storage"), ControlPlane: component.MustNewID("glassbox_controlplane")}
	assert.NoError(t, r.CheckRefs())
	assert.Equal(t, []component.ID{r.Storage, r.ControlPlane}, r.Dependencies())
	_, _, err = r.Stores(componenttest.NewNopHost())
	assert.ErrorContains(t, err, `control_plane: no extension "glassbox_controlplane"`)
}
