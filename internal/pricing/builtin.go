package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// builtinJSON is the built-in catalogue. Each entry is a model name, its
// match pattern, an optional start date (YYYY-MM-DD, UTC) from which its
// prices apply, an optional tokenizer, the default tier's prices in USD per
// token and optional conditional tiers. A price change is a second entry
// with the same name and pattern and a later start date.
//
//go:embed builtin.json
var builtinJSON []byte

// builtinFile is the shape of builtin.json.
type builtinFile struct {
	Models []builtinEntry `json:"models"`
}

type builtinEntry struct {
	Name           string             `json:"name"`
	Match          string             `json:"match"`
	Start          string             `json:"start"`
	Tokenizer      string             `json:"tokenizer"`
	TokenizerModel string             `json:"tokenizerModel"`
	Prices         map[string]float64 `json:"prices"`
	Tiers          []builtinTier      `json:"tiers"`
}

type builtinTier struct {
	Name       string             `json:"name"`
	Priority   int                `json:"priority"`
	Conditions []Condition        `json:"conditions"`
	Prices     map[string]float64 `json:"prices"`
}

// BuiltinPrefix starts the id of every built-in definition.
const BuiltinPrefix = "glassbox-"

var builtin = sync.OnceValues(func() (*Catalogue, error) {
	models, err := parseBuiltin(builtinJSON)
	if err != nil {
		return nil, err
	}
	return NewCatalogue(models)
})

// Builtin returns the compiled built-in catalogue.
func Builtin() (*Catalogue, error) {
	return builtin()
}

// parseBuiltin decodes the catalogue file strictly and gives every entry a
// stable id derived from its name and start date.
func parseBuiltin(raw []byte) ([]Model, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f builtinFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("built-in catalogue: %w", err)
	}
	models := make([]Model, 0, len(f.Models))
	ids := make(map[string]bool, len(f.Models))
	for _, e := range f.Models {
		m := Model{
			Name:         e.Name,
			MatchPattern: e.Match,
			Unit:         DefaultUnit,
			TokenizerID:  e.Tokenizer,
		}
		if e.TokenizerModel != "" {
			m.TokenizerConfig = &TokenizerConfig{TokenizerModel: e.TokenizerModel}
		}
		id := BuiltinPrefix + sanitizeID(e.Name)
		if e.Start != "" {
			start, err := time.Parse(time.DateOnly, e.Start)
			if err != nil {
				return nil, fmt.Errorf("built-in catalogue: %s: start date: %w", e.Name, err)
			}
			m.StartDate = start
			id += "-" + start.Format("20060102")
		}
		if ids[id] {
			return nil, fmt.Errorf("built-in catalogue: %s: duplicate id %s", e.Name, id)
		}
		ids[id] = true
		m.ID = id
		m.Tiers = append(m.Tiers, Tier{
			ID: id + "-standard", Name: DefaultTierName, IsDefault: true, Prices: e.Prices, Conditions: []Condition{},
		})
		for _, t := range e.Tiers {
			m.Tiers = append(m.Tiers, Tier{
				ID:         id + "-" + sanitizeID(strings.ToLower(t.Name)),
				Name:       t.Name,
				Priority:   t.Priority,
				Conditions: t.Conditions,
				Prices:     t.Prices,
			})
		}
		models = append(models, m)
	}
	return models, nil
}

// sanitizeID keeps the characters that are safe in a URL path segment.
func sanitizeID(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
}
