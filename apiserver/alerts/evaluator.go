package alerts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Config tunes the evaluator of one API server process. It runs where the
// evaluation workers run (evaluation.enabled).
type Config struct {
	// PollInterval is how often the process looks for due alerts.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Lease is how long a claimed alert is held: another process
	// evaluates it only after that. It must exceed a query and the
	// notification's retries.
	Lease time.Duration `mapstructure:"lease"`
	// BatchSize is the number of due alerts claimed at once.
	BatchSize int `mapstructure:"batch_size"`
	// NotifyAttempts is how often a notification is tried on network
	// errors and 5xx/429 answers; NotifyBackoff the first pause, doubling.
	NotifyAttempts int           `mapstructure:"notify_attempts"`
	NotifyBackoff  time.Duration `mapstructure:"notify_backoff"`
	// NotifyTimeout bounds one notification attempt.
	NotifyTimeout time.Duration `mapstructure:"notify_timeout"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultConfig returns the defaults.
func NewDefaultConfig() Config {
	return Config{PollInterval: 10 * time.Second, Lease: 5 * time.Minute, BatchSize: 20, NotifyAttempts: 5,
		NotifyBackoff: time.Second, NotifyTimeout: 10 * time.Second}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New("alerts."+msg))
		}
	}
	check(c.PollInterval > 0, "poll_interval must be positive")
	check(c.Lease >= time.Minute, "lease must be at least 1m")
	check(c.BatchSize > 0, "batch_size must be positive")
	check(c.NotifyAttempts > 0, "notify_attempts must be positive")
	check(c.NotifyBackoff > 0, "notify_backoff must be positive")
	check(c.NotifyTimeout > 0, "notify_timeout must be positive")
	check(c.NotifyAttempts <= 0 || c.Lease > time.Duration(c.NotifyAttempts)*(c.NotifyTimeout+maxNotifyBackoff),
		"lease must exceed notify_attempts times (notify_timeout + 30s), the longest a notification may take")
	return errors.Join(errs...)
}

// ControlPlane is what the evaluator needs of the control plane store.
type ControlPlane interface {
	ClaimDueAlerts(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]controlplane.Alert, error)
	RecordAlertEvaluation(ctx context.Context, owner, projectID, id string, e controlplane.AlertEvaluation) (controlplane.Alert, *controlplane.AlertTransition, error)
	SetAlertNotification(ctx context.Context, projectID, transitionID, notification string) error
	LookupProject(ctx context.Context, projectID string) (controlplane.Project, error)
}

// Evaluator evaluates due alerts until Stop. Several processes may run
// one: the store's leases keep each alert on one at a time.
type Evaluator struct {
	cfg      Config
	cp       ControlPlane
	metrics  Metrics
	webhooks egress.Policy
	notifier notifier
	logger   *zap.Logger
	owner    string
	// Now is the evaluator's clock; tests replace it before Start.
	Now func() time.Time

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewEvaluator returns an evaluator over the stores. Notifications go
// only where webhooks allows; publicURL prefixes the links to the UI.
func NewEvaluator(cfg Config, cp ControlPlane, m Metrics, webhooks egress.Policy, publicURL string, logger *zap.Logger) (*Evaluator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return &Evaluator{cfg: cfg, cp: cp, metrics: m, webhooks: webhooks, logger: logger, owner: host + "/alerts/" + uuid.NewString(),
		Now: time.Now, notifier: notifier{cfg: cfg, client: webhooks.Client(), policy: webhooks, publicURL: publicURL}}, nil
}

// Start runs the evaluation loop in the background.
func (e *Evaluator) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			e.RunDue(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(e.cfg.PollInterval):
			}
		}
	}()
	e.logger.Info("Alert evaluator started", zap.String("owner", e.owner))
}

// Stop ends the loop and waits for the evaluation in progress. Safe
// without Start and when repeated.
func (e *Evaluator) Stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.wg.Wait()
	e.cancel = nil
	e.notifier.client.CloseIdleConnections()
	e.logger.Info("Alert evaluator stopped")
}

// RunDue claims the alerts due now and evaluates them, batch after batch,
// and returns how many it evaluated.
func (e *Evaluator) RunDue(ctx context.Context) int {
	n := 0
	for ctx.Err() == nil {
		due, err := e.cp.ClaimDueAlerts(ctx, e.owner, e.Now(), e.cfg.Lease, e.cfg.BatchSize)
		if err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("Claiming due alerts failed", zap.Error(err))
			}
			return n
		}
		for _, a := range due {
			e.evaluate(ctx, a)
			n++
		}
		if len(due) < e.cfg.BatchSize {
			return n
		}
	}
	return n
}

// evaluate runs one alert's query over [now-window, now), records the
// outcome and notifies when it fired or stopped firing.
func (e *Evaluator) evaluate(ctx context.Context, a controlplane.Alert) {
	now := e.Now()
	ev := controlplane.AlertEvaluation{At: now}
	queryCtx, cancel := context.WithTimeout(ctx, e.cfg.Lease/2)
	v, err := e.value(queryCtx, a, now)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: the lease passes and another run evaluates it
		}
		ev.Error = err.Error()
		e.logger.Warn("Evaluating an alert failed", zap.String("alert", a.ID), zap.String("project", a.ProjectID), zap.Error(err))
	}
	ev.Value = v
	updated, tr, err := e.cp.RecordAlertEvaluation(ctx, e.owner, a.ProjectID, a.ID, ev)
	if err != nil {
		e.logger.Warn("Recording an alert evaluation failed", zap.String("alert", a.ID), zap.Error(err))
		return
	}
	if tr == nil || !notifies(tr) {
		return
	}
	project := controlplane.Project{ID: a.ProjectID}
	if p, err := e.cp.LookupProject(ctx, a.ProjectID); err == nil {
		project = p
	}
	status := "sent"
	if err := e.notifier.send(ctx, updated, project, *tr); err != nil {
		status = "failed: " + err.Error()
		e.logger.Warn("Alert notification failed", zap.String("alert", a.ID), zap.Error(err))
	}
	// Recorded even when stopping, so that the history says what was sent.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.cp.SetAlertNotification(recordCtx, a.ProjectID, tr.ID, status); err != nil {
		e.logger.Warn("Recording an alert notification failed", zap.String("alert", a.ID), zap.Error(err))
	}
}

// notifies reports whether a transition is announced: entering firing, and
// leaving it (resolved, to ok or to no data). Pending and the moves between
// ok and no data are only recorded.
func notifies(tr *controlplane.AlertTransition) bool {
	return tr.To == controlplane.AlertFiring || tr.From == controlplane.AlertFiring
}

// value is the alert's number over the window ending at now: the query's,
// or the ratio of query to denominator (no data when the denominator is
// zero or empty).
func (e *Evaluator) value(ctx context.Context, a controlplane.Alert, now time.Time) (*float64, error) {
	q, err := decodeQuery(a.Query)
	if err != nil {
		return nil, fmt.Errorf("stored query: %w", err)
	}
	from := now.Add(-a.Window)
	num, err := value(ctx, e.metrics, a.ProjectID, q, from, now)
	if err != nil || a.Denominator == nil {
		return num, err
	}
	dq, err := decodeQuery(a.Denominator)
	if err != nil {
		return nil, fmt.Errorf("stored denominator: %w", err)
	}
	den, err := value(ctx, e.metrics, a.ProjectID, dq, from, now)
	if err != nil {
		return nil, fmt.Errorf("denominator: %w", err)
	}
	if num == nil || den == nil || *den == 0 {
		return nil, nil
	}
	r := *num / *den
	return &r, nil
}
