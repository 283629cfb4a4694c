package storageextension // import "github.com/glassbox-dev/glassbox/extension/storageextension"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// checkInterval is how often the extension pings ClickHouse to report its
// status; the first report comes one interval after Start, after the
// collector's own "started".
const checkInterval = 5 * time.Second

var _ extension.Extension = (*storageExtension)(nil)

type storageExtension struct {
	cfg      *Config
	logger   *zap.Logger
	interval time.Duration

	mu    sync.Mutex
	store *chstore.Store
	stop  context.CancelFunc
	done  chan struct{}
}

func newExtension(cfg *Config, set extension.Settings) *storageExtension {
	return &storageExtension{cfg: cfg, logger: set.Logger, interval: checkInterval}
}

// Start opens the store. It never waits for ClickHouse: the store connects
// and migrates in the background, and the extension reports a recoverable
// error until ClickHouse answers, then OK.
func (e *storageExtension) Start(ctx context.Context, host component.Host) error {
	s, err := chstore.Connect(ctx, e.cfg.Config(), e.cfg.CreateSchema, e.logger)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	e.mu.Lock()
	e.store, e.stop, e.done = s, stop, make(chan struct{})
	e.mu.Unlock()
	go e.watch(runCtx, host, s)
	return nil
}

// watch reports the store's status whenever it changes.
func (e *storageExtension) watch(ctx context.Context, host component.Host, s *chstore.Store) {
	defer close(e.done)
	ticker := time.NewTicker(e.interval)
	defer ticker.Stop()
	var last error
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		err := s.Ping(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && (first || last == nil):
			componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(
				fmt.Errorf("ClickHouse database %s: %w", s.Database(), err)))
		case err == nil && (first || last != nil):
			componentstatus.ReportStatus(host, componentstatus.NewEvent(componentstatus.StatusOK))
		}
		first, last = false, err
	}
}

// Shutdown stops the status reports and closes the store; it is safe
// without Start and when repeated.
func (e *storageExtension) Shutdown(context.Context) error {
	e.mu.Lock()
	s, stop, done := e.store, e.stop, e.done
	e.store, e.stop = nil, nil
	e.mu.Unlock()
	if s == nil {
		return nil
	}
	stop()
	<-done
	return s.Close()
}

// Store is the running store, nil outside Start..Shutdown.
func (e *storageExtension) Store() *chstore.Store {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.store
}

// Provider is what a glassbox_storage extension offers the components that
// name it.
type Provider interface {
	Store() *chstore.Store
}

var _ Provider = (*storageExtension)(nil)

// ErrNotStarted means the named extension has not started: a component
// that needs the store at its own Start must list it among its
// dependencies (extensions) or run in a pipeline (exporters).
var ErrNotStarted = errors.New("the glassbox_storage extension has not started")

// GetStore returns the store of the glassbox_storage extension that id
// names among host's extensions; key is the configuration key that names
// it, for the error.
func GetStore(host component.Host, id component.ID, key string) (*chstore.Store, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: no extension %q; add a glassbox_storage extension and list it under service.extensions", key, id)
	}
	p, ok := ext.(Provider)
	if !ok {
		return nil, fmt.Errorf("%s: extension %q is not a glassbox_storage extension", key, id)
	}
	s := p.Store()
	if s == nil {
		return nil, fmt.Errorf("%s: %q: %w", key, id, ErrNotStarted)
	}
	return s, nil
}
