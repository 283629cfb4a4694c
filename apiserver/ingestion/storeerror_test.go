package ingestion

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

// refusingStore calls every record invalid, as ClickHouse's store does with
// one it can never take.
type refusingStore struct{}

func (refusingStore) InsertObservations(context.Context, []model.Observation) error {
	return fmt.Errorf("%w: observation %q lacks a start time", chstore.ErrInvalid, "o1")
}

func (refusingStore) GetObservation(context.Context, string, string) (chstore.Observation, error) {
	return chstore.Observation{}, chstore.ErrNotFound
}

func (refusingStore) InsertScores(context.Context, []chstore.Score) error {
	return fmt.Errorf("%w: score %q has no name", chstore.ErrInvalid, "s1")
}

func (refusingStore) GetScore(context.Context, string, string) (chstore.Score, error) {
	return chstore.Score{}, chstore.ErrNotFound
}

type noConfigs struct{}

func (noConfigs) GetScoreConfig(context.Context, string, string) (controlplane.ScoreConfig, error) {
	return controlplane.ScoreConfig{}, controlplane.ErrNotFound
}

func (noConfigs) ListModels(context.Context, string) ([]pricing.Model, error) { return nil, nil }

type oneKey struct{}

func (oneKey) Verify(_ context.Context, publicKey, secretKey string) (apikey.Principal, error) {
	if publicKey == "pk-a" && secretKey == "sk-a" {
		return apikey.Principal{PublicKey: publicKey, ProjectID: "p-a", OrganizationID: "o-a", Scope: apikey.ScopeProject}, nil
	}
	return apikey.Principal{}, apikey.ErrInvalidCredentials
}

func (oneKey) VerifyPublicKey(ctx context.Context, publicKey string) (apikey.Principal, error) {
	return oneKey{}.Verify(ctx, publicKey, "sk-a")
}

// An event a store calls invalid is a 400, as the API answers that error
// everywhere else (httpx.ClientError), not a 500: sending it again cannot
// help.
func TestInvalidRecordIs400PerEvent(t *testing.T) {
	h, err := httpx.NewRouter(Routes(refusingStore{}, noConfigs{}, zap.NewNop()), httpx.Options{Verifier: oneKey{}})
	require.NoError(t, err)
	f := fixture{h: h}
	r := send(t, f, apitest.Basic("pk-a", "sk-a"),
		envelopeOf("e1", "score-create", "2025-05-01T10:00:00Z", ev{"id": "s1", "traceId": "t1", "name": "q", "value": 1}),
		envelopeOf("e2", "span-create", "2025-05-01T10:00:00Z", ev{"id": "o1", "traceId": "t1"}),
		envelopeOf("e3", "score-create", "2025-05-01T10:00:00Z", ev{"id": "s2", "traceId": "t1", "name": "q", "value": 1, "configId": "c-gone"}))
	assert.Equal(t, map[string]int{"e1": http.StatusBadRequest, "e2": http.StatusBadRequest, "e3": http.StatusNotFound}, failed(r))
	for _, e := range r.Errors {
		switch e.ID {
		case "e1":
			assert.Equal(t, Failure{ID: "e1", Status: 400, Message: "Invalid request data", Error: `invalid record: score "s1" has no name`}, e)
		case "e2":
			assert.Contains(t, e.Error, "lacks a start time")
		}
	}
}
