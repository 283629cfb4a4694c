package automations // import "github.com/glassbox-dev/glassbox/apiserver/automations"

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/workpool"
)

// Config configures the delivery workers of one API server process.
type Config struct {
	// Enabled runs the workers; replicas that only serve requests turn it off.
	Enabled bool `mapstructure:"enabled"`
	// Workers is the number of deliveries sent at once.
	Workers int `mapstructure:"workers"`
	// PollInterval is how often an idle process looks for due deliveries.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Timeout bounds one request to a receiver.
	Timeout time.Duration `mapstructure:"timeout"`
	// Lease is how long a claimed delivery is held; a process that dies
	// leaves its deliveries to others once it has passed. It exceeds Timeout.
	Lease time.Duration `mapstructure:"lease"`
	// MaxAttempts is how often a delivery is tried before it fails for good.
	MaxAttempts int `mapstructure:"max_attempts"`
	// RetryBackoff is the pause before the first retry; it doubles per
	// attempt up to MaxRetryBackoff, with ±20% jitter.
	RetryBackoff    time.Duration `mapstructure:"retry_backoff"`
	MaxRetryBackoff time.Duration `mapstructure:"max_retry_backoff"`
	// DeliveryRetention is how long delivered and failed deliveries stay in the log.
	DeliveryRetention time.Duration `mapstructure:"delivery_retention"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultConfig returns the defaults: 5 attempts, 2, 4, 8 and 16
// minutes apart, about half an hour in all.
func NewDefaultConfig() Config {
	return Config{
		Enabled:           true,
		Workers:           4,
		PollInterval:      time.Second,
		Timeout:           10 * time.Second,
		Lease:             time.Minute,
		MaxAttempts:       5,
		RetryBackoff:      2 * time.Minute,
		MaxRetryBackoff:   16 * time.Minute,
		DeliveryRetention: 30 * 24 * time.Hour,
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New("automations."+msg))
		}
	}
	check(c.Workers > 0, "workers must be positive")
	check(c.PollInterval > 0, "poll_interval must be positive")
	check(c.Timeout > 0, "timeout must be positive")
	check(c.Lease > c.Timeout, "lease must exceed timeout")
	check(c.MaxAttempts > 0, "max_attempts must be positive")
	check(c.RetryBackoff > 0 && c.MaxRetryBackoff >= c.RetryBackoff, "retry_backoff must be positive and at most max_retry_backoff")
	check(c.DeliveryRetention > 0, "delivery_retention must be positive")
	return errors.Join(errs...)
}

// WorkerStore is what the worker needs of the control plane store.
type WorkerStore interface {
	ClaimAutomationDeliveries(ctx context.Context, owner string, limit int, lease time.Duration) ([]controlplane.AutomationDelivery, error)
	FinishAutomationDelivery(ctx context.Context, d controlplane.AutomationDelivery, o controlplane.DeliveryOutcome) error
	AutomationTarget(ctx context.Context, box *secretbox.Box, projectID, id string) (controlplane.AutomationTarget, error)
	PruneAutomationDeliveries(ctx context.Context, cutoff time.Time) (int64, error)
}

// Headers of every delivery.
const (
	// SignatureHeader is "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"
	// keyed with the signing secret>".
	SignatureHeader = "X-Glassbox-Signature"
	// LangfuseSignatureHeader carries the same value, in the header
	// receivers written for Langfuse's webhooks check.
	LangfuseSignatureHeader = "X-Langfuse-Signature"
	// EventIDHeader is the event's id, the same on every retry: receivers
	// deduplicate on it.
	EventIDHeader    = "X-Glassbox-Event-Id"
	DeliveryIDHeader = "X-Glassbox-Delivery-Id"
	userAgent        = "Glassbox-Automations/1.0"
)

// Sign returns the signature header value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

const (
	finishTimeout = 10 * time.Second
	// maxErrorBody is how much of a refusal's body the log keeps.
	maxErrorBody = 512
)

// Worker claims and sends due deliveries until Stop.
type Worker struct {
	cfg    Config
	store  WorkerStore
	box    *secretbox.Box
	policy egress.Policy
	http   *http.Client // connects only where policy allows
	logger *zap.Logger
	owner  string
	now    func() time.Time

	pool *workpool.Pool[controlplane.AutomationDelivery]
}

// NewWorker returns a worker over the store; box opens the automations'
// secrets, policy is the webhook egress policy every request is held to.
func NewWorker(cfg Config, store WorkerStore, box *secretbox.Box, policy egress.Policy, logger *zap.Logger) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	client := policy.Client()
	client.Timeout = cfg.Timeout
	w := &Worker{cfg: cfg, store: store, box: box, policy: policy, http: client, logger: logger,
		owner: host + "/" + uuid.NewString(), now: time.Now}
	w.pool = workpool.New(workpool.Config[controlplane.AutomationDelivery]{
		Name: "automation deliveries", Workers: cfg.Workers, PollInterval: cfg.PollInterval, Logger: logger,
		Claim: func(ctx context.Context, n int) ([]controlplane.AutomationDelivery, error) {
			return store.ClaimAutomationDeliveries(ctx, w.owner, n, cfg.Lease)
		},
		Run: w.run,
		Prune: func(ctx context.Context, now time.Time) (int64, error) {
			return store.PruneAutomationDeliveries(ctx, now.Add(-cfg.DeliveryRetention))
		},
		Now: func() time.Time { return w.now() },
	})
	return w, nil
}

// Start runs the dispatcher in the background.
func (w *Worker) Start() {
	w.pool.Start()
	w.logger.Info("Automation delivery workers started", zap.Int("workers", w.cfg.Workers), zap.String("owner", w.owner))
}

// Stop cancels the requests in flight and waits for them; their deliveries
// are due again once their lease passes. Safe without Start and when repeated.
func (w *Worker) Stop() {
	if !w.pool.Stop() {
		return
	}
	w.http.CloseIdleConnections()
	w.logger.Info("Automation delivery workers stopped")
}

// run sends one delivery and records the outcome.
func (w *Worker) run(ctx context.Context, d controlplane.AutomationDelivery) {
	o := w.deliver(ctx, d)
	if ctx.Err() != nil && o.Status != controlplane.DeliveryDelivered {
		// Stopping: the lease passes and another attempt follows.
		return
	}
	finishCtx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	if err := w.store.FinishAutomationDelivery(finishCtx, d, o); err != nil {
		w.logger.Warn("Recording an automation delivery failed", zap.String("delivery", d.ID), zap.Error(err))
	}
}

// deliver makes one attempt. Network errors, 429 and 5xx are retried
// until MaxAttempts; other answers are final.
func (w *Worker) deliver(ctx context.Context, d controlplane.AutomationDelivery) controlplane.DeliveryOutcome {
	failed := func(code int, msg string) controlplane.DeliveryOutcome {
		return controlplane.DeliveryOutcome{Status: controlplane.DeliveryFailed, StatusCode: code, Error: msg}
	}
	target, err := w.store.AutomationTarget(ctx, w.box, d.ProjectID, d.AutomationID)
	switch {
	case errors.Is(err, secretbox.ErrNoEncryptionKey), errors.Is(err, controlplane.ErrNotFound):
		return failed(0, "automation: "+err.Error())
	case err != nil:
		// The store may be back on the next attempt.
		return w.retry(d, 0, "automation: "+err.Error())
	}
	if !target.Active && d.EventType != controlplane.EventTest {
		return failed(0, "the automation was switched off")
	}
	if err := w.policy.CheckURL(target.URL); err != nil {
		return failed(0, err.Error())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return failed(0, err.Error())
	}
	for k, v := range target.Headers {
		req.Header.Set(k, v)
	}
	sig := Sign(target.SigningSecret, w.now(), d.Payload)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(LangfuseSignatureHeader, sig)
	req.Header.Set(EventIDHeader, d.EventID)
	req.Header.Set(DeliveryIDHeader, d.ID)
	resp, err := w.http.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrDenied) {
			return failed(0, err.Error())
		}
		return w.retry(d, 0, err.Error())
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return controlplane.DeliveryOutcome{Status: controlplane.DeliveryDelivered, StatusCode: resp.StatusCode}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return w.retry(d, resp.StatusCode, answer(resp, body))
	}
	return failed(resp.StatusCode, answer(resp, body))
}

func answer(resp *http.Response, body []byte) string {
	msg := resp.Status
	if b := bytes.TrimSpace(body); len(b) > 0 {
		msg += ": " + string(b)
	}
	return msg
}

// retry schedules the next attempt, or fails the delivery after the last.
func (w *Worker) retry(d controlplane.AutomationDelivery, code int, msg string) controlplane.DeliveryOutcome {
	if d.Attempts >= w.cfg.MaxAttempts {
		return controlplane.DeliveryOutcome{Status: controlplane.DeliveryFailed, StatusCode: code,
			Error: fmt.Sprintf("%s (gave up after %d attempts)", msg, d.Attempts)}
	}
	return controlplane.DeliveryOutcome{Status: controlplane.DeliveryPending, StatusCode: code, Error: msg,
		Next: w.now().Add(Backoff(w.cfg, d.Attempts))}
}

// Backoff is the pause after the given attempt (from 1): RetryBackoff
// doubled per attempt up to MaxRetryBackoff, ±20% so that the retries of
// many deliveries to one receiver spread out.
func Backoff(cfg Config, attempt int) time.Duration {
	d := cfg.RetryBackoff
	for i := 1; i < attempt && d < cfg.MaxRetryBackoff; i++ {
		d *= 2
	}
	d = min(d, cfg.MaxRetryBackoff)
	jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(d)) //nolint:gosec // spreading retries needs no secure randomness
	return d + jitter
}
