// Package cpsource serves what the collector's components read from the
// control plane store — key verification, model prices, sampling settings,
// evaluator rules, the evaluation job queue and change notices — over a
// store that exists only while its extension runs. The glassbox_api and
// glassbox_controlplane extensions both embed it.
package cpsource // import "github.com/glassbox-dev/glassbox/internal/cpsource"

import (
	"context"
	"errors"

	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/refresh"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

var (
	_ apikey.Verifier     = Source{}
	_ pricing.ModelSource = Source{}
	_ sampling.Source     = Source{}
	_ evaljobs.RuleSource = Source{}
	_ evaljobs.Enqueuer   = Source{}
	_ refresh.Changes     = Source{}
)

// ErrNotRunning is returned outside the extension's Start..Shutdown; it is
// not apikey.ErrInvalidCredentials, so callers answer 503, not 401.
var ErrNotRunning = errors.New("the control plane store is not open yet")

// Source delegates to the store Store returns, nil while there is none.
type Source struct {
	Store func() *controlplane.Store
}

func (s Source) store() (*controlplane.Store, error) {
	if cp := s.Store(); cp != nil {
		return cp, nil
	}
	return nil, ErrNotRunning
}

// Verify implements apikey.Verifier.
func (s Source) Verify(ctx context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	cp, err := s.store()
	if err != nil {
		return apikey.Principal{}, err
	}
	return cp.Verify(ctx, publicKey, secretKey)
}

// Changed implements refresh.Changes: a change made through this process
// reaches the components at once. Before Start nothing is reported.
func (s Source) Changed(kind string) <-chan struct{} {
	cp, err := s.store()
	if err != nil {
		return nil
	}
	return cp.Changed(kind)
}

// ChangeVersion implements refresh.Changes: changes made by other processes
// on the same control plane.
func (s Source) ChangeVersion(ctx context.Context, kind string) (int64, error) {
	cp, err := s.store()
	if err != nil {
		return 0, err
	}
	return cp.ChangeVersion(ctx, kind)
}

// ProjectModels serves the projects' own model prices to glassbox_cost.
func (s Source) ProjectModels(ctx context.Context) (map[string][]pricing.Model, error) {
	cp, err := s.store()
	if err != nil {
		return nil, err
	}
	return cp.ProjectModels(ctx)
}

// ProjectSampling serves the projects' sampling settings to glassbox_sampling.
func (s Source) ProjectSampling(ctx context.Context) (map[string]sampling.Rates, error) {
	cp, err := s.store()
	if err != nil {
		return nil, err
	}
	return cp.ProjectSampling(ctx)
}

// ActiveEvalRules serves the evaluator rules to glassbox_evaltap.
func (s Source) ActiveEvalRules(ctx context.Context) ([]evaljobs.Rule, error) {
	cp, err := s.store()
	if err != nil {
		return nil, err
	}
	return cp.ActiveEvalRules(ctx)
}

// EnqueueEvalJobs takes glassbox_evaltap's jobs into the durable queue.
func (s Source) EnqueueEvalJobs(ctx context.Context, jobs []evaljobs.Job) error {
	cp, err := s.store()
	if err != nil {
		return err
	}
	return cp.EnqueueEvalJobs(ctx, jobs)
}
