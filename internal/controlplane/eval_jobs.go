package controlplane

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/glassbox-dev/glassbox/internal/evaljobs"
)

// Job kinds.
const (
	// JobRule evaluates one trace or observation under a rule.
	JobRule = "RULE"
	// JobBackfill walks a time window of stored traces and enqueues JobRule
	// jobs for those the rule selects.
	JobBackfill = "BACKFILL"
	// JobExperimentItem runs an experiment's prompt on one dataset item.
	JobExperimentItem = "EXPERIMENT_ITEM"
	// JobExperimentEval runs one of an experiment's evaluators on the trace
	// an item produced.
	JobExperimentEval = "EXPERIMENT_EVAL"
)

// Job statuses. PENDING jobs run once due; RUNNING jobs whose lease has
// passed are claimed again (their worker died); the rest are final.
const (
	JobPending   = "PENDING"
	JobRunning   = "RUNNING"
	JobSucceeded = "SUCCEEDED"
	JobFailed    = "FAILED"
	JobSkipped   = "SKIPPED"
)

// JobStatuses lists every status, for validating filters.
var JobStatuses = []string{JobPending, JobRunning, JobSucceeded, JobFailed, JobSkipped}

// maxJobError bounds the stored error text.
const maxJobError = 2000

// EvalJob is one unit of evaluation work in the durable queue.
type EvalJob struct {
	ID            string
	ProjectID     string
	Kind          string
	RuleID        string // JobRule, JobBackfill
	ExperimentID  string // JobExperimentItem, JobExperimentEval
	EvaluatorID   string // JobExperimentEval
	TraceID       string
	ObservationID string
	DatasetItemID string
	// State is kind-specific progress as JSON (a backfill's window and position).
	State      json.RawMessage
	Status     string
	Attempts   int
	DueAt      time.Time
	LeaseUntil time.Time
	LeaseOwner string
	LastError  string
	// ScoreID and ExecutionTraceID are the score written and the trace of
	// the judge call, once the job succeeded.
	ScoreID          string
	ExecutionTraceID string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// TargetKey identifies a job's target within its rule or experiment; the
// queue holds one job per rule or experiment and target key.
func TargetKey(kind, traceID, observationID, datasetItemID, evaluatorID string) string {
	switch kind {
	case JobExperimentItem:
		return "item:" + datasetItemID
	case JobExperimentEval:
		return "eval:" + evaluatorID + ":" + datasetItemID
	}
	if observationID != "" {
		return "observation:" + traceID + ":" + observationID
	}
	return "trace:" + traceID
}

const jobColumns = `id, project_id, kind, rule_id, experiment_id, evaluator_id, trace_id, observation_id, dataset_item_id,
	state, status, attempts, due_at, lease_until, lease_owner, last_error, score_id, execution_trace_id, created_at, updated_at`

// jobInsertColumns are jobColumns plus the target key, which is never read back.
const jobInsertColumns = `id, project_id, kind, rule_id, experiment_id, evaluator_id, trace_id, observation_id,
	dataset_item_id, target_key, state, status, attempts, due_at, lease_until, lease_owner, last_error, score_id,
	execution_trace_id, created_at, updated_at`

// insertJobSQL adds a job unless one exists for the same source and target.
const insertJobSQL = `INSERT INTO eval_jobs (` + jobInsertColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, '', '', '', '', ?, ?)
	ON CONFLICT DO NOTHING`

// EnqueueEvalJobs implements evaljobs.Enqueuer in one transaction. Jobs of
// rules that are gone, inactive or of another project are dropped; jobs
// already queued for the same rule and target are left as they are.
func (s *Store) EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	return s.inTx(ctx, func(c conn) error {
		now := s.micros()
		for _, j := range jobs {
			if j.TraceID == "" {
				return fmt.Errorf("%w: job of rule %q has no trace id", ErrInvalid, j.RuleID)
			}
			key := TargetKey(JobRule, j.TraceID, j.ObservationID, "", "")
			// The casts type the parameters of a SELECT list for PostgreSQL.
			if _, err := c.exec(ctx, `INSERT INTO eval_jobs (`+jobInsertColumns+`)
				SELECT CAST(? AS TEXT), project_id, CAST(? AS TEXT), id, NULL, '', CAST(? AS TEXT), CAST(? AS TEXT), '',
					CAST(? AS TEXT), '{}', CAST(? AS TEXT), 0, CAST(? AS BIGINT), 0, '', '', '', '', CAST(? AS BIGINT),
					CAST(? AS BIGINT)
				FROM eval_rules WHERE id = ? AND project_id = ? AND active = 1
				ON CONFLICT DO NOTHING`,
				uuid.NewString(), JobRule, j.TraceID, j.ObservationID, key, JobPending, j.Due.UnixMicro(), now, now,
				j.RuleID, j.ProjectID); err != nil {
				return fmt.Errorf("enqueue evaluation job: %w", err)
			}
		}
		return nil
	})
}

// BackfillState is the state of a JobBackfill job.
type BackfillState struct {
	// From (inclusive) and To (exclusive) bound the trace timestamps, Unix µs.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Page is the next page of traces to read, from 1.
	Page int `json:"page"`
	// Scanned and Enqueued count traces read and jobs offered so far.
	Scanned  int `json:"scanned"`
	Enqueued int `json:"enqueued"`
}

// EnqueueBackfill queues a walk over the rule's traces in [from, to). The
// same window of the same rule is queued once; asking again returns that job.
func (s *Store) EnqueueBackfill(ctx context.Context, projectID, ruleID string, from, to time.Time) (EvalJob, error) {
	if !from.Before(to) {
		return EvalJob{}, fmt.Errorf("%w: the window's start must be before its end", ErrInvalid)
	}
	var out EvalJob
	err := s.inTx(ctx, func(c conn) error {
		if _, err := getRule(ctx, c, projectID, ruleID); err != nil {
			return err
		}
		state, _ := json.Marshal(BackfillState{From: from.UnixMicro(), To: to.UnixMicro(), Page: 1})
		key := fmt.Sprintf("backfill:%d:%d", from.UnixMicro(), to.UnixMicro())
		now := s.micros()
		if _, err := c.exec(ctx, insertJobSQL, uuid.NewString(), projectID, JobBackfill, ruleID, nil, "", "", "", "", key,
			string(state), JobPending, now, now, now); err != nil {
			return fmt.Errorf("enqueue backfill: %w", classify(err))
		}
		var err error
		out, err = getJob(ctx, c, `project_id = ? AND rule_id = ? AND target_key = ?`, projectID, ruleID, key)
		return err
	})
	return out, err
}

// NewEvalJob is a job that an experiment adds to the queue.
type NewEvalJob struct {
	Kind          string // JobExperimentItem or JobExperimentEval
	ExperimentID  string
	EvaluatorID   string
	TraceID       string
	ObservationID string
	DatasetItemID string
	Due           time.Time
}

func insertExperimentJob(ctx context.Context, c conn, projectID string, j NewEvalJob, now int64) error {
	key := TargetKey(j.Kind, j.TraceID, j.ObservationID, j.DatasetItemID, j.EvaluatorID)
	if _, err := c.exec(ctx, insertJobSQL, uuid.NewString(), projectID, j.Kind, nil, j.ExperimentID, j.EvaluatorID,
		j.TraceID, j.ObservationID, j.DatasetItemID, key, "{}", JobPending, j.Due.UnixMicro(), now, now); err != nil {
		return fmt.Errorf("enqueue %s job: %w", strings.ToLower(j.Kind), classify(err))
	}
	return nil
}

// ClaimEvalJobs leases up to limit due jobs to owner for lease: pending
// jobs whose time has come, and running jobs whose lease has passed. Each
// claim counts an attempt. On PostgreSQL, concurrent claimers skip the rows
// another holds; on SQLite the immediate transaction serialises them.
func (s *Store) ClaimEvalJobs(ctx context.Context, owner string, limit int, lease time.Duration) ([]EvalJob, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []EvalJob
	err := s.inTx(ctx, func(c conn) error {
		now := s.micros()
		query := `SELECT id FROM eval_jobs
			WHERE (status = 'PENDING' AND due_at <= ?) OR (status = 'RUNNING' AND lease_until < ?)
			ORDER BY due_at, id LIMIT ?`
		if s.postgres {
			query += ` FOR UPDATE SKIP LOCKED`
		}
		rows, err := c.query(ctx, query, now, now, limit)
		if err != nil {
			return fmt.Errorf("claim evaluation jobs: %w", err)
		}
		var ids []any
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close() // the scan error is the one to report
				return fmt.Errorf("claim evaluation jobs: %w", err)
			}
			ids = append(ids, id)
		}
		_ = rows.Close() // rows.Err reports what went wrong while reading
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		args := append([]any{JobRunning, now + lease.Microseconds(), owner, now}, ids...)
		if _, err := c.exec(ctx, `UPDATE eval_jobs SET status = ?, attempts = attempts + 1, lease_until = ?, lease_owner = ?,
			updated_at = ? WHERE id IN `+in, args...); err != nil {
			return fmt.Errorf("claim evaluation jobs: %w", err)
		}
		out, err = listJobs(ctx, c, `id IN `+in+` ORDER BY due_at, id`, ids...)
		return err
	})
	return out, err
}

// JobOutcome is how a run of a job ended.
type JobOutcome struct {
	// Status is final (succeeded, failed, skipped) or JobPending to run the
	// job again at Due.
	Status string
	Due    time.Time
	// Refund gives the attempt back: the job did not run (no capacity).
	Refund bool
	Error  string
	// ScoreID, ExecutionTraceID and TraceID are stored when not empty.
	ScoreID          string
	ExecutionTraceID string
	TraceID          string
	// State replaces the job's state when not nil.
	State json.RawMessage
	// FollowUps are queued in the same transaction (an experiment's evaluations).
	FollowUps []NewEvalJob
}

// ErrLeaseLost means the job is no longer leased to the caller: its lease
// passed and another worker claimed it, or it was retried or deleted.
var ErrLeaseLost = errors.New("evaluation job lease lost")

// FinishEvalJob records the outcome of a run of job, which must still be
// leased to job.LeaseOwner.
func (s *Store) FinishEvalJob(ctx context.Context, job EvalJob, o JobOutcome) error {
	switch o.Status {
	case JobPending, JobSucceeded, JobFailed, JobSkipped:
	default:
		return fmt.Errorf("%w: job outcome status %q", ErrInvalid, o.Status)
	}
	if len(o.Error) > maxJobError {
		o.Error = o.Error[:maxJobError]
	}
	return s.inTx(ctx, func(c conn) error {
		now := s.micros()
		due, refund := job.DueAt.UnixMicro(), 0
		if o.Status == JobPending {
			due = o.Due.UnixMicro()
			if o.Refund {
				refund = 1
			}
		}
		state := string(job.State)
		if o.State != nil {
			state = string(o.State)
		}
		res, err := c.exec(ctx, `UPDATE eval_jobs SET status = ?, due_at = ?, attempts = attempts - ?, lease_until = 0,
			lease_owner = '', last_error = ?, score_id = CASE WHEN ? = '' THEN score_id ELSE ? END,
			execution_trace_id = CASE WHEN ? = '' THEN execution_trace_id ELSE ? END,
			trace_id = CASE WHEN ? = '' THEN trace_id ELSE ? END, state = ?, updated_at = ?
			WHERE id = ? AND status = ? AND lease_owner = ?`,
			o.Status, due, refund, o.Error, o.ScoreID, o.ScoreID, o.ExecutionTraceID, o.ExecutionTraceID,
			o.TraceID, o.TraceID, state, now, job.ID, JobRunning, job.LeaseOwner)
		if err != nil {
			return fmt.Errorf("finish evaluation job %q: %w", job.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(fmt.Errorf("job %q: %w", job.ID, ErrLeaseLost), err)
		}
		for _, f := range o.FollowUps {
			if err := insertExperimentJob(ctx, c, job.ProjectID, f, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// RetryEvalJob queues a failed or skipped job of the project again, due now
// with a fresh attempt count.
func (s *Store) RetryEvalJob(ctx context.Context, projectID, id string) (EvalJob, error) {
	var out EvalJob
	err := s.inTx(ctx, func(c conn) error {
		job, err := getJob(ctx, c, `project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return err
		}
		if job.Status != JobFailed && job.Status != JobSkipped {
			return fmt.Errorf("%w: job %q is %s; only FAILED and SKIPPED jobs can be retried", ErrConflict, id, job.Status)
		}
		now := s.micros()
		if _, err := c.exec(ctx, `UPDATE eval_jobs SET status = ?, attempts = 0, due_at = ?, last_error = '', updated_at = ?
			WHERE project_id = ? AND id = ?`, JobPending, now, now, projectID, id); err != nil {
			return fmt.Errorf("retry evaluation job %q: %w", id, err)
		}
		out, err = getJob(ctx, c, `project_id = ? AND id = ?`, projectID, id)
		return err
	})
	return out, err
}

// GetEvalJob returns a job of the project.
func (s *Store) GetEvalJob(ctx context.Context, projectID, id string) (EvalJob, error) {
	return getJob(ctx, s.conn(), `project_id = ? AND id = ?`, projectID, id)
}

func getJob(ctx context.Context, c conn, where string, args ...any) (EvalJob, error) {
	jobs, err := listJobs(ctx, c, where, args...)
	if err != nil {
		return EvalJob{}, err
	}
	if len(jobs) == 0 {
		return EvalJob{}, fmt.Errorf("evaluation job %v: %w", args[len(args)-1], ErrNotFound)
	}
	return jobs[0], nil
}

func listJobs(ctx context.Context, c conn, where string, args ...any) ([]EvalJob, error) {
	rows, err := c.query(ctx, `SELECT `+jobColumns+` FROM eval_jobs WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read evaluation jobs: %w", err)
	}
	defer rows.Close()
	out := []EvalJob{}
	for rows.Next() {
		var (
			j                                     EvalJob
			rule, experiment                      sql.NullString
			state                                 string
			due, leaseUntil, createdAt, updatedAt int64
		)
		if err := rows.Scan(&j.ID, &j.ProjectID, &j.Kind, &rule, &experiment, &j.EvaluatorID, &j.TraceID, &j.ObservationID,
			&j.DatasetItemID, &state, &j.Status, &j.Attempts, &due, &leaseUntil, &j.LeaseOwner, &j.LastError, &j.ScoreID,
			&j.ExecutionTraceID, &createdAt, &updatedAt); err != nil {
			return nil, fmt.Errorf("read evaluation jobs: %w", err)
		}
		j.RuleID, j.ExperimentID, j.State = rule.String, experiment.String, json.RawMessage(state)
		j.DueAt, j.CreatedAt, j.UpdatedAt = fromMicros(due), fromMicros(createdAt), fromMicros(updatedAt)
		if leaseUntil > 0 {
			j.LeaseUntil = fromMicros(leaseUntil)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// EvalJobFilter selects jobs of a project; zero fields do not filter.
type EvalJobFilter struct {
	RuleID       string
	ExperimentID string
	Kind         string
	Status       string
	TraceID      string
	Offset       int
	Limit        int
}

// ListEvalJobs returns one page of the project's jobs, newest first, and
// the number that match.
func (s *Store) ListEvalJobs(ctx context.Context, projectID string, f EvalJobFilter) ([]EvalJob, int, error) {
	conds, args := []string{"project_id = ?"}, []any{projectID}
	for _, p := range []struct{ column, value string }{
		{"rule_id", f.RuleID}, {"experiment_id", f.ExperimentID}, {"kind", f.Kind}, {"status", f.Status}, {"trace_id", f.TraceID},
	} {
		if p.value != "" {
			conds, args = append(conds, p.column+" = ?"), append(args, p.value)
		}
	}
	where := strings.Join(conds, " AND ")
	c := s.conn()
	var total int
	if err := c.queryRow(ctx, `SELECT COUNT(*) FROM eval_jobs WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count evaluation jobs: %w", err)
	}
	jobs, err := listJobs(ctx, c, where+` ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	return jobs, total, err
}

// CountEvalJobs counts the jobs of a rule or an experiment by status.
func (s *Store) CountEvalJobs(ctx context.Context, projectID, ruleID, experimentID string) (map[string]int, error) {
	rows, err := s.conn().query(ctx, `SELECT status, COUNT(*) FROM eval_jobs
		WHERE project_id = ? AND COALESCE(rule_id, '') = ? AND COALESCE(experiment_id, '') = ? GROUP BY status`,
		projectID, ruleID, experimentID)
	if err != nil {
		return nil, fmt.Errorf("count evaluation jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("count evaluation jobs: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}

// PruneEvalJobs deletes succeeded and skipped jobs last changed before
// cutoff and returns how many. Their scores stay; a pruned target can be
// queued again.
func (s *Store) PruneEvalJobs(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.conn().exec(ctx, `DELETE FROM eval_jobs WHERE status IN (?, ?) AND updated_at < ?`,
		JobSucceeded, JobSkipped, cutoff.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("prune evaluation jobs: %w", err)
	}
	return res.RowsAffected()
}
