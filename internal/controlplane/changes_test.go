package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/sampling"
)

// Each write the pipelines cache tells of itself twice: to this process's
// subscribers at once, and to other processes by the shared counter that a
// second store on the same database reads.
func TestWritesTellOfTheirChanges(t *testing.T) {
	forEachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, other := openStore(t, dsn), openStore(t, dsn)
		f := newEvalFixture(t, s)
		rate := 0.5
		var rule EvalRule
		var key APIKey
		for kind, write := range map[string]func() error{
			ChangeModels: func() error {
				_, err := s.CreateModel(ctx, f.project.ID, testModel("acme-llm", time.Time{}))
				return err
			},
			ChangeSampling: func() error {
				_, err := s.SetSampling(ctx, f.project.ID, sampling.Rates{Rate: &rate})
				return err
			},
			ChangeEvalRules: func() error {
				var err error
				rule, err = s.CreateEvalRule(ctx, f.project.ID, NewEvalRule{Name: "r", EvaluatorID: f.code.ID, Target: "trace"})
				return err
			},
			ChangeAPIKeys: func() error {
				var err error
				key, _, err = s.CreateAPIKey(ctx, "a", f.project.ID, NewAPIKey{})
				return err
			},
		} {
			before, err := other.ChangeVersion(ctx, kind)
			require.NoError(t, err, kind)
			changed := s.Changed(kind)
			require.NoError(t, write(), kind)
			select {
			case <-changed:
			default:
				t.Fatalf("%s: this process was not told", kind)
			}
			after, err := other.ChangeVersion(ctx, kind)
			require.NoError(t, err, kind)
			assert.Greater(t, after, before, "%s: another process sees the counter move", kind)
		}

		// Revocation and deletes count too; a failed write does not.
		for kind, write := range map[string]func() error{
			ChangeAPIKeys:   func() error { return s.RevokeAPIKey(ctx, "a", f.project.ID, key.ID) },
			ChangeEvalRules: func() error { return s.DeleteEvalRule(ctx, f.project.ID, rule.ID) },
		} {
			changed := s.Changed(kind)
			require.NoError(t, write(), kind)
			<-changed
		}
		changed := s.Changed(ChangeAPIKeys)
		require.ErrorIs(t, s.RevokeAPIKey(ctx, "a", f.project.ID, key.ID), ErrNotFound)
		select {
		case <-changed:
			t.Fatal("a failed revocation told of a change")
		default:
		}
	})
}
