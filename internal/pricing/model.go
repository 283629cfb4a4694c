// Package pricing prices generations: a catalogue of model definitions (the
// built-in one kept in builtin.json, plus each project's own models), the
// rule that picks the definition for a model name at a point in time, and
// the cost of a usage under that definition.
//
// # Matching
//
// A definition applies to a model name when its match pattern (an RE2
// regular expression, always matched case-insensitively) matches the name
// and its start date is not after the generation's start. Among the
// definitions that apply, the first in this order wins:
//
//  1. the project's own definitions before the built-in ones;
//  2. the more specific pattern: the one that requires more characters of
//     the name, counting each literal character and each character class
//     once and optional or alternative parts at their shortest (so
//     `^gpt-4o-2024-05-13$` beats `^gpt-4o(-\d{4}-\d{2}-\d{2})?$`);
//  3. the later start date, which is how a price change is recorded: a new
//     definition with the same pattern and the date the new price applies;
//  4. model name and id, for a stable order.
//
// # Cost
//
// A definition has pricing tiers: one default tier and optional conditional
// ones tried by ascending priority; a tier applies when all its conditions
// hold, each comparing the sum of the usage values whose key matches a
// pattern with a number (long-context prices). Under the chosen tier every
// usage key is priced per unit (USD per token for token units): by its own
// price, else by the price of its alias (keyAliases), else, for input_* and
// output_* detail keys, by the input or output price. The fallback keeps a
// detail that has no price of its own (cached or reasoning tokens of a
// model priced only for input and output) from silently costing nothing,
// since normalised usage counts those tokens only in the detail key. The
// total is the price of "total" times the total units when the tier prices
// "total", else the sum of the per-key costs. A usage with no priced key
// has no cost: an unknown price is left empty rather than reported as 0.
package pricing // import "github.com/glassbox-dev/glassbox/internal/pricing"

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"time"
)

// Usage keys with a meaning of their own in pricing.
const (
	KeyInput  = "input"
	KeyOutput = "output"
	KeyTotal  = "total"
)

// Tokenizers that usage estimation knows.
const (
	TokenizerOpenAI = "openai"
	TokenizerClaude = "claude"
)

// DefaultUnit is the unit of a model without one.
const DefaultUnit = "TOKENS"

// Model is one price definition for the model names its pattern matches.
type Model struct {
	ID string
	// ProjectID is empty for built-in definitions.
	ProjectID    string
	Name         string
	MatchPattern string
	// StartDate is when the prices start to apply; zero means always.
	StartDate time.Time
	Unit      string
	// TokenizerID names the tokenizer that can estimate usage ("openai",
	// "claude"), empty when none is known.
	TokenizerID     string
	TokenizerConfig *TokenizerConfig
	Tiers           []Tier
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// TokenizerConfig configures usage estimation, in Langfuse's shape.
type TokenizerConfig struct {
	// TokenizerModel is the model whose encoding counts tokens (gpt-4o).
	TokenizerModel string `json:"tokenizerModel,omitempty"`
	// TokensPerMessage and TokensPerName are the chat-format overheads.
	TokensPerMessage int `json:"tokensPerMessage,omitempty"`
	TokensPerName    int `json:"tokensPerName,omitempty"`
}

// DefaultTierName names the default tier, as in Langfuse.
const DefaultTierName = "Standard"

// FlatTiers are the tiers of a model with one set of prices for all usage:
// a single default tier without conditions.
func FlatTiers(prices map[string]float64) []Tier {
	return []Tier{{Name: DefaultTierName, IsDefault: true, Prices: prices}}
}

// Tier is one set of prices and the conditions under which it applies.
type Tier struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	IsDefault  bool        `json:"isDefault"`
	Priority   int         `json:"priority"`
	Conditions []Condition `json:"conditions"`
	// Prices are USD per unit, by usage key.
	Prices map[string]float64 `json:"prices"`
}

// Condition compares the sum of the usage values whose key matches
// UsageDetailPattern with Value.
type Condition struct {
	UsageDetailPattern string  `json:"usageDetailPattern"`
	Operator           string  `json:"operator"`
	Value              float64 `json:"value"`
	CaseSensitive      bool    `json:"caseSensitive,omitempty"`
}

// Condition operators.
const (
	OpGT  = "gt"
	OpGTE = "gte"
	OpLT  = "lt"
	OpLTE = "lte"
	OpEQ  = "eq"
	OpNEQ = "neq"
)

// ErrInvalidModel marks a definition that cannot be used.
var ErrInvalidModel = errors.New("invalid model definition")

// DefaultTier returns the tier that applies when no other does.
func (m *Model) DefaultTier() *Tier {
	for i := range m.Tiers {
		if m.Tiers[i].IsDefault {
			return &m.Tiers[i]
		}
	}
	return nil
}

// clone copies m with tiers, conditions, prices and tokenizer config of its own.
func (m Model) clone() Model {
	if m.TokenizerConfig != nil {
		tc := *m.TokenizerConfig
		m.TokenizerConfig = &tc
	}
	m.Tiers = slices.Clone(m.Tiers)
	for i := range m.Tiers {
		m.Tiers[i].Conditions = slices.Clone(m.Tiers[i].Conditions)
		m.Tiers[i].Prices = maps.Clone(m.Tiers[i].Prices)
	}
	return m
}

// Validate checks a definition the way it must hold before it is stored or
// compiled: a name, a pattern that compiles, exactly one default tier
// without conditions, conditional tiers with conditions and distinct
// priorities, and finite non-negative prices.
func (m *Model) Validate() error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("model name is required"))
	}
	if m.MatchPattern == "" {
		errs = append(errs, errors.New("match pattern is required"))
	} else if _, err := compilePattern(m.MatchPattern); err != nil {
		errs = append(errs, fmt.Errorf("match pattern: %w", err))
	}
	switch m.TokenizerID {
	case "", TokenizerOpenAI, TokenizerClaude:
	default:
		errs = append(errs, fmt.Errorf("tokenizer %q is not one of %q, %q", m.TokenizerID, TokenizerOpenAI, TokenizerClaude))
	}
	defaults := 0
	priorities := map[int]bool{}
	for i := range m.Tiers {
		t := &m.Tiers[i]
		if err := t.validate(); err != nil {
			errs = append(errs, fmt.Errorf("tier %q: %w", t.Name, err))
		}
		if t.IsDefault {
			defaults++
			continue
		}
		if priorities[t.Priority] {
			errs = append(errs, fmt.Errorf("tier %q: priority %d is used twice", t.Name, t.Priority))
		}
		priorities[t.Priority] = true
	}
	if defaults != 1 {
		errs = append(errs, fmt.Errorf("exactly one default tier is required, found %d", defaults))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w %q: %w", ErrInvalidModel, m.Name, err)
	}
	return nil
}

func (t *Tier) validate() error {
	var errs []error
	if t.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if len(t.Prices) == 0 {
		errs = append(errs, errors.New("at least one price is required"))
	}
	for k, p := range t.Prices {
		if k == "" {
			errs = append(errs, errors.New("price with an empty usage key"))
		}
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			errs = append(errs, fmt.Errorf("price of %q must be a finite number >= 0", k))
		}
	}
	switch {
	case t.IsDefault && len(t.Conditions) > 0:
		errs = append(errs, errors.New("the default tier takes no conditions"))
	case !t.IsDefault && len(t.Conditions) == 0:
		errs = append(errs, errors.New("a non-default tier needs at least one condition"))
	}
	for _, c := range t.Conditions {
		if _, err := c.compile(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// compilePattern compiles a match pattern case-insensitively, whether or
// not it carries the (?i) flag itself.
func compilePattern(p string) (*regexp.Regexp, error) {
	return regexp.Compile("(?i)" + p)
}
