package chstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

func TestTraceOutlineAndOneObservation(t *testing.T) {
	s := chtest.Store(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UnixMicro()
	base := model.Observation{ProjectID: "p", TraceID: "t1", Type: model.TypeSpan, Level: model.LevelDefault,
		Environment: "default", Metadata: `{"k":"v"}`, TraceMetadata: "{}", SampleRate: 1}
	root := base
	root.ID, root.Name, root.IsRoot, root.StartTime, root.EndTime = "root", "agent", true, at, at+2_000_000
	root.Input, root.TraceInput, root.TraceName = `{"q":"big input"}`, `{"q":"big input"}`, "run"
	gen := base
	gen.ID, gen.ParentID, gen.Type, gen.Name, gen.StartTime, gen.EndTime = "gen", "root", model.TypeGeneration, "llm", at+10, at+1_000_000
	gen.Model, gen.Input, gen.Output, gen.ModelParameters = "gpt-4o", `[{"role":"user","content":"hi"}]`, `"hello"`, `{"temperature":0}`
	gen.UsageDetails, gen.CostDetails = map[string]int64{"total": 12}, map[string]float64{"total": 0.5}
	other := gen
	other.TraceID, other.ID = "t2", "elsewhere"
	require.NoError(t, s.InsertObservations(ctx, []model.Observation{root, gen, other}))

	outline, err := s.GetTraceOutline(ctx, "p", "t1")
	require.NoError(t, err)
	require.Len(t, outline.Observations, 2)
	g := outline.Observations[1]
	assert.Equal(t, "gen", g.ID)
	assert.Equal(t, "gpt-4o", g.Model)
	assert.Equal(t, map[string]int64{"total": 12}, g.UsageDetails)
	assert.Empty(t, g.Input, "no text in the outline")
	assert.Empty(t, g.Output)
	assert.Empty(t, g.ModelParameters)
	assert.Equal(t, `{"q":"big input"}`, outline.Input, "the trace's own fields are kept")

	full, err := s.GetTraceObservation(ctx, "p", "t1", "gen")
	require.NoError(t, err)
	assert.Equal(t, `"hello"`, full.Output)
	assert.Equal(t, `{"temperature":0}`, full.ModelParameters)
	_, err = s.GetTraceObservation(ctx, "p", "t1", "elsewhere")
	assert.ErrorIs(t, err, chstore.ErrNotFound, "an observation of another trace")
	_, err = s.GetTraceObservation(ctx, "other-project", "t1", "gen")
	assert.ErrorIs(t, err, chstore.ErrNotFound)
}
