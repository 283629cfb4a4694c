package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/cpsource"
)

var _ extension.Extension = (*controlPlaneExtension)(nil)

type controlPlaneExtension struct {
	// Source serves the authenticator and the processors (the interfaces it
	// implements are listed in cpsource).
	cpsource.Source
	cfg    *Config
	logger *zap.Logger
	store  atomic.Pointer[controlplane.Store]
}

func newExtension(cfg *Config, set extension.Settings) *controlPlaneExtension {
	e := &controlPlaneExtension{cfg: cfg, logger: set.Logger}
	e.Source = cpsource.Source{Store: e.store.Load}
	return e
}

// Start opens the store and brings its schema up to date.
func (e *controlPlaneExtension) Start(ctx context.Context, _ component.Host) error {
	cp, err := controlplane.Open(ctx, string(e.cfg.DSN))
	if err != nil {
		return err
	}
	cp.SetPromptLimits(e.cfg.PromptComposition)
	e.store.Store(cp)
	return nil
}

// ControlPlane is the running store, nil outside Start..Shutdown; the
// glassbox_api extension serves the API over the same instance, so a change
// made through the API reaches this process's components at once.
func (e *controlPlaneExtension) ControlPlane() *controlplane.Store {
	return e.store.Load()
}

// Provider is what a glassbox_controlplane extension offers the components
// that name it beyond cpsource's interfaces.
type Provider interface {
	ControlPlane() *controlplane.Store
}

// GetStore returns the store of the glassbox_controlplane extension that id
// names among host's extensions; key is the configuration key that names
// it, for the error.
func GetStore(host component.Host, id component.ID, key string) (*controlplane.Store, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: no extension %q; add a glassbox_controlplane extension and list it under service.extensions", key, id)
	}
	p, ok := ext.(Provider)
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not a glassbox_controlplane extension", key, id)
	}
	cp := p.ControlPlane()
	if cp == nil {
		return nil, fmt.Errorf("%s: %q: %w", key, id, cpsource.ErrNotRunning)
	}
	return cp, nil
}

// Shutdown closes the store; it is safe without Start and when repeated.
func (e *controlPlaneExtension) Shutdown(context.Context) error {
	if cp := e.store.Swap(nil); cp != nil {
		return cp.Close()
	}
	return nil
}
