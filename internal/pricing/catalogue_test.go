package pricing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flat returns a definition with one default tier.
func flat(id, name, pattern string, prices map[string]float64) Model {
	return Model{
		ID: id, Name: name, MatchPattern: pattern, Unit: DefaultUnit,
		Tiers: []Tier{{Name: "Standard", IsDefault: true, Prices: prices}},
	}
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSpecificity(t *testing.T) {
	for pattern, want := range map[string]int{
		`(?i)^(openai/)?gpt-4o$`:          6,
		`^gpt-4o(-\d{4}-\d{2}-\d{2})?$`:   6,
		`^gpt-4o-2024-05-13$`:             17,
		`gpt`:                             3,
		`.*`:                              0,
		`^(claude-3-opus|claude-opus-4)$`: 13,
		`^a+b{3}[xy]$`:                    5,
		`(?i)^(us\.)?(anthropic\.)?claude-sonnet-4`: 15,
	} {
		got, err := specificity(pattern)
		require.NoError(t, err)
		assert.Equal(t, want, got, pattern)
	}
}

func TestCatalogueMatchOrder(t *testing.T) {
	c, err := NewCatalogue([]Model{
		flat("generic", "gpt-4o", `^gpt-4o(-\d{4}-\d{2}-\d{2})?$`, map[string]float64{"input": 1}),
		flat("snapshot", "gpt-4o-2024-05-13", `^gpt-4o-2024-05-13$`, map[string]float64{"input": 2}),
		flat("anything", "catch-all", `.*`, map[string]float64{"input": 3}),
	})
	require.NoError(t, err)
	for name, want := range map[string]string{
		"gpt-4o":            "generic",
		"GPT-4O-2024-08-06": "generic",
		"gpt-4o-2024-05-13": "snapshot",
		"llama":             "anything",
	} {
		p, ok := c.Find(name, farFuture)
		require.True(t, ok, name)
		assert.Equal(t, want, p.ID(), name)
	}
}

func TestCatalogueStartDates(t *testing.T) {
	old := flat("old", "m", `^m$`, map[string]float64{"input": 1})
	old.StartDate = day("2025-01-01")
	cut := flat("cut", "m", `^m$`, map[string]float64{"input": 0.5})
	cut.StartDate = day("2025-06-10")
	c, err := NewCatalogue([]Model{old, cut})
	require.NoError(t, err)

	_, ok := c.Find("m", day("2024-12-31"))
	assert.False(t, ok, "no price before the first start date")
	for at, want := range map[string]string{
		"2025-01-01": "old", "2025-06-09": "old", "2025-06-10": "cut", "2030-01-01": "cut",
	} {
		p, ok := c.Find("m", day(at))
		require.True(t, ok, at)
		assert.Equal(t, want, p.ID(), at)
	}
}

func TestValidate(t *testing.T) {
	valid := flat("v", "m", `^m$`, map[string]float64{"input": 1})
	require.NoError(t, valid.Validate())

	tiered := valid
	tiered.Tiers = append([]Tier{}, valid.Tiers...)
	tiered.Tiers = append(tiered.Tiers, Tier{Name: "Long", Priority: 1, Prices: map[string]float64{"input": 2},
		Conditions: []Condition{{UsageDetailPattern: "input", Operator: OpGT, Value: 10}}})
	require.NoError(t, tiered.Validate())

	for name, tc := range map[string]struct {
		edit func(m *Model)
		want string
	}{
		"no name":    {func(m *Model) { m.Name = "" }, "model name is required"},
		"bad regexp": {func(m *Model) { m.MatchPattern = "(" }, "match pattern"},
		"tokenizer":  {func(m *Model) { m.TokenizerID = "sentencepiece" }, "tokenizer"},
		"no default": {func(m *Model) { m.Tiers[0].IsDefault = false; m.Tiers[0].Conditions = tiered.Tiers[1].Conditions }, "exactly one default tier"},
		"negative":   {func(m *Model) { m.Tiers[0].Prices = map[string]float64{"input": -1} }, "finite number >= 0"},
		"no prices":  {func(m *Model) { m.Tiers[0].Prices = nil }, "at least one price"},
		"default with conditions": {func(m *Model) { m.Tiers[0].Conditions = tiered.Tiers[1].Conditions },
			"default tier takes no conditions"},
		"tier without conditions": {func(m *Model) { m.Tiers[1].Conditions = nil }, "needs at least one condition"},
		"operator": {func(m *Model) {
			m.Tiers[1].Conditions = []Condition{{UsageDetailPattern: "input", Operator: "between"}}
		}, "operator"},
		"same priority": {func(m *Model) {
			m.Tiers = append(m.Tiers, Tier{Name: "Other", Priority: 1, Prices: map[string]float64{"input": 3},
				Conditions: tiered.Tiers[1].Conditions})
		}, "priority 1 is used twice"},
	} {
		t.Run(name, func(t *testing.T) {
			m := tiered.clone()
			tc.edit(&m)
			err := m.Validate()
			require.ErrorIs(t, err, ErrInvalidModel)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestCompileSkipsInvalidDefinitions(t *testing.T) {
	bad := flat("bad", "bad", "(", map[string]float64{"input": 1})
	good := flat("good", "good", "^good$", map[string]float64{"input": 1})
	c, err := Compile([]Model{bad, good})
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.Equal(t, 1, c.Len())
	_, ok := c.Find("good", farFuture)
	assert.True(t, ok)

	_, err = NewCatalogue([]Model{bad, good})
	assert.ErrorIs(t, err, ErrInvalidModel)
}

func TestModelsAreCopies(t *testing.T) {
	m := flat("a", "a", "^a$", map[string]float64{"input": 1})
	c, err := NewCatalogue([]Model{m})
	require.NoError(t, err)
	m.Tiers[0].Prices["input"] = 100
	got := c.Models()
	require.Len(t, got, 1)
	assert.Equal(t, 1.0, got[0].Tiers[0].Prices["input"], "the caller's map is not shared")
	got[0].Tiers[0].Prices["input"] = 100
	assert.Equal(t, 1.0, c.Models()[0].Tiers[0].Prices["input"], "the returned map is not shared")
}
