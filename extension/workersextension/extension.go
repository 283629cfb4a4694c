package workersextension // import "github.com/glassbox-dev/glassbox/extension/workersextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/workers"
)

var (
	_ extension.Extension             = (*workersExtension)(nil)
	_ extensioncapabilities.Dependent = (*workersExtension)(nil)
)

type workersExtension struct {
	cfg    *Config
	logger *zap.Logger
	jobs   *workers.Workers
}

func newExtension(cfg *Config, set extension.Settings) *workersExtension {
	return &workersExtension{cfg: cfg, logger: set.Logger}
}

// Dependencies has the collector start the two store extensions first (and
// stop them after this one).
func (e *workersExtension) Dependencies() []component.ID {
	return e.cfg.Dependencies()
}

// Start starts the jobs over the stores of the extensions it names.
func (e *workersExtension) Start(_ context.Context, host component.Host) error {
	cp, ch, err := e.cfg.Stores(host)
	if err != nil {
		return err
	}
	jobs, err := workers.Start(e.cfg.Config, e.cfg.PublicURL, workers.Stores{ControlPlane: cp, ClickHouse: ch}, e.logger)
	if err != nil {
		return err
	}
	e.jobs = jobs
	return nil
}

// Shutdown stops the jobs and waits for those in flight to record their
// outcome; the stores are their extensions'. It is safe without Start and
// when repeated.
func (e *workersExtension) Shutdown(context.Context) error {
	e.jobs.Stop()
	e.jobs = nil
	return nil
}
