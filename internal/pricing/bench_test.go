package pricing

import (
	"fmt"
	"testing"
	"time"
)

// benchPricer is a pricer over the built-in catalogue plus enough project
// definitions for 500 in all, the size the processor benchmark assumes.
func benchPricer(b *testing.B) (*Pricer, []string) {
	b.Helper()
	p := NewPricer(builtinCatalogue(b), DefaultCacheSize)
	var custom []Model
	for i := 0; p.Builtin().Len()+len(custom) < 500; i++ {
		custom = append(custom, flat(fmt.Sprint("c", i), fmt.Sprint("custom-", i),
			fmt.Sprintf(`^(acme/)?custom-%d(-v\d+)?$`, i), map[string]float64{"input": 1e-6, "output": 2e-6}))
	}
	if err := p.SetProjectModels(map[string][]Model{"proj": custom}); err != nil {
		b.Fatal(err)
	}
	return p, []string{"gpt-4o", "claude-sonnet-4-5-20250929", "gemini-2.5-pro", "custom-7", "deepseek-chat", "unknown"}
}

func BenchmarkFind(b *testing.B) {
	p, names := benchPricer(b)
	at := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)
	b.Run("cached", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p.Find("proj", names[i%len(names)], at)
			i++
		}
	})
	b.Run("uncached", func(b *testing.B) {
		i := 0
		for b.Loop() {
			// A fresh name every time: a scan of all 500 patterns.
			p.Find("proj", fmt.Sprint("model-", i), at)
			i++
		}
	})
}

func BenchmarkCost(b *testing.B) {
	p, _ := benchPricer(b)
	at := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)
	usage := map[string]int64{"input": 1000, "input_cached_tokens": 200, "output": 300, "output_reasoning_tokens": 50, "total": 1550}
	for _, name := range []string{"gpt-4o", "gemini-2.5-pro"} {
		price, ok := p.Find("proj", name, at)
		if !ok {
			b.Fatal(name)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				price.Cost(usage)
			}
		})
	}
}
