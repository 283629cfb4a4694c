package pricing

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Catalogue is an immutable, compiled set of definitions, kept in match
// order (see the package documentation).
type Catalogue struct {
	entries []*Price
}

// Price is a compiled definition: what a lookup returns.
type Price struct {
	model       Model
	re          *regexp.Regexp
	specificity int
	// tiers are the conditional tiers by ascending priority, then the default.
	tiers []compiledTier
}

type compiledTier struct {
	tier  *Tier
	conds []compiledCondition
}

type compiledCondition struct {
	re    *regexp.Regexp
	op    string
	value float64
	keys  *keyMatches
}

// maxMemoKeys bounds the usage keys a condition remembers, since keys come
// from the data.
const maxMemoKeys = 1024

// keyMatches remembers whether a condition's pattern matches a usage key:
// the same few keys recur on every generation.
type keyMatches struct {
	known sync.Map // string -> bool
	n     atomic.Int32
}

func (c compiledCondition) matches(key string) bool {
	if v, ok := c.keys.known.Load(key); ok {
		return v.(bool)
	}
	m := c.re.MatchString(key)
	if c.keys.n.Load() < maxMemoKeys {
		c.keys.n.Add(1)
		c.keys.known.Store(key, m)
	}
	return m
}

// NewCatalogue validates and compiles models. An invalid definition fails
// the whole catalogue; use Compile to skip them instead.
func NewCatalogue(models []Model) (*Catalogue, error) {
	c, errs := Compile(models)
	if errs != nil {
		return nil, errs
	}
	return c, nil
}

// Compile compiles the valid definitions of models and reports the invalid
// ones, so that one bad project definition does not hide the others.
func Compile(models []Model) (*Catalogue, error) {
	c := &Catalogue{entries: make([]*Price, 0, len(models))}
	var errs []error
	for i := range models {
		p, err := compile(models[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.entries = append(c.entries, p)
	}
	slices.SortFunc(c.entries, func(a, b *Price) int {
		return cmp.Or(
			cmp.Compare(b.specificity, a.specificity),
			b.model.StartDate.Compare(a.model.StartDate),
			cmp.Compare(a.model.Name, b.model.Name),
			cmp.Compare(a.model.ID, b.model.ID),
		)
	})
	return c, errors.Join(errs...)
}

func compile(m Model) (*Price, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	re, err := compilePattern(m.MatchPattern)
	if err != nil {
		return nil, err
	}
	spec, err := specificity(m.MatchPattern)
	if err != nil {
		return nil, err
	}
	// A deep copy, so that neither the caller nor a reader of Model can
	// change a compiled definition.
	p := &Price{model: m.clone(), re: re, specificity: spec}
	for i := range p.model.Tiers {
		t := &p.model.Tiers[i]
		ct := compiledTier{tier: t}
		for _, c := range t.Conditions {
			cc, err := c.compile()
			if err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrInvalidModel, m.Name, err)
			}
			ct.conds = append(ct.conds, cc)
		}
		p.tiers = append(p.tiers, ct)
	}
	slices.SortStableFunc(p.tiers, func(a, b compiledTier) int {
		if a.tier.IsDefault != b.tier.IsDefault {
			if a.tier.IsDefault {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.tier.Priority, b.tier.Priority)
	})
	return p, nil
}

func (c Condition) compile() (compiledCondition, error) {
	switch c.Operator {
	case OpGT, OpGTE, OpLT, OpLTE, OpEQ, OpNEQ:
	default:
		return compiledCondition{}, fmt.Errorf("condition operator %q is not one of gt, gte, lt, lte, eq, neq", c.Operator)
	}
	if c.UsageDetailPattern == "" {
		return compiledCondition{}, errors.New("condition needs a usageDetailPattern")
	}
	p := c.UsageDetailPattern
	if !c.CaseSensitive {
		p = "(?i)" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return compiledCondition{}, fmt.Errorf("condition pattern: %w", err)
	}
	return compiledCondition{re: re, op: c.Operator, value: c.Value, keys: new(keyMatches)}, nil
}

// specificity is the number of characters every name the pattern matches
// must contain: literal characters and character classes count one each,
// optional parts nothing, alternatives their shortest branch.
func specificity(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return minLength(re.Simplify()), nil
}

func minLength(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLength(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLength(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLength(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if l := minLength(s); n < 0 || l < n {
				n = l
			}
		}
		return max(n, 0)
	default: // anchors, empty, star, quest
		return 0
	}
}

// Len is the number of definitions.
func (c *Catalogue) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Models returns copies of the definitions in match order.
func (c *Catalogue) Models() []Model {
	if c == nil {
		return nil
	}
	out := make([]Model, len(c.entries))
	for i, p := range c.entries {
		out[i] = p.Model()
	}
	return out
}

// Find returns the definition that applies to the model name at time at,
// considering this catalogue alone.
func (c *Catalogue) Find(name string, at time.Time) (*Price, bool) {
	return pick(c.appendMatching(nil, name), at)
}

// appendMatching appends, in match order, every definition whose pattern
// matches name, whatever its start date.
func (c *Catalogue) appendMatching(dst []*Price, name string) []*Price {
	if c == nil {
		return dst
	}
	for _, p := range c.entries {
		if p.re.MatchString(name) {
			dst = append(dst, p)
		}
	}
	return dst
}

// pick returns the first candidate in force at time at.
func pick(candidates []*Price, at time.Time) (*Price, bool) {
	for _, p := range candidates {
		if !p.model.StartDate.After(at) {
			return p, true
		}
	}
	return nil, false
}

// Model returns a copy of the definition.
func (p *Price) Model() Model {
	return p.model.clone()
}

// ID is the definition's id.
func (p *Price) ID() string { return p.model.ID }

// Name is the definition's model name.
func (p *Price) Name() string { return p.model.Name }

// TokenizerID is the tokenizer that can estimate usage, or "".
func (p *Price) TokenizerID() string { return p.model.TokenizerID }

// TokenizerConfig is the tokenizer's configuration; nil when none was given.
func (p *Price) TokenizerConfig() *TokenizerConfig { return p.model.TokenizerConfig }
