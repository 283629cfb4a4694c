// Package sampling decides which traces to keep, consistently from the
// trace id, so that every span of a trace gets the same decision on every
// collector, and so that the decision composes with sampling done earlier
// (in the SDK or another collector tier).
//
// # The rule
//
// Two cases, told apart by the span's W3C tracestate:
//
//   - The tracestate carries OpenTelemetry's consistent-probability values
//     (`ot=th:…` and/or `ot=rv:…`): the randomness R is the `rv` value, or
//     else the low 56 bits of the trace id; rate p has the threshold
//     T = (1-p)·2^56 (to 12 significant hex digits), and a span is kept
//     when R ≥ T. An upstream sampler
//     kept the span because R ≥ th, so keeping when R ≥ T keeps exactly
//     the traces with R ≥ max(th, T): sampling at 0.1 after an SDK sampled
//     at 0.5 keeps 10% of the original traffic, not 5%. The kept span's th
//     is raised to T when T is the larger, so later stages compose too.
//   - Otherwise: a span is kept when the low 64 bits of the trace id, read
//     big-endian, are below p·2^64. That is the rule of OpenTelemetry's
//     TraceIdRatioBased sampler in the Go and Python SDKs, so the traces
//     kept here are a subset of those an SDK ratio sampler kept, and the
//     kept fraction of the original traffic is again min(p, SDK rate).
//     Samplers that hash the id differently (the JavaScript and Java SDKs)
//     make an independent decision, and the fractions multiply.
//
// The rate recorded on a kept span is the fraction of the original traffic
// it stands for: min(p, the upstream threshold's rate, an upstream
// glassbox.sample_rate), so that counts and costs can be extrapolated.
package sampling // import "github.com/glassbox-dev/glassbox/internal/sampling"

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// Rates are the sampling rates of one level (the collector's default, a
// project in the configuration, a project's settings in the store): each
// the fraction of traces kept, in [0, 1].
type Rates struct {
	// Rate applies to environments without a rate of their own; nil
	// leaves the decision to the next level.
	Rate *float64 `json:"rate"`
	// Environments are rates by environment name (lower case).
	Environments map[string]float64 `json:"environments,omitempty"`
}

// Lookup returns the rate this level sets for an environment.
func (r Rates) Lookup(env string) (float64, bool) {
	if v, ok := r.Environments[env]; ok {
		return v, true
	}
	if r.Rate != nil {
		return *r.Rate, true
	}
	return 0, false
}

// Source serves the projects' sampling settings. The control plane store
// implements it, and the API server extension exposes it to the collector.
type Source interface {
	// ProjectSampling returns the settings of every project that has any,
	// by project id.
	ProjectSampling(ctx context.Context) (map[string]Rates, error)
}

// Decision is the outcome for one span.
type Decision struct {
	Keep bool
	// Rate is the fraction of the original traffic a kept span stands for.
	Rate float64
	// TraceState is the span's new tracestate, "" when it is unchanged.
	TraceState string
}

const (
	randomnessBits = 56
	maxThreshold   = uint64(1) << randomnessBits // rejects everything
	thresholdHex   = randomnessBits / 4
)

// Decide applies rate to a span of trace id with tracestate traceState.
// prior is the rate an earlier stage recorded (1 when none).
func Decide(id [16]byte, traceState string, rate, prior float64) Decision {
	rate = clamp(rate)
	ot, ok := parseOT(traceState)
	if !ok {
		if rate < 1 && binary.BigEndian.Uint64(id[8:]) >= ratioBound(rate) {
			return Decision{}
		}
		return Decision{Keep: true, Rate: min(rate, prior)}
	}
	r := ot.rv
	if !ot.hasRV {
		r = binary.BigEndian.Uint64(id[8:]) & (maxThreshold - 1)
	}
	t := threshold(rate)
	if r < t {
		return Decision{}
	}
	d := Decision{Keep: true, Rate: min(probability(max(t, ot.th)), prior)}
	if t > ot.th || !ot.hasTH {
		d.TraceState = withThreshold(traceState, t)
	}
	return d
}

func clamp(rate float64) float64 {
	switch {
	case rate >= 1 || math.IsNaN(rate):
		return 1
	case rate <= 0:
		return 0
	}
	return rate
}

// ratioBound is p·2^64: ids whose low 64 bits are below it are kept.
func ratioBound(rate float64) uint64 {
	return uint64(math.Ldexp(rate, 64))
}

// thresholdPrecision is the number of significant hex digits a threshold
// keeps: 48 bits, within float64's precision, so that a rate such as 0.1
// gives the clean threshold e66666666666 rather than rounding noise.
const thresholdPrecision = 12

// threshold is (1-p)·2^56, rounded to thresholdPrecision hex digits.
func threshold(rate float64) uint64 {
	const shift = 4 * (thresholdHex - thresholdPrecision)
	return min(uint64(math.Round(math.Ldexp(1-rate, randomnessBits-shift)))<<shift, maxThreshold)
}

func probability(t uint64) float64 {
	return math.Ldexp(float64(maxThreshold-t), -randomnessBits)
}

// otValues are the consistent-probability values of the `ot` tracestate member.
type otValues struct {
	th, rv       uint64
	hasTH, hasRV bool
}

// parseOT reads th and rv from the tracestate's `ot` member; ok is false
// when neither is present and valid.
func parseOT(ts string) (otValues, bool) {
	var v otValues
	member, found := otMember(ts)
	if !found {
		return v, false
	}
	for part := range strings.SplitSeq(member, ";") {
		key, val, _ := strings.Cut(part, ":")
		switch key {
		case "th":
			if t, ok := parseHex(val, false); ok {
				v.th, v.hasTH = t, true
			}
		case "rv":
			if r, ok := parseHex(val, true); ok {
				v.rv, v.hasRV = r, true
			}
		}
	}
	return v, v.hasTH || v.hasRV
}

// otMember returns the value of the tracestate's `ot` member.
func otMember(ts string) (string, bool) {
	if !strings.Contains(ts, "ot=") {
		return "", false
	}
	for m := range strings.SplitSeq(ts, ",") {
		if val, ok := strings.CutPrefix(strings.TrimSpace(m), "ot="); ok {
			return val, true
		}
	}
	return "", false
}

// parseHex reads a 56-bit value: th may drop trailing zeros (1-14 digits),
// rv has all 14.
func parseHex(s string, exact bool) (uint64, bool) {
	if s == "" || len(s) > thresholdHex || exact && len(s) != thresholdHex {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, false
	}
	return n << (4 * (thresholdHex - len(s))), true
}

// withThreshold returns ts with th set to t in the `ot` member, which moves
// to the front as W3C asks of a modified member; other members and other
// ot values are kept.
func withThreshold(ts string, t uint64) string {
	th := "th:" + formatThreshold(t)
	var rest []string
	var ot []string
	for m := range strings.SplitSeq(ts, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		val, isOT := strings.CutPrefix(m, "ot=")
		if !isOT {
			rest = append(rest, m)
			continue
		}
		for part := range strings.SplitSeq(val, ";") {
			if part != "" && !strings.HasPrefix(part, "th:") {
				ot = append(ot, part)
			}
		}
	}
	member := "ot=" + strings.Join(append([]string{th}, ot...), ";")
	return strings.Join(append([]string{member}, rest...), ",")
}

// formatThreshold writes t in 14 hex digits without trailing zeros; "0"
// for a threshold of zero (keep everything).
func formatThreshold(t uint64) string {
	if t == 0 {
		return "0"
	}
	s := strconv.FormatUint(t, 16)
	s = strings.Repeat("0", thresholdHex-len(s)) + s
	return strings.TrimRight(s, "0")
}
