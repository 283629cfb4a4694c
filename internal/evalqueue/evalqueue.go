// Package evalqueue is the durable queue of evaluation work: jobs that run
// an evaluator rule on a trace or observation, walk stored traces for a
// backfill, or run an experiment's prompt and evaluators on a dataset item.
// Workers lease due jobs and report how each run ended; a lease that
// passes returns the job to the others. The jobs live in the control
// plane's database (table eval_jobs, created by its migrations) and the
// queue runs its statements through the same sqldb.DB, so that a store
// transaction can queue jobs with the rows they belong to.
package evalqueue

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
	"github.com/glassbox-dev/glassbox/internal/sqldb"
)

// Queue is the job queue over the control plane's database. It is safe for
// concurrent use.
type Queue struct {
	db  *sqldb.DB
	now func() time.Time
}

// New returns the queue over db, which must hold the control plane's
// schema; now is the queue's clock.
func New(db *sqldb.DB, now func() time.Time) *Queue {
	return &Queue{db: db, now: now}
}

// Job kinds.
const (
	// KindRule evaluates one trace or observation under a rule.
	KindRule = "RULE"
	// KindBackfill walks a time window of stored traces and enqueues KindRule
	// jobs for those the rule selects.
	KindBackfill = "BACKFILL"
	// KindExperimentItem runs an experiment's prompt on one dataset item.
	KindExperimentItem = "EXPERIMENT_ITEM"
	// KindExperimentEval runs one of an experiment's evaluators on the trace
	// an item produced.
	KindExperimentEval = "EXPERIMENT_EVAL"
)

// Job statuses. PENDING jobs run once due; RUNNING jobs whose lease has
// passed are claimed again (their worker died); the rest are final.
const (
	Pending   = "PENDING"
	Running   = "RUNNING"
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
	Skipped   = "SKIPPED"
)

// Statuses lists every status, for validating filters.
var Statuses = []string{Pending, Running, Succeeded, Failed, Skipped}

// maxErrorLength bounds the stored error text.
const maxErrorLength = 2000

// Job is one unit of evaluation work in the durable queue.
type Job struct {
	ID            string
	ProjectID     string
	Kind          string
	RuleID        string // KindRule, KindBackfill
	ExperimentID  string // KindExperimentItem, KindExperimentEval
	EvaluatorID   string // KindExperimentEval
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
	case KindExperimentItem:
		return "item:" + datasetItemID
	case KindExperimentEval:
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
func (q *Queue) EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	return q.db.InTx(ctx, func(c sqldb.Conn) error {
		now := q.now().UnixMicro()
		for _, j := range jobs {
			if j.TraceID == "" {
				return fmt.Errorf("%w: job of rule %q has no trace id", sqldb.ErrInvalid, j.RuleID)
			}
			key := TargetKey(KindRule, j.TraceID, j.ObservationID, "", "")
			// The casts type the parameters of a SELECT list for PostgreSQL.
			if _, err := c.Exec(ctx, `INSERT INTO eval_jobs (`+jobInsertColumns+`)
				SELECT CAST(? AS TEXT), project_id, CAST(? AS TEXT), id, NULL, '', CAST(? AS TEXT), CAST(? AS TEXT), '',
					CAST(? AS TEXT), '{}', CAST(? AS TEXT), 0, CAST(? AS BIGINT), 0, '', '', '', '', CAST(? AS BIGINT),
					CAST(? AS BIGINT)
				FROM eval_rules WHERE id = ? AND project_id = ? AND active = 1
				ON CONFLICT DO NOTHING`,
				uuid.NewString(), KindRule, j.TraceID, j.ObservationID, key, Pending, j.Due.UnixMicro(), now, now,
				j.RuleID, j.ProjectID); err != nil {
				return fmt.Errorf("enqueue evaluation job: %w", err)
			}
		}
		return nil
	})
}

// BackfillState is the state of a KindBackfill job.
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
func (q *Queue) EnqueueBackfill(ctx context.Context, projectID, ruleID string, from, to time.Time) (Job, error) {
	if !from.Before(to) {
		return Job{}, fmt.Errorf("%w: the window's start must be before its end", sqldb.ErrInvalid)
	}
	var out Job
	err := q.db.InTx(ctx, func(c sqldb.Conn) error {
		var n int
		if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM eval_rules WHERE project_id = ? AND id = ?`, projectID, ruleID).
			Scan(&n); err != nil {
			return fmt.Errorf("look up evaluator rule %q: %w", ruleID, err)
		}
		if n == 0 {
			return fmt.Errorf("evaluator rule %q: %w", ruleID, sqldb.ErrNotFound)
		}
		state, _ := json.Marshal(BackfillState{From: from.UnixMicro(), To: to.UnixMicro(), Page: 1})
		key := fmt.Sprintf("backfill:%d:%d", from.UnixMicro(), to.UnixMicro())
		now := q.now().UnixMicro()
		if _, err := c.Exec(ctx, insertJobSQL, uuid.NewString(), projectID, KindBackfill, ruleID, nil, "", "", "", "", key,
			string(state), Pending, now, now, now); err != nil {
			return fmt.Errorf("enqueue backfill: %w", sqldb.Classify(err))
		}
		var err error
		out, err = getJob(ctx, c, `project_id = ? AND rule_id = ? AND target_key = ?`, projectID, ruleID, key)
		return err
	})
	return out, err
}

// NewJob is a job that an experiment adds to the queue.
type NewJob struct {
	Kind          string // KindExperimentItem or KindExperimentEval
	ExperimentID  string
	EvaluatorID   string
	TraceID       string
	ObservationID string
	DatasetItemID string
	Due           time.Time
}

// EnqueueIn queues jobs of an experiment in the caller's transaction c, so
// that they exist exactly when the rows they work on do.
func (q *Queue) EnqueueIn(ctx context.Context, c sqldb.Conn, projectID string, jobs ...NewJob) error {
	return insertJobs(ctx, c, projectID, jobs, q.now().UnixMicro())
}

func insertJobs(ctx context.Context, c sqldb.Conn, projectID string, jobs []NewJob, now int64) error {
	for _, j := range jobs {
		key := TargetKey(j.Kind, j.TraceID, j.ObservationID, j.DatasetItemID, j.EvaluatorID)
		if _, err := c.Exec(ctx, insertJobSQL, uuid.NewString(), projectID, j.Kind, nil, j.ExperimentID, j.EvaluatorID,
			j.TraceID, j.ObservationID, j.DatasetItemID, key, "{}", Pending, j.Due.UnixMicro(), now, now); err != nil {
			return fmt.Errorf("enqueue %s job: %w", strings.ToLower(j.Kind), sqldb.Classify(err))
		}
	}
	return nil
}

// ClaimEvalJobs leases up to limit due jobs to owner for lease: pending
// jobs whose time has come, and running jobs whose lease has passed. Each
// claim counts an attempt. On PostgreSQL, concurrent claimers skip the rows
// another holds; on SQLite the immediate transaction serialises them.
func (q *Queue) ClaimEvalJobs(ctx context.Context, owner string, limit int, lease time.Duration) ([]Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []Job
	err := q.db.InTx(ctx, func(c sqldb.Conn) error {
		now := q.now().UnixMicro()
		query := `SELECT id FROM eval_jobs
			WHERE (status = 'PENDING' AND due_at <= ?) OR (status = 'RUNNING' AND lease_until < ?)
			ORDER BY due_at, id LIMIT ?`
		if q.db.Postgres() {
			query += ` FOR UPDATE SKIP LOCKED`
		}
		rows, err := c.Query(ctx, query, now, now, limit)
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
		args := append([]any{Running, now + lease.Microseconds(), owner, now}, ids...)
		if _, err := c.Exec(ctx, `UPDATE eval_jobs SET status = ?, attempts = attempts + 1, lease_until = ?, lease_owner = ?,
			updated_at = ? WHERE id IN `+in, args...); err != nil {
			return fmt.Errorf("claim evaluation jobs: %w", err)
		}
		out, err = listJobs(ctx, c, `id IN `+in+` ORDER BY due_at, id`, ids...)
		return err
	})
	return out, err
}

// Outcome is how a run of a job ended.
type Outcome struct {
	// Status is final (succeeded, failed, skipped) or Pending to run the
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
	FollowUps []NewJob
}

// ErrLeaseLost means the job is no longer leased to the caller: its lease
// passed and another worker claimed it, or it was retried or deleted.
var ErrLeaseLost = errors.New("evaluation job lease lost")

// FinishEvalJob records the outcome of a run of job, which must still be
// leased to job.LeaseOwner.
func (q *Queue) FinishEvalJob(ctx context.Context, job Job, o Outcome) error {
	switch o.Status {
	case Pending, Succeeded, Failed, Skipped:
	default:
		return fmt.Errorf("%w: job outcome status %q", sqldb.ErrInvalid, o.Status)
	}
	if len(o.Error) > maxErrorLength {
		o.Error = o.Error[:maxErrorLength]
	}
	return q.db.InTx(ctx, func(c sqldb.Conn) error {
		now := q.now().UnixMicro()
		due, refund := job.DueAt.UnixMicro(), 0
		if o.Status == Pending {
			due = o.Due.UnixMicro()
			if o.Refund {
				refund = 1
			}
		}
		state := string(job.State)
		if o.State != nil {
			state = string(o.State)
		}
		res, err := c.Exec(ctx, `UPDATE eval_jobs SET status = ?, due_at = ?, attempts = attempts - ?, lease_until = 0,
			lease_owner = '', last_error = ?, score_id = CASE WHEN ? = '' THEN score_id ELSE ? END,
			execution_trace_id = CASE WHEN ? = '' THEN execution_trace_id ELSE ? END,
			trace_id = CASE WHEN ? = '' THEN trace_id ELSE ? END, state = ?, updated_at = ?
			WHERE id = ? AND status = ? AND lease_owner = ?`,
			o.Status, due, refund, o.Error, o.ScoreID, o.ScoreID, o.ExecutionTraceID, o.ExecutionTraceID,
			o.TraceID, o.TraceID, state, now, job.ID, Running, job.LeaseOwner)
		if err != nil {
			return fmt.Errorf("finish evaluation job %q: %w", job.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(fmt.Errorf("job %q: %w", job.ID, ErrLeaseLost), err)
		}
		return insertJobs(ctx, c, job.ProjectID, o.FollowUps, now)
	})
}

// RetryEvalJob queues a failed or skipped job of the project again, due now
// with a fresh attempt count.
func (q *Queue) RetryEvalJob(ctx context.Context, projectID, id string) (Job, error) {
	var out Job
	err := q.db.InTx(ctx, func(c sqldb.Conn) error {
		job, err := getJob(ctx, c, `project_id = ? AND id = ?`, projectID, id)
		if err != nil {
			return err
		}
		if job.Status != Failed && job.Status != Skipped {
			return fmt.Errorf("%w: job %q is %s; only FAILED and SKIPPED jobs can be retried", sqldb.ErrConflict, id, job.Status)
		}
		now := q.now().UnixMicro()
		if _, err := c.Exec(ctx, `UPDATE eval_jobs SET status = ?, attempts = 0, due_at = ?, last_error = '', updated_at = ?
			WHERE project_id = ? AND id = ?`, Pending, now, now, projectID, id); err != nil {
			return fmt.Errorf("retry evaluation job %q: %w", id, err)
		}
		out, err = getJob(ctx, c, `project_id = ? AND id = ?`, projectID, id)
		return err
	})
	return out, err
}

// GetEvalJob returns a job of the project.
func (q *Queue) GetEvalJob(ctx context.Context, projectID, id string) (Job, error) {
	return getJob(ctx, q.db.Conn(), `project_id = ? AND id = ?`, projectID, id)
}

func getJob(ctx context.Context, c sqldb.Conn, where string, args ...any) (Job, error) {
	jobs, err := listJobs(ctx, c, where, args...)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, fmt.Errorf("evaluation job %v: %w", args[len(args)-1], sqldb.ErrNotFound)
	}
	return jobs[0], nil
}

func listJobs(ctx context.Context, c sqldb.Conn, where string, args ...any) ([]Job, error) {
	rows, err := c.Query(ctx, `SELECT `+jobColumns+` FROM eval_jobs WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read evaluation jobs: %w", err)
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		var (
			j                                     Job
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
		j.DueAt, j.CreatedAt, j.UpdatedAt = sqldb.FromMicros(due), sqldb.FromMicros(createdAt), sqldb.FromMicros(updatedAt)
		if leaseUntil > 0 {
			j.LeaseUntil = sqldb.FromMicros(leaseUntil)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Filter selects jobs of a project; zero fields do not filter.
type Filter struct {
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
func (q *Queue) ListEvalJobs(ctx context.Context, projectID string, f Filter) ([]Job, int, error) {
	conds, args := []string{"project_id = ?"}, []any{projectID}
	for _, p := range []struct{ column, value string }{
		{"rule_id", f.RuleID}, {"experiment_id", f.ExperimentID}, {"kind", f.Kind}, {"status", f.Status}, {"trace_id", f.TraceID},
	} {
		if p.value != "" {
			conds, args = append(conds, p.column+" = ?"), append(args, p.value)
		}
	}
	where := strings.Join(conds, " AND ")
	c := q.db.Conn()
	var total int
	if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM eval_jobs WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count evaluation jobs: %w", err)
	}
	jobs, err := listJobs(ctx, c, where+` ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	return jobs, total, err
}

// CountEvalJobs counts the jobs of a rule or an experiment by status.
func (q *Queue) CountEvalJobs(ctx context.Context, projectID, ruleID, experimentID string) (map[string]int, error) {
	rows, err := q.db.Conn().Query(ctx, `SELECT status, COUNT(*) FROM eval_jobs
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
func (q *Queue) PruneEvalJobs(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := q.db.Conn().Exec(ctx, `DELETE FROM eval_jobs WHERE status IN (?, ?) AND updated_at < ?`,
		Succeeded, Skipped, cutoff.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("prune evaluation jobs: %w", err)
	}
	return res.RowsAffected()
}
