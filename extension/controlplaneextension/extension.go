package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"

import (
	"context"
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
	e.store.Store(cp)
	return nil
}

// Shutdown closes the store; it is safe without Start and when repeated.
func (e *controlPlaneExtension) Shutdown(context.Context) error {
	if cp := e.store.Swap(nil); cp != nil {
		return cp.Close()
	}
	return nil
}
