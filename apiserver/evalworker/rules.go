package evalworker // import "github.com/glassbox-dev/glassbox/apiserver/evalworker"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/evaluator"
)

// loadRule returns a job's rule, or a skip when it is gone or inactive.
func (w *Worker) loadRule(ctx context.Context, job evalqueue.Job) (controlplane.EvalRule, error) {
	rule, err := w.cp.GetEvalRule(ctx, job.ProjectID, job.RuleID)
	switch {
	case errors.Is(err, controlplane.ErrNotFound):
		return rule, skipError{reason: "the rule was deleted"}
	case err != nil:
		return rule, err
	case !rule.Active:
		return rule, skipError{reason: "the rule is inactive"}
	}
	return rule, nil
}

// runRule evaluates one trace or observation under its rule. The filter is
// checked again on the stored data, which may have grown since the tap
// judged the first span.
func (w *Worker) runRule(ctx context.Context, job evalqueue.Job) (evalqueue.Outcome, error) {
	rule, err := w.loadRule(ctx, job)
	if err != nil {
		return evalqueue.Outcome{}, err
	}
	e, err := w.cp.GetEvaluator(ctx, job.ProjectID, rule.EvaluatorID)
	if err != nil {
		return evalqueue.Outcome{}, permanent(fmt.Errorf("evaluator of rule %q: %w", rule.Name, err))
	}
	vars, err := controlplane.ResolveVariables(e.NeededVariables(), e.Variables, rule.Variables)
	if err != nil {
		return evalqueue.Outcome{}, permanent(err)
	}
	trace, err := w.ch.GetTrace(ctx, job.ProjectID, job.TraceID)
	if err != nil {
		return evalqueue.Outcome{}, notStoredYet("trace "+job.TraceID, err)
	}
	ev := evaluation{
		job: job, evaluator: e, connectionID: rule.ConnectionID, variables: vars, data: traceData(trace),
		target:      targetOf(job),
		environment: trace.Environment,
		metadata:    map[string]string{"ruleId": rule.ID},
	}
	subject := traceSubject(trace.Trace)
	if job.ObservationID != "" {
		var found bool
		for i := range trace.Observations {
			if o := &trace.Observations[i].Observation; o.ID == job.ObservationID {
				obj := objectOf(o)
				ev.data.Observation, ev.environment, subject, found = &obj, o.Environment, evaljobs.ObservationSubject(o), true
			}
		}
		if !found {
			return evalqueue.Outcome{}, notStoredYet("observation "+job.ObservationID, chstore.ErrNotFound)
		}
	}
	if !rule.Filter.Matches(&subject) {
		return evalqueue.Outcome{}, skipError{reason: "the stored " + rule.Target + " no longer matches the rule's filter"}
	}
	if needsDatasetItem(vars) {
		item, err := w.cp.DatasetItemOfTrace(ctx, job.ProjectID, job.TraceID)
		switch {
		case err == nil:
			ev.data.DatasetItem = itemData(item)
		case !errors.Is(err, controlplane.ErrNotFound):
			return evalqueue.Outcome{}, err
		}
	}
	key := evalqueue.TargetKey(evalqueue.KindRule, job.TraceID, job.ObservationID, "", "")
	score, exec, err := w.evaluate(ctx, ev, "rule", rule.ID, key)
	return evalqueue.Outcome{Status: evalqueue.Succeeded, ScoreID: score, ExecutionTraceID: exec}, err
}

func targetOf(job evalqueue.Job) evaluator.WebhookTarget {
	return evaluator.WebhookTarget{ProjectID: job.ProjectID, TraceID: job.TraceID, ObservationID: job.ObservationID}
}

// traceSubject is what a rule's filter reads of a stored trace.
func traceSubject(t chstore.Trace) evaljobs.Subject {
	return evaljobs.Subject{Name: t.Name, Tags: t.Tags, Environment: t.Environment, UserID: t.UserID, SessionID: t.SessionID,
		Release: t.Release, Version: t.Version, Metadata: t.Metadata}
}

// runBackfill reads one page of the window's stored traces (or
// observations), queues jobs for those the rule selects, and comes back for
// the next page until the window is done.
func (w *Worker) runBackfill(ctx context.Context, job evalqueue.Job) (evalqueue.Outcome, error) {
	var state evalqueue.BackfillState
	if err := json.Unmarshal(job.State, &state); err != nil || state.Page < 1 {
		return evalqueue.Outcome{}, permanent(fmt.Errorf("backfill state %s is malformed", job.State))
	}
	rule, err := w.loadRule(ctx, job)
	if err != nil {
		return evalqueue.Outcome{}, err
	}
	now := w.now()
	var (
		jobs []evaljobs.Job
		read int
	)
	if rule.Target == evaljobs.TargetTrace {
		traces, _, err := w.ch.ListTraces(ctx, chstore.TraceFilter{ProjectID: job.ProjectID, From: state.From, To: state.To,
			OrderBy: chstore.TraceOrder{Field: chstore.TraceOrderTimestamp}, Page: state.Page, Limit: w.cfg.BackfillPageSize})
		if err != nil {
			return evalqueue.Outcome{}, fmt.Errorf("read traces: %w", err)
		}
		read = len(traces)
		for _, t := range traces {
			s := traceSubject(t)
			if t.Environment != JudgeEnvironment && rule.Filter.Matches(&s) && evaljobs.Sampled(rule.ID, t.ID, rule.SamplingRate) {
				jobs = append(jobs, evaljobs.Job{ProjectID: job.ProjectID, RuleID: rule.ID, TraceID: t.ID, Due: now})
			}
		}
	} else {
		page, err := w.ch.ListObservations(ctx, chstore.ObservationFilter{ProjectID: job.ProjectID, From: state.From, To: state.To,
			Page: state.Page, Limit: w.cfg.BackfillPageSize})
		if err != nil {
			return evalqueue.Outcome{}, fmt.Errorf("read observations: %w", err)
		}
		read = len(page.Observations)
		for i := range page.Observations {
			o := &page.Observations[i].Observation
			s := evaljobs.ObservationSubject(o)
			if o.Environment != JudgeEnvironment && rule.Filter.Matches(&s) && evaljobs.Sampled(rule.ID, o.TraceID, rule.SamplingRate) {
				jobs = append(jobs, evaljobs.Job{ProjectID: job.ProjectID, RuleID: rule.ID, TraceID: o.TraceID, ObservationID: o.ID, Due: now})
			}
		}
	}
	if err := w.cp.EnqueueEvalJobs(ctx, jobs); err != nil {
		return evalqueue.Outcome{}, err
	}
	state.Page++
	state.Scanned += read
	state.Enqueued += len(jobs)
	next, _ := json.Marshal(state)
	if read < w.cfg.BackfillPageSize {
		return evalqueue.Outcome{Status: evalqueue.Succeeded, State: next}, nil
	}
	// Progress is no failure: the next page does not use up an attempt.
	return evalqueue.Outcome{Status: evalqueue.Pending, Due: now, Refund: true, State: next}, nil
}
