// Package evaljobs is the contract between the evaluator tap in the
// collector and the evaluation workers of the API server: the snapshot of an
// evaluator rule the tap matches arriving spans against, the job it hands to
// the durable queue, and the interfaces through which it reads rules and
// enqueues jobs. Filter matching and the sampling decision live here too, so
// that the tap, backfills and the workers' re-check agree on them.
package evaljobs // import "github.com/glassbox-dev/glassbox/internal/evaljobs"

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// Targets of a rule.
const (
	// TargetTrace evaluates whole traces, once per trace.
	TargetTrace = "trace"
	// TargetObservation evaluates each matching observation.
	TargetObservation = "observation"
)

// Rule is what the tap needs to know of an active evaluator rule.
type Rule struct {
	ID        string
	ProjectID string
	Target    string // TargetTrace or TargetObservation
	Filter    Filter
	// SamplingRate is the fraction of matching traces evaluated, in [0, 1].
	SamplingRate float64
	// Delay is how long after the first matching span the job becomes due,
	// so that the rest of the trace has arrived by then.
	Delay time.Duration
}

// Job asks the workers to evaluate one target under one rule. The queue
// keeps at most one job per rule and target, so enqueueing again is a no-op.
type Job struct {
	ProjectID string
	RuleID    string
	TraceID   string
	// ObservationID is set for observation targets only.
	ObservationID string
	Due           time.Time
}

// RuleSource serves the active evaluator rules of every project.
type RuleSource interface {
	ActiveEvalRules(ctx context.Context) ([]Rule, error)
}

// Enqueuer adds jobs to the durable queue; jobs already queued for the same
// rule and target are left as they are.
type Enqueuer interface {
	EnqueueEvalJobs(ctx context.Context, jobs []Job) error
}

// Sampled decides whether rule evaluates the trace, consistently: the same
// rule, trace id and rate give the same answer on every collector and in
// every backfill. The rule id is hashed in so that rules sample
// independently of each other and of the storage sampler, which decides on
// the trace id's own bits: a rule at 0.5 behind a sampler at 0.5 evaluates
// half of the stored traces, not all of them.
func Sampled(ruleID, traceID string, rate float64) bool {
	switch {
	case rate >= 1 || math.IsNaN(rate):
		return true
	case rate <= 0:
		return false
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(ruleID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(traceID))
	// FNV's high bits mix poorly on short inputs; a finaliser spreads them.
	x := mix64(h.Sum64())
	return float64(x) < rate*(1<<64)
}

// mix64 is the splitmix64 finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// ErrInvalidTarget is returned for a target other than TargetTrace and TargetObservation.
var ErrInvalidTarget = errors.New(`target must be "trace" or "observation"`)

// CheckTarget validates a rule target.
func CheckTarget(target string) error {
	if target != TargetTrace && target != TargetObservation {
		return fmt.Errorf("%w, not %q", ErrInvalidTarget, target)
	}
	return nil
}

// Selects reports whether the rule evaluates the target that o belongs to:
// its trace (judged by the trace-level fields o carries) or o itself. The
// filter must have been validated.
func (r *Rule) Selects(o *model.Observation) bool {
	var s Subject
	if r.Target == TargetTrace {
		s = TraceSubject(o)
	} else {
		s = ObservationSubject(o)
	}
	return r.Filter.Matches(&s) && Sampled(r.ID, o.TraceID, r.SamplingRate)
}

// JobFor is the job that evaluates o's target under the rule, due after
// the rule's delay from now.
func (r *Rule) JobFor(o *model.Observation, now time.Time) Job {
	j := Job{ProjectID: r.ProjectID, RuleID: r.ID, TraceID: o.TraceID, Due: now.Add(r.Delay)}
	if r.Target == TargetObservation {
		j.ObservationID = o.ID
	}
	return j
}
