package evalqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
	"github.com/glassbox-dev/glassbox/internal/sqldb"
	"github.com/glassbox-dev/glassbox/internal/testutil/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// forEachBackend runs fn against a control plane opened on a fresh SQLite
// file and on a fresh PostgreSQL database, with a queue over its database
// that reads the time from now.
func forEachBackend(t *testing.T, now func() time.Time, fn func(t *testing.T, s *controlplane.Store, q *evalqueue.Queue)) {
	t.Helper()
	run := func(t *testing.T, dsn string) {
		s, err := controlplane.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		fn(t, s, evalqueue.New(s.DB(), now))
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "sqlite://"+filepath.Join(t.TempDir(), "cp.db")) })
	t.Run("postgres", func(t *testing.T) { run(t, pgtest.DSN(t)) })
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a project with a CEL evaluator, and a project of another
// organization.
type fixture struct {
	project, other controlplane.Project
	code           controlplane.Evaluator
}

func newFixture(t *testing.T, s *controlplane.Store) fixture {
	t.Helper()
	ctx := context.Background()
	var f fixture
	for _, id := range []string{"a", "b"} {
		_, err := s.CreateOrganization(ctx, id, "Org "+id)
		require.NoError(t, err)
	}
	var err error
	f.project, err = s.CreateProject(ctx, "a", controlplane.NewProject{ID: "pa", Name: "project"})
	require.NoError(t, err)
	f.other, err = s.CreateProject(ctx, "b", controlplane.NewProject{ID: "pb", Name: "project"})
	require.NoError(t, err)
	f.code, err = s.CreateEvaluator(ctx, f.project.ID, controlplane.NewEvaluator{Name: "length", Kind: controlplane.EvaluatorCEL,
		ScoreName: "short", Output: controlplane.ScoreOutput{DataType: controlplane.ScoreBoolean}, Expression: "size(output) < 100"})
	require.NoError(t, err)
	return f
}

func TestEvalJobQueue(t *testing.T) {
	clock := &fakeClock{now: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	forEachBackend(t, clock.Now, func(t *testing.T, s *controlplane.Store, q *evalqueue.Queue) {
		clock.Set(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
		ctx := context.Background()
		f := newFixture(t, s)
		rule, err := s.CreateEvalRule(ctx, f.project.ID, controlplane.NewEvalRule{Name: "r", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace})
		require.NoError(t, err)
		off := false
		inactive, err := s.CreateEvalRule(ctx, f.project.ID, controlplane.NewEvalRule{Name: "off", EvaluatorID: f.code.ID,
			Target: evaljobs.TargetTrace, Active: &off})
		require.NoError(t, err)

		due := clock.Now().Add(time.Minute)
		job := evaljobs.Job{ProjectID: f.project.ID, RuleID: rule.ID, TraceID: "t1", Due: due}
		require.NoError(t, q.EnqueueEvalJobs(ctx, []evaljobs.Job{job, job,
			{ProjectID: f.project.ID, RuleID: rule.ID, TraceID: "t1", ObservationID: "o1", Due: due},
			{ProjectID: f.other.ID, RuleID: rule.ID, TraceID: "t2", Due: due},
			{ProjectID: f.project.ID, RuleID: inactive.ID, TraceID: "t3", Due: due},
			{ProjectID: f.project.ID, RuleID: "gone", TraceID: "t4", Due: due},
		}))
		require.NoError(t, q.EnqueueEvalJobs(ctx, []evaljobs.Job{job}), "a retried enqueue adds nothing")
		jobs, total, err := q.ListEvalJobs(ctx, f.project.ID, evalqueue.Filter{RuleID: rule.ID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 2, total, "one job per rule and target; other projects', inactive and unknown rules' jobs dropped")
		for _, j := range jobs {
			assert.Equal(t, evalqueue.Pending, j.Status)
			assert.Equal(t, evalqueue.KindRule, j.Kind)
			assert.Equal(t, due, j.DueAt)
		}
		_, total, err = q.ListEvalJobs(ctx, f.other.ID, evalqueue.Filter{Limit: 10})
		require.NoError(t, err)
		assert.Zero(t, total)

		claimed, err := q.ClaimEvalJobs(ctx, "w1", 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, claimed, "not due yet")
		clock.Advance(time.Minute)
		claimed, err = q.ClaimEvalJobs(ctx, "w1", 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		first := claimed[0]
		assert.Equal(t, evalqueue.Running, first.Status)
		assert.Equal(t, 1, first.Attempts)
		assert.Equal(t, "w1", first.LeaseOwner)

		// The lease passes: another worker takes the job over, and the first
		// can no longer finish it.
		clock.Advance(2 * time.Minute)
		claimed, err = q.ClaimEvalJobs(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		var second evalqueue.Job
		for _, j := range claimed {
			if j.ID == first.ID {
				second = j
			}
		}
		assert.Equal(t, 2, second.Attempts)
		assert.ErrorIs(t, q.FinishEvalJob(ctx, first, evalqueue.Outcome{Status: evalqueue.Succeeded}), evalqueue.ErrLeaseLost)

		require.NoError(t, q.FinishEvalJob(ctx, second, evalqueue.Outcome{Status: evalqueue.Pending, Due: clock.Now().Add(time.Second),
			Error: "429 from provider"}))
		got, err := q.GetEvalJob(ctx, f.project.ID, second.ID)
		require.NoError(t, err)
		assert.Equal(t, evalqueue.Pending, got.Status)
		assert.Equal(t, "429 from provider", got.LastError)
		assert.True(t, got.LeaseUntil.IsZero())
		clock.Advance(time.Second)
		claimed, err = q.ClaimEvalJobs(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, q.FinishEvalJob(ctx, claimed[0], evalqueue.Outcome{Status: evalqueue.Pending, Due: clock.Now(), Refund: true}))
		got, err = q.GetEvalJob(ctx, f.project.ID, second.ID)
		require.NoError(t, err)
		assert.Equal(t, 2, got.Attempts, "a refunded run does not count")

		claimed, err = q.ClaimEvalJobs(ctx, "w2", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, q.FinishEvalJob(ctx, claimed[0], evalqueue.Outcome{Status: evalqueue.Succeeded, ScoreID: "score-1", ExecutionTraceID: "exec-1"}))
		got, err = q.GetEvalJob(ctx, f.project.ID, second.ID)
		require.NoError(t, err)
		assert.Equal(t, evalqueue.Succeeded, got.Status)
		assert.Equal(t, "score-1", got.ScoreID)
		assert.Equal(t, "exec-1", got.ExecutionTraceID)
		assert.ErrorIs(t, q.FinishEvalJob(ctx, claimed[0], evalqueue.Outcome{Status: "DONE"}), controlplane.ErrInvalid)

		other := claimed[0]
		for _, j := range jobs {
			if j.ID != second.ID {
				other = j
			}
		}
		_, err = q.RetryEvalJob(ctx, f.project.ID, other.ID)
		assert.ErrorIs(t, err, controlplane.ErrConflict, "a running job cannot be retried")
		other.LeaseOwner = "w2"
		require.NoError(t, q.FinishEvalJob(ctx, other, evalqueue.Outcome{Status: evalqueue.Failed, Error: strings.Repeat("x", 5000)}))
		got, err = q.GetEvalJob(ctx, f.project.ID, other.ID)
		require.NoError(t, err)
		assert.Equal(t, evalqueue.Failed, got.Status)
		assert.Len(t, got.LastError, 2000)
		_, err = q.RetryEvalJob(ctx, f.other.ID, other.ID)
		assert.ErrorIs(t, err, controlplane.ErrNotFound)
		got, err = q.RetryEvalJob(ctx, f.project.ID, other.ID)
		require.NoError(t, err)
		assert.Equal(t, evalqueue.Pending, got.Status)
		assert.Zero(t, got.Attempts)

		counts, err := q.CountEvalJobs(ctx, f.project.ID, rule.ID, "")
		require.NoError(t, err)
		assert.Equal(t, map[string]int{evalqueue.Pending: 1, evalqueue.Succeeded: 1}, counts)

		clock.Advance(48 * time.Hour)
		n, err := q.PruneEvalJobs(ctx, clock.Now().Add(-24*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "only the finished job is pruned")
	})
}

// Several workers claiming at once never get the same job.
func TestEvalJobClaimsAreExclusive(t *testing.T) {
	forEachBackend(t, time.Now, func(t *testing.T, s *controlplane.Store, q *evalqueue.Queue) {
		ctx := context.Background()
		f := newFixture(t, s)
		rule, err := s.CreateEvalRule(ctx, f.project.ID, controlplane.NewEvalRule{Name: "r", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace})
		require.NoError(t, err)
		const n = 60
		var jobs []evaljobs.Job
		for i := range n {
			jobs = append(jobs, evaljobs.Job{ProjectID: f.project.ID, RuleID: rule.ID, TraceID: fmt.Sprintf("t%d", i), Due: time.Now()})
		}
		require.NoError(t, q.EnqueueEvalJobs(ctx, jobs))

		var (
			mu   sync.Mutex
			seen = map[string]string{}
			wg   sync.WaitGroup
		)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", w)
				for {
					claimed, err := q.ClaimEvalJobs(ctx, owner, 3, time.Minute)
					if !assert.NoError(t, err) || len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, j := range claimed {
						assert.Empty(t, seen[j.ID], "job %s claimed twice", j.ID)
						seen[j.ID] = owner
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		assert.Len(t, seen, n)
	})
}

func TestBackfillJobs(t *testing.T) {
	forEachBackend(t, time.Now, func(t *testing.T, s *controlplane.Store, q *evalqueue.Queue) {
		ctx := context.Background()
		f := newFixture(t, s)
		rule, err := s.CreateEvalRule(ctx, f.project.ID, controlplane.NewEvalRule{Name: "r", EvaluatorID: f.code.ID, Target: evaljobs.TargetTrace})
		require.NoError(t, err)
		from, to := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)
		job, err := q.EnqueueBackfill(ctx, f.project.ID, rule.ID, from, to)
		require.NoError(t, err)
		assert.Equal(t, evalqueue.KindBackfill, job.Kind)
		assert.Equal(t, rule.ID, job.RuleID)
		var state evalqueue.BackfillState
		require.NoError(t, json.Unmarshal(job.State, &state))
		assert.Equal(t, evalqueue.BackfillState{From: from.UnixMicro(), To: to.UnixMicro(), Page: 1}, state)

		again, err := q.EnqueueBackfill(ctx, f.project.ID, rule.ID, from, to)
		require.NoError(t, err)
		assert.Equal(t, job.ID, again.ID, "the same window is queued once")
		_, err = q.EnqueueBackfill(ctx, f.project.ID, rule.ID, to, from)
		assert.ErrorIs(t, err, controlplane.ErrInvalid)
		_, err = q.EnqueueBackfill(ctx, f.other.ID, rule.ID, from, to)
		assert.ErrorIs(t, err, controlplane.ErrNotFound)

		claimed, err := q.ClaimEvalJobs(ctx, "w", 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		state.Page, state.Scanned = 2, 100
		next, _ := json.Marshal(state)
		require.NoError(t, q.FinishEvalJob(ctx, claimed[0], evalqueue.Outcome{Status: evalqueue.Pending, Due: time.Now(), State: next}))
		got, err := q.GetEvalJob(ctx, f.project.ID, job.ID)
		require.NoError(t, err)
		assert.JSONEq(t, string(next), string(got.State))
	})
}

// Jobs queued in a store transaction exist exactly when it commits.
func TestEnqueueInJoinsTheTransaction(t *testing.T) {
	forEachBackend(t, time.Now, func(t *testing.T, s *controlplane.Store, q *evalqueue.Queue) {
		ctx := context.Background()
		f := newFixture(t, s)
		x := newExperiment(t, s, f)
		job := evalqueue.NewJob{Kind: evalqueue.KindExperimentEval, ExperimentID: x.ID, EvaluatorID: f.code.ID, TraceID: "t",
			DatasetItemID: "item-1", Due: time.Now()}
		evalJobs := evalqueue.Filter{ExperimentID: x.ID, Kind: evalqueue.KindExperimentEval, Limit: 10}
		rolledBack := fmt.Errorf("roll back")
		err := s.DB().InTx(ctx, func(c sqldb.Conn) error {
			if err := q.EnqueueIn(ctx, c, f.project.ID, job); err != nil {
				return err
			}
			return rolledBack
		})
		require.ErrorIs(t, err, rolledBack)
		_, total, err := q.ListEvalJobs(ctx, f.project.ID, evalJobs)
		require.NoError(t, err)
		assert.Zero(t, total, "the rolled back transaction queued nothing")

		require.NoError(t, s.DB().InTx(ctx, func(c sqldb.Conn) error { return q.EnqueueIn(ctx, c, f.project.ID, job, job) }))
		jobs, total, err := q.ListEvalJobs(ctx, f.project.ID, evalJobs)
		require.NoError(t, err)
		require.Equal(t, 1, total, "one job per experiment and target")
		assert.Equal(t, evalqueue.KindExperimentEval, jobs[0].Kind)
		assert.Equal(t, evalqueue.Pending, jobs[0].Status)
	})
}

// newExperiment stores an experiment over a dataset of one item, which
// queues that item's job.
func newExperiment(t *testing.T, s *controlplane.Store, f fixture) controlplane.Experiment {
	t.Helper()
	ctx := context.Background()
	_, err := s.UpsertDataset(ctx, f.project.ID, controlplane.DatasetUpsert{Name: "qa"})
	require.NoError(t, err)
	_, err = s.UpsertDatasetItem(ctx, f.project.ID, controlplane.DatasetItemUpsert{DatasetName: "qa", ID: "item-1",
		Input: json.RawMessage(`{"question":"q"}`), Status: controlplane.ItemActive})
	require.NoError(t, err)
	_, err = s.CreatePrompt(ctx, f.project.ID, controlplane.NewPrompt{Name: "answer", Prompt: json.RawMessage(`"Answer {{question}}"`),
		Labels: []string{controlplane.LabelProduction}})
	require.NoError(t, err)
	box, err := secretbox.New([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	cn, err := s.UpsertLLMConnection(ctx, box, f.project.ID, controlplane.LLMConnectionUpsert{Provider: "judge", SecretKey: "sk-test-123456"})
	require.NoError(t, err)
	x, err := s.CreateExperiment(ctx, f.project.ID, controlplane.NewExperiment{DatasetName: "qa", RunName: "run-1",
		PromptName: "answer", ConnectionID: cn.ID, Model: "m"})
	require.NoError(t, err)
	return x
}
