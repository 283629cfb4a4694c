// Package costing is the one rule by which Glassbox fills in the usage and
// cost of an observation that names a model. The glassbox_cost processor
// applies it to OTLP spans, the ClickHouse exporter's pricing to the
// observations it stores and the ingestion API to the events of older SDKs,
// so all three price alike (Service holds what the first two share).
//
// The rule: a cost the client sent wins; otherwise the definition for the
// project's model name at the observation's start is found (the project's
// own definitions first, then the built-in ones, see package pricing), a
// generation or embedding that reported no usage may have it counted from
// its input and output, and the usage is priced. An unknown model or a
// usage without any priced key leaves the cost empty, never 0.
package costing // import "github.com/glassbox-dev/glassbox/internal/pricing/costing"

import (
	"maps"
	"math"
	"time"

	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/pricing"
	"github.com/glassbox-dev/glassbox/internal/pricing/tokenize"
)

// Result says what Apply did with an observation.
type Result int

// Results. Every one but NoModel concerns an observation that names a model.
const (
	NoModel      Result = iota // names no model: untouched
	ClientCost                 // carries a cost of its own: kept
	Priced                     // priced by its reported usage
	Estimated                  // usage counted from input and output, then priced
	UnknownModel               // no definition matches the model name
	NoUsage                    // no usage reported and none estimated
	Unpriced                   // no key of the usage has a price
	NumResults                 // the number of results
)

var resultNames = [NumResults]string{
	"no_model", "client_cost", "priced", "estimated", "unknown_model", "no_usage", "unpriced",
}

// String is the result's name in telemetry: priced, unknown_model, ….
func (r Result) String() string {
	if r < 0 || r >= NumResults {
		return "unknown"
	}
	return resultNames[r]
}

// Estimation configures the counting of usage that was not reported.
type Estimation struct {
	// Enabled counts the tokens of generations and embeddings that did not
	// fail, for models whose definition names the openai tokenizer.
	Enabled bool
	// MaxBytes skips estimation when input and output together are larger,
	// bounding the time one observation can take.
	MaxBytes int
}

// DefaultEstimation is estimation on, up to 256 KiB of input and output.
var DefaultEstimation = Estimation{Enabled: true, MaxBytes: 256 << 10}

// Apply applies the rule to o for project. The definition is the one in
// force at o's start time, or at now when o has none. When it prices o it
// sets o.CostDetails, and for an estimate o.UsageDetails and
// o.UsageEstimated; otherwise o is left as it was.
//
// text returns the observation whose type, level, input and output an
// estimate reads; nil means o. The processor maps a span's resource only
// when an estimate needs it. The error, with NoUsage, says why an estimate
// failed.
func Apply(pricer *pricing.Pricer, project string, o *model.Observation, now time.Time, est Estimation, text func() model.Observation) (Result, error) {
	if o.Model == "" {
		return NoModel, nil
	}
	if len(o.CostDetails) > 0 {
		return ClientCost, nil
	}
	at := now
	if o.StartTime != 0 {
		at = time.UnixMicro(o.StartTime)
	}
	price, ok := pricer.Find(project, o.Model, at)
	if !ok {
		return UnknownModel, nil
	}
	usage, result := o.UsageDetails, Priced
	if len(usage) == 0 {
		var err error
		if usage, err = estimate(price, o, est, text); usage == nil {
			return NoUsage, err
		}
		result = Estimated
	}
	cost, ok := price.Cost(usage)
	if !ok {
		return Unpriced, nil
	}
	o.CostDetails = cost.Details
	if result == Estimated {
		o.UsageDetails, o.UsageEstimated = usage, true
	}
	return result, nil
}

// estimate counts the tokens of a generation or embedding that reported no
// usage, when its model has an offline tokenizer; nil otherwise. As in
// Langfuse, failed generations are not estimated.
func estimate(price *pricing.Price, o *model.Observation, est Estimation, text func() model.Observation) (map[string]int64, error) {
	if !est.Enabled || price.TokenizerID() != pricing.TokenizerOpenAI {
		return nil, nil
	}
	src := o
	if text != nil {
		full := text()
		src = &full
	}
	if src.Type != model.TypeGeneration && src.Type != model.TypeEmbedding || src.Level == model.LevelError {
		return nil, nil
	}
	if src.Input == "" && src.Output == "" || len(src.Input)+len(src.Output) > est.MaxBytes {
		return nil, nil
	}
	return tokenize.Estimate(price.TokenizerConfig(), src.Input, src.Output)
}

// Reset removes from o the cost, and an estimated usage, that Apply would
// derive for it, and keeps what the client sent. A stored observation that
// is about to change is reset first and priced again afterwards, so that a
// new usage or model is not hidden behind the old derived cost, which Apply
// would otherwise keep as the client's.
//
// Stored rows do not record who set the cost, so a cost counts as derived
// when Apply gives the same for o's model and usage (an estimated usage
// when estimating reproduces it).
func Reset(pricer *pricing.Pricer, project string, o *model.Observation, now time.Time, est Estimation) {
	if len(o.CostDetails) == 0 {
		return
	}
	unpriced := *o
	unpriced.CostDetails, unpriced.UsageEstimated = nil, false
	counted := unpriced
	counted.UsageDetails = nil
	if r, _ := Apply(pricer, project, &counted, now, est, nil); r == Estimated &&
		maps.Equal(counted.UsageDetails, o.UsageDetails) && sameCost(counted.CostDetails, o.CostDetails) {
		o.CostDetails, o.UsageDetails, o.UsageEstimated = nil, nil, false
		return
	}
	if r, _ := Apply(pricer, project, &unpriced, now, est, nil); r == Priced && sameCost(unpriced.CostDetails, o.CostDetails) {
		o.CostDetails = nil
	}
}

// sameCost compares cost details within rounding: a total sums its parts
// in map order, and storage may round the last digit.
func sameCost(a, b map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y float64) bool {
		return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
	})
}
