// Package evaluations serves what online evaluation is configured with and
// what it did: LLM connections (at Langfuse's /llm-connections paths),
// evaluators (LLM judge, CEL, webhook), evaluator rules with backfills, the
// jobs of the evaluation queue, and prompt experiments over datasets; and
// Langfuse's unstable evaluator and evaluation-rule API over the same
// evaluators and rules.
package evaluations // import "github.com/glassbox-dev/glassbox/apiserver/evaluations"

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/evaljobs"
	"github.com/glassbox-dev/glassbox/internal/evalqueue"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

// Store is what the routes need from the control plane store.
type Store interface {
	UpsertLLMConnection(ctx context.Context, box *secretbox.Box, projectID string, u controlplane.LLMConnectionUpsert) (controlplane.LLMConnection, error)
	GetLLMConnection(ctx context.Context, projectID, id string) (controlplane.LLMConnection, error)
	GetLLMConnectionByProvider(ctx context.Context, projectID, provider string) (controlplane.LLMConnection, error)
	ListLLMConnections(ctx context.Context, projectID string, offset, limit int) ([]controlplane.LLMConnection, int, error)
	DeleteLLMConnection(ctx context.Context, projectID, id string) error

	CreateEvaluator(ctx context.Context, projectID string, n controlplane.NewEvaluator) (controlplane.Evaluator, error)
	GetEvaluator(ctx context.Context, projectID, id string) (controlplane.Evaluator, error)
	ListEvaluators(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Evaluator, int, error)
	UpdateEvaluator(ctx context.Context, projectID, id string, u controlplane.EvaluatorUpdate) (controlplane.Evaluator, error)
	DeleteEvaluator(ctx context.Context, projectID, id string) error

	CreateEvalRule(ctx context.Context, projectID string, n controlplane.NewEvalRule) (controlplane.EvalRule, error)
	GetEvalRule(ctx context.Context, projectID, id string) (controlplane.EvalRule, error)
	ListEvalRules(ctx context.Context, projectID string, offset, limit int) ([]controlplane.EvalRule, int, error)
	UpdateEvalRule(ctx context.Context, projectID, id string, u controlplane.EvalRuleUpdate) (controlplane.EvalRule, error)
	DeleteEvalRule(ctx context.Context, projectID, id string) error

	EnqueueBackfill(ctx context.Context, projectID, ruleID string, from, to time.Time) (evalqueue.Job, error)
	GetEvalJob(ctx context.Context, projectID, id string) (evalqueue.Job, error)
	ListEvalJobs(ctx context.Context, projectID string, f evalqueue.Filter) ([]evalqueue.Job, int, error)
	RetryEvalJob(ctx context.Context, projectID, id string) (evalqueue.Job, error)
	CountEvalJobs(ctx context.Context, projectID, ruleID, experimentID string) (map[string]int, error)

	CreateExperiment(ctx context.Context, projectID string, n controlplane.NewExperiment) (controlplane.Experiment, error)
	GetExperiment(ctx context.Context, projectID, id string) (controlplane.Experiment, error)
	ListExperiments(ctx context.Context, projectID string, offset, limit int) ([]controlplane.Experiment, int, error)
}

// EgressPolicy decides which URLs the server may call.
type EgressPolicy interface {
	CheckURL(raw string) error
}

type handlers struct {
	store    Store
	box      *secretbox.Box
	webhooks EgressPolicy
	llmHosts EgressPolicy
}

// Routes returns the evaluation routes; box seals LLM connection secrets
// (nil when GLASSBOX_ENCRYPTION_KEY is unset: connections cannot be saved),
// webhooks refuses webhook evaluators whose URL it does not allow, llmHosts
// LLM connections whose base URL it does not allow.
func Routes(store Store, box *secretbox.Box, webhooks, llmHosts EgressPolicy) []httpx.Route {
	h := handlers{store: store, box: box, webhooks: webhooks, llmHosts: llmHosts}
	var routes []httpx.Route
	routes = append(routes, h.connectionRoutes()...)
	routes = append(routes, h.evaluatorRoutes()...)
	routes = append(routes, h.ruleRoutes()...)
	routes = append(routes, h.jobRoutes()...)
	routes = append(routes, h.unstableRoutes()...)
	return append(routes, h.experimentRoutes()...)
}

// Deletion answers a deletion.
type Deletion struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// storeError maps the errors only this API has; the router maps the
// stores' own.
func storeError(err error) error {
	var apiErr *httpx.Error
	switch {
	case errors.As(err, &apiErr):
		return err
	case errors.Is(err, secretbox.ErrNoEncryptionKey):
		return &httpx.Error{Status: http.StatusServiceUnavailable, Name: "EncryptionKeyMissingError", Message: err.Error()}
	case errors.Is(err, evaljobs.ErrInvalidFilter), errors.Is(err, evaljobs.ErrInvalidTarget):
		return httpx.BadRequest("%v", err)
	}
	// The store's not-found, conflict and invalid verdicts: httpx maps them.
	return err
}

// millis reads an optional duration in milliseconds.
func millis(ms *int64) *time.Duration {
	if ms == nil {
		return nil
	}
	d := time.Duration(*ms) * time.Millisecond
	return &d
}
