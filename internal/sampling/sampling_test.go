package sampling

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ids returns n random trace ids from a fixed seed, so runs are repeatable.
func ids(n int) [][16]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][16]byte, n)
	for i := range out {
		binary.BigEndian.PutUint64(out[i][:8], rng.Uint64())
		binary.BigEndian.PutUint64(out[i][8:], rng.Uint64())
	}
	return out
}

// within asserts that k of n kept is within five standard deviations of
// the binomial expectation n·p.
func within(t *testing.T, k, n int, p float64, msg string) {
	t.Helper()
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	assert.InDelta(t, float64(n)*p, float64(k), 5*sigma+1, "%s: kept %d of %d at %v", msg, k, n, p)
}

func TestObservedFraction(t *testing.T) {
	all := ids(200_000)
	for _, p := range []float64{0.01, 0.1, 0.5, 0.9} {
		for _, ts := range []string{"", "ot=th:0"} {
			kept := 0
			for _, id := range all {
				d := Decide(id, ts, p, 1)
				if d.Keep {
					kept++
					assert.InDelta(t, p, d.Rate, 1e-12)
				}
			}
			within(t, kept, len(all), p, "tracestate "+ts)
		}
	}
}

func TestEdgeRates(t *testing.T) {
	for _, id := range ids(1000) {
		assert.True(t, Decide(id, "", 1, 1).Keep)
		assert.True(t, Decide(id, "", 7, 1).Keep, "above 1 keeps all")
		assert.True(t, Decide(id, "ot=th:0", 1, 1).Keep)
		assert.False(t, Decide(id, "", 0, 1).Keep)
		assert.False(t, Decide(id, "ot=th:0", -1, 1).Keep)
	}
	d := Decide([16]byte{}, "", 1, 1)
	assert.Equal(t, Decision{Keep: true, Rate: 1}, d, "nothing to record or rewrite")
}

// sdkRatio is the OpenTelemetry Go SDK's TraceIDRatioBased sampler.
func sdkRatio(rate float64) func([16]byte) bool {
	s := trace.TraceIDRatioBased(rate)
	return func(id [16]byte) bool {
		r := s.ShouldSample(trace.SamplingParameters{ParentContext: context.Background(), TraceID: oteltrace.TraceID(id)})
		return r.Decision == trace.RecordAndSample
	}
}

func TestComposesWithTheSDKRatioSampler(t *testing.T) {
	all := ids(200_000)
	sdk := sdkRatio(0.5)
	var arrived [][16]byte
	for _, id := range all {
		if sdk(id) {
			arrived = append(arrived, id)
		}
	}
	within(t, len(arrived), len(all), 0.5, "SDK at 0.5")

	kept := 0
	for _, id := range arrived {
		if Decide(id, "", 0.1, 1).Keep {
			kept++
		}
	}
	within(t, kept, len(all), 0.1, "0.1 after the SDK's 0.5 keeps 10% of the original traffic")

	for _, id := range arrived {
		require.True(t, Decide(id, "", 0.8, 1).Keep, "a higher rate keeps every trace the SDK kept")
	}
}

func TestComposesWithConsistentProbabilitySampling(t *testing.T) {
	all := ids(200_000)
	upstream := threshold(0.5)
	require.Equal(t, "8", formatThreshold(upstream))
	var arrived [][16]byte
	for _, id := range all {
		if binary.BigEndian.Uint64(id[8:])&(maxThreshold-1) >= upstream {
			arrived = append(arrived, id)
		}
	}
	kept := 0
	for _, id := range arrived {
		d := Decide(id, "ot=th:8,vendor=x", 0.1, 1)
		if d.Keep {
			kept++
			assert.InDelta(t, 0.1, d.Rate, 1e-12)
			assert.Equal(t, "ot=th:e66666666666,vendor=x", d.TraceState)
		}
	}
	within(t, kept, len(all), 0.1, "0.1 after an upstream 0.5 keeps 10% of the original traffic")

	for _, id := range arrived {
		d := Decide(id, "ot=th:8,vendor=x", 0.8, 1)
		require.True(t, d.Keep, "a higher rate keeps every upstream trace")
		assert.InDelta(t, 0.5, d.Rate, 1e-12, "recorded: the upstream rate")
		assert.Empty(t, d.TraceState, "the threshold stays")
	}
}

func TestRandomnessValue(t *testing.T) {
	// rv decides instead of the trace id.
	var id [16]byte // low 56 bits zero: dropped at any rate below 1 by the id
	assert.True(t, Decide(id, "ot=rv:ffffffffffffff", 0.01, 1).Keep)
	assert.False(t, Decide(id, "ot=rv:00000000000000", 0.99, 1).Keep)
	d := Decide(id, "ot=rv:ffffffffffffff;x:1", 0.5, 1)
	assert.Equal(t, "ot=th:8;rv:ffffffffffffff;x:1", d.TraceState)
}

func TestPriorRate(t *testing.T) {
	for _, id := range ids(100) {
		if d := Decide(id, "", 0.5, 0.2); d.Keep {
			assert.Equal(t, 0.2, d.Rate, "an upstream glassbox.sample_rate below the rate")
		}
		assert.Equal(t, 0.3, Decide(id, "", 1, 0.3).Rate)
	}
}

func TestTraceStateParsing(t *testing.T) {
	for ts, want := range map[string]struct {
		v  otValues
		ok bool
	}{
		"":                               {ok: false},
		"vendor=a":                       {ok: false},
		"ot=th:8":                        {v: otValues{th: 8 << 52, hasTH: true}, ok: true},
		"a=b, ot=th:c;rv:0123456789abcd": {v: otValues{th: 0xc << 52, hasTH: true, rv: 0x0123456789abcd, hasRV: true}, ok: true},
		"ot=th:0":                        {v: otValues{hasTH: true}, ok: true},
		"ot=th:123456789abcdef0":         {ok: false}, // 16 digits: invalid
		"ot=th:xyz":                      {ok: false},
		"ot=rv:123":                      {ok: false}, // rv needs 14 digits
		"not=th:8":                       {ok: false},
	} {
		v, ok := parseOT(ts)
		assert.Equal(t, want.ok, ok, ts)
		if want.ok {
			assert.Equal(t, want.v, v, ts)
		}
	}
}

func TestWithThreshold(t *testing.T) {
	assert.Equal(t, "ot=th:c", withThreshold("", threshold(0.25)))
	assert.Equal(t, "ot=th:c;rv:0123456789abcd,a=b",
		withThreshold("a=b,ot=th:8;rv:0123456789abcd", threshold(0.25)))
	assert.Equal(t, "ot=th:0", withThreshold("ot=th:8", 0))
	assert.Equal(t, "fffffffffffff", formatThreshold(maxThreshold-(1<<4)))
}

func TestRatesLookup(t *testing.T) {
	half := 0.5
	r := Rates{Rate: &half, Environments: map[string]float64{"production": 0.1}}
	v, ok := r.Lookup("production")
	assert.True(t, ok)
	assert.Equal(t, 0.1, v)
	v, ok = r.Lookup("staging")
	assert.True(t, ok)
	assert.Equal(t, 0.5, v)
	_, ok = Rates{Environments: map[string]float64{"production": 0.1}}.Lookup("staging")
	assert.False(t, ok, "no rate: the next level decides")
}
