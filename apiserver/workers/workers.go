// Package workers builds and runs the API's background jobs over the two
// stores: the evaluation workers (rule jobs, backfills, prompt
// experiments), the alert evaluator and the automation deliveries. The
// standalone server (cmd/glassbox-api) and the collector's glassbox_workers
// extension both start them here; the API itself (package apiserver and the
// glassbox_api extension) runs none.
package workers // import "github.com/glassbox-dev/glassbox/apiserver/workers"

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/alerts"
	"github.com/glassbox-dev/glassbox/apiserver/automations"
	"github.com/glassbox-dev/glassbox/apiserver/evalworker"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Config is the settings of the jobs, with the keys of the standalone
// server's file: evaluation, automations and alerts.
type Config struct {
	// Evaluation configures the workers that run evaluator rules,
	// backfills and prompt experiments (evaluation.enabled runs them and the
	// alert evaluator), and the egress policy of LLM and webhook calls. LLM
	// connection keys are opened with the key in GLASSBOX_ENCRYPTION_KEY.
	Evaluation evalworker.Config `mapstructure:"evaluation"`
	// Automations configures the workers that deliver automations
	// (webhooks on prompt-version events); automations.enabled runs them.
	// Their URLs are held to evaluation.webhook_allowed_hosts.
	Automations automations.Config `mapstructure:"automations"`
	// Alerts tunes the alert evaluator, which runs where the evaluation
	// workers run (evaluation.enabled).
	Alerts alerts.Config `mapstructure:"alerts"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultConfig returns the defaults: every job on.
func NewDefaultConfig() Config {
	return Config{
		Evaluation:  evalworker.NewDefaultConfig(),
		Automations: automations.NewDefaultConfig(),
		Alerts:      alerts.NewDefaultConfig(),
	}
}

// Check reports every problem with the settings. (Not named Validate: the
// collector validates the sections on their own.)
func (c Config) Check() error {
	return errors.Join(c.Evaluation.Validate(), c.Automations.Validate(), c.Alerts.Validate())
}

// CheckPublicURL reports a public_url that is not an absolute URL; empty
// is allowed (links then start at the root).
func CheckPublicURL(publicURL string) error {
	if publicURL == "" {
		return nil
	}
	if u, err := url.Parse(publicURL); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("public_url %q: expected an absolute URL such as https://glassbox.example.com", publicURL)
	}
	return nil
}

// Stores are the two stores the jobs run over.
type Stores struct {
	ControlPlane *controlplane.Store
	ClickHouse   *chstore.Store
}

// Workers are the running jobs; Stop ends them.
type Workers struct {
	evaluation *evalworker.Worker  // nil when evaluation.enabled is off
	alerts     *alerts.Evaluator   // nil when evaluation.enabled is off
	deliveries *automations.Worker // nil when automations.enabled is off
}

// Start builds and starts the jobs cfg turns on over stores that the
// caller opened and closes. publicURL prefixes the links to the UI in alert
// notifications.
func Start(cfg Config, publicURL string, stores Stores, logger *zap.Logger) (*Workers, error) {
	if err := errors.Join(cfg.Check(), CheckPublicURL(publicURL)); err != nil {
		return nil, err
	}
	box, err := secretbox.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	webhooks, err := cfg.Evaluation.Webhooks()
	if err != nil {
		return nil, err
	}
	cp, ch := stores.ControlPlane, stores.ClickHouse
	w := &Workers{}
	if cfg.Evaluation.Enabled {
		if w.evaluation, err = evalworker.New(cfg.Evaluation, cp, ch, box, logger); err != nil {
			return nil, err
		}
		if w.alerts, err = alerts.NewEvaluator(cfg.Alerts, cp, ch, webhooks, publicURL, logger); err != nil {
			return nil, err
		}
	}
	if cfg.Automations.Enabled {
		if w.deliveries, err = automations.NewWorker(cfg.Automations, cp, box, webhooks, logger); err != nil {
			return nil, err
		}
	}
	// Everything is built before anything starts, so a failure leaves
	// nothing running.
	if w.evaluation != nil {
		w.evaluation.Start()
		w.alerts.Start()
	}
	if w.deliveries != nil {
		w.deliveries.Start()
	}
	return w, nil
}

// Stop ends the jobs and waits for those in flight to record their
// outcome. It is safe on nil and when repeated.
func (w *Workers) Stop() {
	if w == nil {
		return
	}
	if w.evaluation != nil {
		w.evaluation.Stop()
		w.alerts.Stop()
	}
	if w.deliveries != nil {
		w.deliveries.Stop()
	}
}

// Running says which jobs run, for logs and tests.
func (w *Workers) Running() (evaluation, automations bool) {
	if w == nil {
		return false, false
	}
	return w.evaluation != nil, w.deliveries != nil
}
