// Package storerefs is how an extension names the two stores it runs over,
// a glassbox_storage (ClickHouse) and a glassbox_controlplane extension, by
// id, as Jaeger's components name its storage extension: one set of keys,
// one check and one lookup for glassbox_api and glassbox_workers.
package storerefs // import "github.com/glassbox-dev/glassbox/extension/internal/storerefs"

import (
	"errors"

	"go.opentelemetry.io/collector/component"

	"github.com/glassbox-dev/glassbox/extension/controlplaneextension"
	"github.com/glassbox-dev/glassbox/extension/storageextension"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Refs names the two store extensions; embed it with `mapstructure:",squash"`.
type Refs struct {
	// Storage names the glassbox_storage extension (ClickHouse), the one
	// the exporter writes through.
	Storage component.ID `mapstructure:"storage"`
	// ControlPlane names the glassbox_controlplane extension, whose store
	// instance the processors and the authenticator use too.
	ControlPlane component.ID `mapstructure:"control_plane"`
}

// CheckRefs reports a store that is not named.
func (r Refs) CheckRefs() error {
	var errs []error
	if r.Storage == (component.ID{}) {
		errs = append(errs, errors.New("storage is required: the id of a glassbox_storage extension, e.g. storage: glassbox_storage"))
	}
	if r.ControlPlane == (component.ID{}) {
		errs = append(errs, errors.New("control_plane is required: the id of a glassbox_controlplane extension, e.g. control_plane: glassbox_controlplane"))
	}
	return errors.Join(errs...)
}

// Dependencies are the two extensions, which the collector starts before
// and stops after the one that names them.
func (r Refs) Dependencies() []component.ID {
	return []component.ID{r.Storage, r.ControlPlane}
}

// Stores returns the stores of the two extensions once they have started.
func (r Refs) Stores(host component.Host) (*controlplane.Store, *chstore.Store, error) {
	cp, err := controlplaneextension.GetStore(host, r.ControlPlane, "control_plane")
	if err != nil {
		return nil, nil, err
	}
	ch, err := storageextension.GetStore(host, r.Storage, "storage")
	if err != nil {
		return nil, nil, err
	}
	return cp, ch, nil
}
