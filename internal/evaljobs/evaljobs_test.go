package evaljobs

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/model"
)

func randomTraceIDs(n int) []string {
	ids := make([]string, n)
	b := make([]byte, 16)
	for i := range ids {
		_, _ = rand.Read(b)
		ids[i] = hex.EncodeToString(b)
	}
	return ids
}

func TestSampledKeepsTheRateAndIsConsistent(t *testing.T) {
	ids := randomTraceIDs(20000)
	for _, rate := range []float64{0.1, 0.5, 0.9} {
		kept := 0
		for _, id := range ids {
			if Sampled("rule-1", id, rate) {
				kept++
			}
			assert.Equal(t, Sampled("rule-1", id, rate), Sampled("rule-1", id, rate))
		}
		// Binomial standard deviation at n=20000 is at most 0.0036; 4 sigma.
		assert.InDelta(t, rate, float64(kept)/float64(len(ids)), 0.015, "rate %v", rate)
	}
}

func TestSampledBounds(t *testing.T) {
	for _, id := range randomTraceIDs(100) {
		assert.True(t, Sampled("r", id, 1))
		assert.True(t, Sampled("r", id, 1.5))
		assert.False(t, Sampled("r", id, 0))
		assert.False(t, Sampled("r", id, -1))
	}
}

// Two rules at 0.5 pick independent halves, and neither follows the
// storage sampler's rule (low 64 bits of the id below rate·2^64).
func TestSampledIsIndependentAcrossRules(t *testing.T) {
	ids := randomTraceIDs(20000)
	both, lowHalfKept, lowHalf := 0, 0, 0
	for _, id := range ids {
		a, b := Sampled("rule-a", id, 0.5), Sampled("rule-b", id, 0.5)
		if a && b {
			both++
		}
		if id[16] < '8' { // low 64 bits below 2^63
			lowHalf++
			if a {
				lowHalfKept++
			}
		}
	}
	assert.InDelta(t, 0.25, float64(both)/float64(len(ids)), 0.02)
	assert.InDelta(t, 0.5, float64(lowHalfKept)/float64(lowHalf), 0.03)
}

func TestCheckTarget(t *testing.T) {
	require.NoError(t, CheckTarget(TargetTrace))
	require.NoError(t, CheckTarget(TargetObservation))
	assert.ErrorIs(t, CheckTarget("session"), ErrInvalidTarget)
}

func TestRuleSelectsAndJobFor(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	gen := &model.Observation{ProjectID: "p", TraceID: "0123456789abcdef0123456789abcdef", ID: "00000000000000aa",
		Type: model.TypeGeneration, Name: "llm", TraceName: "chat", Metadata: "{}", TraceMetadata: "{}"}
	traceRule := Rule{ID: "r1", ProjectID: "p", Target: TargetTrace, SamplingRate: 1, Delay: time.Minute,
		Filter: Filter{{Field: FieldName, Operator: OpEquals, Value: "chat"}}}
	obsRule := Rule{ID: "r2", ProjectID: "p", Target: TargetObservation, SamplingRate: 1,
		Filter: Filter{{Field: FieldType, Operator: OpAnyOf, Values: []string{model.TypeGeneration}}}}

	assert.True(t, traceRule.Selects(gen), "the span carries the trace name")
	assert.True(t, obsRule.Selects(gen))
	assert.Equal(t, Job{ProjectID: "p", RuleID: "r1", TraceID: gen.TraceID, Due: now.Add(time.Minute)}, traceRule.JobFor(gen, now))
	assert.Equal(t, Job{ProjectID: "p", RuleID: "r2", TraceID: gen.TraceID, ObservationID: gen.ID, Due: now}, obsRule.JobFor(gen, now))

	span := &model.Observation{TraceID: gen.TraceID, ID: "00000000000000bb", Type: model.TypeSpan, Name: "chat", IsRoot: true}
	assert.True(t, traceRule.Selects(span), "an unnamed root names its trace")
	span.IsRoot = false
	assert.False(t, traceRule.Selects(span), "a child's own name is not the trace's")
	assert.False(t, obsRule.Selects(span))

	traceRule.SamplingRate = 0
	assert.False(t, traceRule.Selects(gen))
}
