package mapping

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzObservations maps whatever OTLP/JSON decodes: the mapping must never
// panic and must always produce valid JSON text where it promises JSON.
func FuzzObservations(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*", "input.json"))
	for _, in := range inputs {
		if raw, err := os.ReadFile(in); err == nil {
			f.Add(raw)
		}
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"scope":{"name":"ai"},"spans":[{"attributes":[` +
		`{"key":"gen_ai.prompt.0.a.1","value":{"stringValue":"x"}},` +
		`{"key":"langfuse.observation.usage_details","value":{"stringValue":"{\"a\":{\"b\":1}}"}},` +
		`{"key":"gen_ai.usage.input_tokens","value":{"intValue":"5"}},` +
		`{"key":"langfuse.trace.tags","value":{"stringValue":"[1,\"a\"]"}}]}]}]}]}`))
	um := &ptrace.JSONUnmarshaler{}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := um.UnmarshalTraces(data)
		if err != nil {
			return
		}
		for _, o := range Observations(td, now) {
			for _, s := range []string{o.Metadata, o.TraceMetadata} {
				if !json.Valid([]byte(s)) {
					t.Fatalf("invalid JSON %q", s)
				}
			}
			if o.ModelParameters != "" && !json.Valid([]byte(o.ModelParameters)) {
				t.Fatalf("invalid model parameters %q", o.ModelParameters)
			}
		}
	})
}

// FuzzValidJSON checks the hand-written validator against encoding/json.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x\u00e9\n"]} `, `"\ud83d\ude00"`,
		`{"a":1,}`, `[1 2]`, `01`, `-`, `1.`, `1e`, `"\x"`, "\"\x01\"", `tru`, `nul`, `{"a"}`, `[`, `"`,
		"\"\xff\"", `1 2`, ``, ` `, `[[[[]]]]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "[")+strings.Count(s, "{") > maxJSONDepth {
			return // deeper than the validator accepts, by design
		}
		if got, want := isJSON(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("isJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

// FuzzFlatNumbers checks the one-pass reader of usage and cost objects
// against the general one: whatever it accepts must be a JSON object whose
// members eachMember and rawNumber read the same, in the same order.
func FuzzFlatNumbers(f *testing.F) {
	for _, s := range []string{
		`{"input":1650,"output":61,"total":1711}`, ` { "a" : -0 , "b":1.5e-7 } `, `{}`, `{"a":-0.0}`,
		`{"a":1e400}`, `{"a":"1"}`, `{"a":{"b":1}}`, `{"a\u0041":1}`, `{"a":1,}`, `{"a":1}x`, `{"a":01}`,
		`{"a":1234567890123456}`, `{"a":-999999999999999}`, `{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf [8]numberMember
		fast, ok := appendFlatNumbers(buf[:0], s)
		if !ok {
			return
		}
		if !isJSONObject(s) {
			t.Fatalf("appendFlatNumbers accepted %q, which is not a JSON object", s)
		}
		var general []numberMember
		eachMember(s, func(k, raw string) {
			n, ok := rawNumber(raw)
			if raw[0] == '"' || !ok {
				t.Fatalf("appendFlatNumbers accepted %q, whose member %q is %s", s, k, raw)
			}
			general = append(general, numberMember{k, n})
		})
		if len(fast) != len(general) {
			t.Fatalf("%q: %d members, eachMember finds %d", s, len(fast), len(general))
		}
		for i := range fast {
			if fast[i].key != general[i].key || math.Float64bits(fast[i].n) != math.Float64bits(general[i].n) {
				t.Fatalf("%q: member %d is %q=%v, eachMember reads %q=%v", s, i, fast[i].key, fast[i].n, general[i].key, general[i].n)
			}
		}
	})
}

// FuzzSpanAttributes feeds arbitrary text to the attributes whose values the
// mapping parses (JSON blobs, tags, flattened message keys, timestamps),
// which byte-level fuzzing of OTLP/JSON rarely reaches.
func FuzzSpanAttributes(f *testing.F) {
	f.Add("langfuse.observation.usage_details", `{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":9}}`, "ai", "x")
	f.Add("gen_ai.prompt.0.content.1.x", "v", "", "gen_ai.prompt.0")
	f.Add("langfuse.trace.tags", `["a",1,{"b":2}]`, "", "")
	f.Add("ai.response.providerMetadata", `{"anthropic":{"usage":{"cache_creation":{"ephemeral_5m_input_tokens":3}}}}`, "ai", "")
	f.Add("gen_ai.input.messages", `[{"role":"system"}`, "", "gen_ai.system_instructions")
	f.Add("langfuse.observation.completion_start_time", `"2025-01-01T00:00:00Z"`, "", "")
	keys := []string{
		"langfuse.observation.metadata", "langfuse.trace.metadata", "langfuse.observation.model.parameters",
		"langfuse.observation.cost_details", "ai.telemetry.metadata.langfusePrompt", "gen_ai.usage.input_tokens",
		"ai.response.toolCalls", "ai.response.text", "llm.input_messages.0.message.content",
	}
	f.Fuzz(func(t *testing.T, key, value, scope, extraKey string) {
		fx := newFixture().inScope(scope, "")
		a := fx.span.Attributes()
		a.PutStr(key, value)
		a.PutStr(extraKey, value)
		for _, k := range keys {
			a.PutStr(k, value)
		}
		o := fx.mapped()
		for _, s := range []string{o.Metadata, o.TraceMetadata} {
			if !json.Valid([]byte(s)) {
				t.Fatalf("invalid JSON %q", s)
			}
		}
		if o.ModelParameters != "" && !json.Valid([]byte(o.ModelParameters)) {
			t.Fatalf("invalid model parameters %q", o.ModelParameters)
		}
	})
}
