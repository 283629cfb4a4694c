// Package evalworker runs the evaluation jobs of the durable queue inside
// the API server: rule jobs the evaluator tap queued (LLM judge, CEL or
// webhook evaluators), backfills over stored traces, and prompt
// experiments over datasets. Every replica runs workers; the queue's leases
// keep a job on one of them at a time.
package evalworker // import "github.com/glassbox-dev/glassbox/apiserver/evalworker"

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/internal/egress"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/workpool"
)

// Config configures the workers of one API server process.
type Config struct {
	// Enabled runs the workers; replicas that only serve requests turn it off.
	Enabled bool `mapstructure:"enabled"`
	// Workers is the number of jobs run at once.
	Workers int `mapstructure:"workers"`
	// PollInterval is how often an idle process looks for due jobs.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Lease is how long a claimed job is held; a process that dies leaves
	// its jobs to others once their lease has passed. It must exceed the
	// longest LLM call.
	Lease time.Duration `mapstructure:"lease"`
	// MaxAttempts is how often a job is tried before it fails for good.
	MaxAttempts int `mapstructure:"max_attempts"`
	// RetryBackoff is the first pause before a retry; it doubles per
	// attempt up to MaxRetryBackoff. A provider's Retry-After wins when longer.
	RetryBackoff    time.Duration `mapstructure:"retry_backoff"`
	MaxRetryBackoff time.Duration `mapstructure:"max_retry_backoff"`
	// BackfillPageSize is the number of stored traces a backfill step reads.
	BackfillPageSize int `mapstructure:"backfill_page_size"`
	// JobRetention is how long finished jobs stay listable.
	JobRetention time.Duration `mapstructure:"job_retention"`
	// WebhookAllowedHosts are the hosts webhook evaluators may call: names
	// (hooks.example.com), subdomain wildcards (*.example.com), addresses
	// and ranges (10.0.0.0/8). Empty turns webhooks off. Loopback and
	// link-local addresses are reached only when listed as addresses (or,
	// for loopback, as localhost), whatever name leads to them.
	WebhookAllowedHosts []string `mapstructure:"webhook_allowed_hosts"`
	// LLMAllowedHosts are the hosts LLM connections may call, in the same
	// forms. Empty allows public addresses and refuses loopback, private,
	// link-local and unspecified ones; a list allows only what it names.
	LLMAllowedHosts []string `mapstructure:"llm_allowed_hosts"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NewDefaultConfig returns the defaults.
func NewDefaultConfig() Config {
	return Config{
		Enabled:          true,
		Workers:          4,
		PollInterval:     time.Second,
		Lease:            15 * time.Minute,
		MaxAttempts:      5,
		RetryBackoff:     5 * time.Second,
		MaxRetryBackoff:  10 * time.Minute,
		BackfillPageSize: 200,
		JobRetention:     7 * 24 * time.Hour,
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New("evaluation."+msg))
		}
	}
	check(c.Workers > 0, "workers must be positive")
	check(c.PollInterval > 0, "poll_interval must be positive")
	check(c.Lease >= time.Minute, "lease must be at least 1m")
	check(c.MaxAttempts > 0, "max_attempts must be positive")
	check(c.RetryBackoff > 0 && c.MaxRetryBackoff >= c.RetryBackoff, "retry_backoff must be positive and at most max_retry_backoff")
	check(c.BackfillPageSize > 0 && c.BackfillPageSize <= 1000, "backfill_page_size must be 1 to 1000")
	check(c.JobRetention > 0, "job_retention must be positive")
	_, webhooksErr := c.Webhooks()
	_, llmErr := c.LLMHosts()
	return errors.Join(append(errs, webhooksErr, llmErr)...)
}

// Webhooks is the egress policy of webhook evaluators.
func (c Config) Webhooks() (egress.Policy, error) {
	return egress.Webhooks(c.WebhookAllowedHosts)
}

// LLMHosts is the egress policy of LLM connections.
func (c Config) LLMHosts() (egress.Policy, error) {
	return egress.LLM(c.LLMAllowedHosts)
}

// ControlPlane is what the workers need of the control plane store.
type ControlPlane interface {
	ClaimEvalJobs(ctx context.Context, owner string, limit int, lease time.Duration) ([]evalqueue.Job, error)
	FinishEvalJob(ctx context.Context, job evalqueue.Job, o evalqueue.Outcome) error
	EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error
	PruneEvalJobs(ctx context.Context, cutoff time.Time) (int64, error)
	GetEvalRule(ctx context.Context, projectID, id string) (controlplane.EvalRule, error)
	GetEvaluator(ctx context.Context, projectID, id string) (controlplane.Evaluator, error)
	LLMCredentials(ctx context.Context, box *secretbox.Box, projectID, id string) (controlplane.LLMCredentials, error)
	GetExperiment(ctx context.Context, projectID, id string) (controlplane.Experiment, error)
	GetDatasetItem(ctx context.Context, projectID, id string) (controlplane.DatasetItem, error)
	DatasetItemOfTrace(ctx context.Context, projectID, traceID string) (controlplane.DatasetItem, error)
	ResolvePrompt(ctx context.Context, projectID, name string, sel controlplane.PromptSelector) (controlplane.Prompt, error)
	CreateDatasetRunItem(ctx context.Context, projectID string, n controlplane.NewDatasetRunItem) (controlplane.DatasetRunItem, error)
	pricing.ProjectModelLister
}

// Traces is what the workers need of ClickHouse.
type Traces interface {
	GetTrace(ctx context.Context, projectID, traceID string) (chstore.TraceWithObservations, error)
	GetObservation(ctx context.Context, projectID, observationID string) (chstore.Observation, error)
	ListTraces(ctx context.Context, f chstore.TraceFilter) ([]chstore.Trace, int, error)
	ListObservations(ctx context.Context, f chstore.ObservationFilter) (chstore.ObservationPage, error)
	InsertObservations(ctx context.Context, obs []model.Observation) error
	InsertScores(ctx context.Context, scores []chstore.Score) error
}

// finishTimeout bounds recording a job's outcome, which happens even when
// the worker is stopping.
const finishTimeout = 10 * time.Second

// Worker claims and runs due jobs until Stop.
type Worker struct {
	cfg    Config
	cp     ControlPlane
	ch     Traces
	box    *secretbox.Box
	logger *zap.Logger
	owner  string
	now    func() time.Time

	llm      *llm.Client // connects only where llmHosts allows
	llmHosts egress.Policy
	webhooks egress.Policy
	http     *http.Client // connects only where webhooks allows
	pricer   *pricing.Pricer

	semMu sync.Mutex
	sems  map[string]chan struct{} // per LLM connection id

	pool *workpool.Pool[evalqueue.Job]
}

// New returns a worker over the stores; box opens LLM connection secrets
// (nil when no key is configured: LLM jobs then fail with the reason).
func New(cfg Config, cp ControlPlane, ch Traces, box *secretbox.Box, logger *zap.Logger) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	builtin, err := pricing.Builtin()
	if err != nil {
		return nil, err
	}
	webhooks, err := cfg.Webhooks()
	if err != nil {
		return nil, err
	}
	llmHosts, err := cfg.LLMHosts()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	w := &Worker{
		cfg: cfg, cp: cp, ch: ch, box: box, logger: logger,
		owner:    host + "/" + uuid.NewString(),
		now:      time.Now,
		llm:      &llm.Client{HTTP: llmHosts.Client()},
		llmHosts: llmHosts,
		webhooks: webhooks,
		http:     webhooks.Client(),
		pricer:   pricing.NewPricer(builtin, pricing.DefaultCacheSize),
		sems:     map[string]chan struct{}{},
	}
	w.pool = workpool.New(workpool.Config[evalqueue.Job]{
		Name: "evaluation jobs", Workers: cfg.Workers, PollInterval: cfg.PollInterval, Logger: logger,
		Claim: func(ctx context.Context, n int) ([]evalqueue.Job, error) {
			return cp.ClaimEvalJobs(ctx, w.owner, n, cfg.Lease)
		},
		Run: w.run,
		Prune: func(ctx context.Context, now time.Time) (int64, error) {
			return cp.PruneEvalJobs(ctx, now.Add(-cfg.JobRetention))
		},
		Now: func() time.Time { return w.now() },
	})
	return w, nil
}

// Start runs the dispatcher in the background.
func (w *Worker) Start() {
	w.pool.Start()
	w.logger.Info("Evaluation workers started", zap.Int("workers", w.cfg.Workers), zap.String("owner", w.owner))
}

// Stop cancels the running jobs, records their outcome, and waits for them.
// Cancelled jobs run again on a later claim. Safe without Start and when repeated.
func (w *Worker) Stop() {
	if !w.pool.Stop() {
		return
	}
	w.llm.CloseIdleConnections()
	w.http.CloseIdleConnections()
	w.logger.Info("Evaluation workers stopped")
}

// run executes one job and records its outcome.
func (w *Worker) run(ctx context.Context, job evalqueue.Job) {
	// Finish before the lease passes, so no other worker runs the job twice.
	runCtx, cancel := context.WithTimeout(ctx, w.cfg.Lease-time.Minute/2)
	o, err := w.execute(runCtx, job)
	cancel()
	outcome := w.outcome(ctx, job, o, err)
	if outcome.ExecutionTraceID == "" {
		// A failed judge call was recorded too; its trace shows what went wrong.
		outcome.ExecutionTraceID = o.ExecutionTraceID
	}
	finishCtx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	if err := w.cp.FinishEvalJob(finishCtx, job, outcome); err != nil {
		w.logger.Warn("Recording an evaluation job's outcome failed", zap.String("job", job.ID), zap.Error(err))
	}
}

func (w *Worker) execute(ctx context.Context, job evalqueue.Job) (evalqueue.Outcome, error) {
	switch job.Kind {
	case evalqueue.KindRule:
		return w.runRule(ctx, job)
	case evalqueue.KindBackfill:
		return w.runBackfill(ctx, job)
	case evalqueue.KindExperimentItem:
		return w.runExperimentItem(ctx, job)
	case evalqueue.KindExperimentEval:
		return w.runExperimentEval(ctx, job)
	}
	return evalqueue.Outcome{}, permanent(fmt.Errorf("unknown job kind %q", job.Kind))
}

// Error classes of a run; anything unmarked is retried.
type (
	// permanentError will recur on retry: the job fails at once.
	permanentError struct{ err error }
	// skipError means the job has nothing to do (its rule went inactive,
	// its target no longer matches).
	skipError struct{ reason string }
)

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }
func (e skipError) Error() string      { return e.reason }

func permanent(err error) error { return permanentError{err: err} }

// errNoCapacity means the job's LLM connection is at its concurrency limit
// in this process; the job goes back to the queue without using an attempt.
var errNoCapacity = errors.New("llm connection at its concurrency limit")

// capacityWait is how long a job waits in process for its connection, and
// noCapacityDelay when it is due again if none came free.
const (
	capacityWait    = time.Second
	noCapacityDelay = time.Second
)

// outcome turns a run's result into what the queue records.
func (w *Worker) outcome(ctx context.Context, job evalqueue.Job, o evalqueue.Outcome, err error) evalqueue.Outcome {
	var (
		perm permanentError
		skip skipError
	)
	now := w.now()
	switch {
	case err == nil:
		return o
	case errors.As(err, &skip):
		return evalqueue.Outcome{Status: evalqueue.Skipped, Error: skip.reason}
	case errors.Is(err, errNoCapacity):
		return evalqueue.Outcome{Status: evalqueue.Pending, Due: now.Add(noCapacityDelay), Refund: true}
	case ctx.Err() != nil:
		// The worker is stopping: the job runs again elsewhere, attempt refunded.
		return evalqueue.Outcome{Status: evalqueue.Pending, Due: now, Refund: true, Error: "interrupted by shutdown"}
	case errors.As(err, &perm):
		return evalqueue.Outcome{Status: evalqueue.Failed, Error: err.Error()}
	case job.Attempts >= w.cfg.MaxAttempts:
		return evalqueue.Outcome{Status: evalqueue.Failed,
			Error: fmt.Sprintf("gave up after %d attempts: %v", job.Attempts, err)}
	}
	_, wait := llm.Retryable(err)
	return evalqueue.Outcome{Status: evalqueue.Pending, Due: now.Add(max(wait, w.backoff(job.Attempts))), Error: err.Error()}
}

// backoff is the pause after the given number of attempts: doubling from
// RetryBackoff, capped, with ±20% jitter so retries of a burst spread out.
func (w *Worker) backoff(attempts int) time.Duration {
	d := w.cfg.RetryBackoff
	for i := 1; i < attempts && d < w.cfg.MaxRetryBackoff; i++ {
		d *= 2
	}
	d = min(d, w.cfg.MaxRetryBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())) //nolint:gosec // jitter needs no unpredictability
}

// acquire takes a slot of the connection's concurrency limit, waiting up
// to capacityWait for one; without one it fails with errNoCapacity and the
// job goes back to the queue, so a busy connection does not hold workers
// that jobs of other connections could use. release returns the slot.
func (w *Worker) acquire(ctx context.Context, creds controlplane.LLMCredentials) (release func(), err error) {
	w.semMu.Lock()
	sem, ok := w.sems[creds.ID]
	if !ok || cap(sem) != creds.MaxConcurrency {
		sem = make(chan struct{}, creds.MaxConcurrency)
		w.sems[creds.ID] = sem
	}
	w.semMu.Unlock()
	timer := time.NewTimer(capacityWait)
	defer timer.Stop()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-timer.C:
		return nil, errNoCapacity
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
