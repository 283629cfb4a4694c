package observations

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

const (
	traceA = "0af7651916cd43dd8448eb211c80319c"
	traceB = "1bf7651916cd43dd8448eb211c80319d"
)

type fixture struct {
	h    http.Handler
	a, b apitest.Tenant
	// greetingV2 is the id of version 2 of prompt greeting, which the
	// generation names.
	greetingV2 string
}

// setup stores, in project a, trace A (root span, generation at +1s, event
// at +2s) and trace B (one span at +1h, user u2); in project b one span of
// a trace with trace A's id.
func setup(t *testing.T) fixture {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	f := fixture{a: apitest.Seed(t, cp, "a"), b: apitest.Seed(t, cp, "b")}

	root := apitest.Obs(f.a.ProjectID, traceA, "a000000000000001", 0)
	root.UserID, root.SessionID, root.IsRoot, root.TraceName, root.Tags = "u1", "s1", true, "chat", []string{"t"}
	gen := apitest.Obs(f.a.ProjectID, traceA, "a000000000000002", time.Second)
	gen.ParentID, gen.Type, gen.Name, gen.Level = root.ID, model.TypeGeneration, "llm", model.LevelWarning
	gen.Model, gen.Input, gen.Output = "gpt-4o", `{"q":1}`, "text out"
	gen.UsageDetails = map[string]int64{"input": 3, "output": 4}
	gen.CostDetails = map[string]float64{"input": 0.5, "output": 0.25}
	gen.PromptName, gen.PromptVersion = "greeting", 2
	gen.Metadata, gen.Environment, gen.Version = `{"k":"v"}`, "prod", "v9"
	gen.Tags = root.Tags // the SDKs propagate trace attributes to every span
	event := apitest.Obs(f.a.ProjectID, traceA, "a000000000000003", 2*time.Second)
	event.ParentID, event.Type, event.EndTime = root.ID, model.TypeEvent, 0
	other := apitest.Obs(f.a.ProjectID, traceB, "b000000000000001", time.Hour)
	other.UserID, other.IsRoot = "u2", true
	foreign := apitest.Obs(f.b.ProjectID, traceA, "c000000000000001", 0)
	apitest.Insert(t, ch, root, gen, event, other, foreign)

	ctx := context.Background()
	for _, text := range []string{"Hello", "Hello {{name}}"} {
		p, err := cp.CreatePrompt(ctx, f.a.ProjectID, controlplane.NewPrompt{Name: "greeting", Prompt: json.RawMessage(strconv.Quote(text))})
		require.NoError(t, err)
		f.greetingV2 = p.ID
	}
	// Project b has a prompt of the same name and version: never mixed up.
	for range 2 {
		_, err := cp.CreatePrompt(ctx, f.b.ProjectID, controlplane.NewPrompt{Name: "greeting", Prompt: json.RawMessage(`"theirs"`)})
		require.NoError(t, err)
	}

	var err error
	f.h, err = httpx.NewRouter(Routes(ch, cp), httpx.Options{Verifier: cp})
	require.NoError(t, err)
	return f
}

func get[T any](t *testing.T, f fixture, target string) T {
	t.Helper()
	rec := apitest.Do(t, f.h, http.MethodGet, target, f.a.ProjectAuth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return apitest.Decode[T](t, rec)
}

func viewIDs(vs []View) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}

func TestGet(t *testing.T) {
	f := setup(t)
	v := get[View](t, f, "/api/public/observations/a000000000000002")
	assert.Equal(t, traceA, v.TraceID)
	assert.Equal(t, "GENERATION", v.Type)
	assert.Equal(t, "WARNING", v.Level)
	assert.Equal(t, Usage{Input: 3, Output: 4, Total: 7}, v.Usage, "total defaults to input + output")
	assert.InDelta(t, 0.75, *v.CalculatedTotalCost, 1e-9)
	assert.InDelta(t, 0.5, *v.CalculatedInputCost, 1e-9)
	assert.Equal(t, int64(3), v.PromptTokens)
	assert.Equal(t, "greeting", *v.PromptName)
	assert.Equal(t, int64(2), *v.PromptVersion)
	require.NotNil(t, v.PromptID, "the version the generation names, resolved as Langfuse does")
	assert.Equal(t, f.greetingV2, *v.PromptID)
	assert.JSONEq(t, `{"k":"v"}`, string(v.Metadata))
	assert.JSONEq(t, `"text out"`, string(v.Output))

	event := get[View](t, f, "/api/public/observations/a000000000000003")
	assert.Nil(t, event.EndTime)
	assert.Nil(t, event.Latency)
	assert.Nil(t, event.CalculatedTotalCost, "no cost recorded")

	for _, id := range []string{"c000000000000001", "ffffffffffffffff"} {
		rec := apitest.Do(t, f.h, http.MethodGet, "/api/public/observations/"+id, f.a.ProjectAuth, nil)
		require.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
		assert.Equal(t, fmt.Sprintf("Observation %s not found within authorized project", id),
			apitest.Decode[map[string]string](t, rec)["message"])
	}
}

func TestListV1(t *testing.T) {
	f := setup(t)
	all := get[httpx.List[View]](t, f, "/api/public/observations")
	assert.Equal(t, []string{"b000000000000001", "a000000000000003", "a000000000000002", "a000000000000001"}, viewIDs(all.Data))
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 50, TotalItems: 4, TotalPages: 1}, all.Meta)

	for query, want := range map[string][]string{
		"traceId=" + traceA + "&type=EVENT":    {"a000000000000003"},
		"name=llm":                             {"a000000000000002"},
		"userId=u2":                            {"b000000000000001"},
		"level=WARNING":                        {"a000000000000002"},
		"parentObservationId=a000000000000001": {"a000000000000003", "a000000000000002"},
		"environment=prod":                     {"a000000000000002"},
		"version=v9":                           {"a000000000000002"},
		"fromStartTime=2024-05-01T12:00:01Z":   {"b000000000000001", "a000000000000003", "a000000000000002"},
		"toStartTime=2024-05-01T12:00:01Z":     {"a000000000000001"},
		"limit=2&page=2":                       {"a000000000000002", "a000000000000001"},
	} {
		t.Run(query, func(t *testing.T) {
			assert.Equal(t, want, viewIDs(get[httpx.List[View]](t, f, "/api/public/observations?"+query).Data))
		})
	}
}

func TestListV2(t *testing.T) {
	f := setup(t)
	page := get[map[string]any](t, f, "/api/public/v2/observations?traceId="+traceA)
	data := page["data"].([]any)
	require.Len(t, data, 3)
	first := data[0].(map[string]any)
	// Default groups: core and basic only.
	for _, key := range []string{"id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type", "name", "level", "environment", "isRootObservation"} {
		assert.Contains(t, first, key)
	}
	for _, key := range []string{"input", "usageDetails", "latency", "completionStartTime", "traceName"} {
		assert.NotContains(t, first, key)
	}
	assert.Nil(t, first["endTime"], "a requested null field is present as null")
	assert.Equal(t, map[string]any{}, page["meta"], "one page: no cursor")

	full := get[V2List](t, f, "/api/public/v2/observations?fields=core,io,usage,metrics,trace_context,prompt,model,time,metadata,basic&name=llm")
	require.Len(t, full.Data, 1)
	gen := full.Data[0]
	assert.Equal(t, `{"q":1}`, *gen.Input, "v2 returns input as the raw string")
	assert.InDelta(t, 0.75, *gen.TotalCost, 1e-9)
	assert.InDelta(t, 1.0, *gen.Latency, 1e-9)
	assert.Equal(t, "gpt-4o", *gen.ProvidedModelName)
	assert.Equal(t, "greeting", *gen.PromptName)
	require.NotNil(t, gen.PromptID)
	assert.Equal(t, f.greetingV2, *gen.PromptID)
	raw := apitest.Do(t, f.h, http.MethodGet, "/api/public/v2/observations?fields=core,model&name=llm", f.a.ProjectAuth, nil)
	assert.Contains(t, raw.Body.String(), `"providedModelName":"gpt-4o"`, "the spec's field name")
	assert.NotContains(t, raw.Body.String(), `"model":`)
	assert.Equal(t, []string{"t"}, gen.Tags)
	assert.False(t, gen.IsRootObservation)

	// Walking the cursor visits every observation once, newest first.
	var seen []string
	cursor := ""
	for range 10 {
		target := "/api/public/v2/observations?limit=1"
		if cursor != "" {
			target += "&cursor=" + cursor
		}
		p := get[V2List](t, f, target)
		for _, o := range p.Data {
			seen = append(seen, o.ID)
		}
		if cursor = p.Meta.Cursor; cursor == "" {
			break
		}
	}
	assert.Equal(t, []string{"b000000000000001", "a000000000000003", "a000000000000002", "a000000000000001"}, seen)

	for query, want := range map[string][]string{
		"sessionId=s1":                            {"a000000000000003", "a000000000000002", "a000000000000001"},
		"sessionId=s2":                            {},
		"isRootObservation=true":                  {"b000000000000001", "a000000000000001"},
		"isRootObservation=false":                 {"a000000000000003", "a000000000000002"},
		"isRootObservation=true&sessionId=s1":     {"a000000000000001"},
		"isRootObservation=false&userId=u2":       {},
		"isRootObservation=false&type=GENERATION": {"a000000000000002"},
		"filter=" + url.QueryEscape(`[{"column":"traceName","type":"string","operator":"=","value":"chat"}]`):                         {"a000000000000003", "a000000000000002", "a000000000000001"},
		"filter=" + url.QueryEscape(`[{"column":"providedModelName","type":"stringOptions","operator":"any of","value":["gpt-4o"]}]`): {"a000000000000002"},
		"filter=" + url.QueryEscape(`[{"column":"metadata","type":"stringObject","key":"k","operator":"=","value":"v"}]`):             {"a000000000000002"},
		"filter=" + url.QueryEscape(`[{"column":"inputTokens","type":"number","operator":">=","value":3}]`):                           {"a000000000000002"},
		"filter=" + url.QueryEscape(`[{"column":"userId","type":"string","operator":"=","value":"u2"}]`):                              {"b000000000000001"},
		"type=SPAN&filter=" + url.QueryEscape(`[{"column":"tags","type":"arrayOptions","operator":"any of","value":["t"]}]`):          {"a000000000000001"},
	} {
		t.Run(query, func(t *testing.T) {
			got := []string{}
			for _, o := range get[V2List](t, f, "/api/public/v2/observations?"+query).Data {
				got = append(got, o.ID)
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestBadParameters(t *testing.T) {
	f := setup(t)
	for target, param := range map[string]string{
		"/api/public/observations?page=0":                                                                      "page",
		"/api/public/observations?type=SPANNER":                                                                "type",
		"/api/public/observations?level=LOUD":                                                                  "level",
		"/api/public/observations?fromStartTime=monday":                                                        "fromStartTime",
		"/api/public/observations?filter=[":                                                                    "filter",
		`/api/public/observations?filter=[{"column":"name","type":"number","operator":"=","value":1}]`:         `type "number"`,
		`/api/public/v2/observations?filter=[{"column":"toolCalls","type":"number","operator":"=","value":1}]`: "not available",
		"/api/public/v2/observations?limit=1001":                                                               "limit",
		"/api/public/v2/observations?fields=core,cost":                                                         "fields",
		"/api/public/v2/observations?cursor=not-base64!":                                                       "cursor",
		"/api/public/v2/observations?name=%zz":                                                                 "query string",
		"/api/public/v2/observations?cursor=e30=":                                                              "cursor",
		"/api/public/v2/observations?parseIoAsJson=true":                                                       "parseIoAsJson",
		"/api/public/v2/observations?parseIoAsJson=maybe":                                                      "parseIoAsJson",
		"/api/public/v2/observations?isRootObservation=yes":                                                    "isRootObservation",
		"/api/public/v2/observations?toStartTime=noon":                                                         "toStartTime",
	} {
		t.Run(target, func(t *testing.T) {
			rec := apitest.Do(t, f.h, http.MethodGet, target, f.a.ProjectAuth, nil)
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			assert.Contains(t, apitest.Decode[map[string]string](t, rec)["message"], param)
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	in := encodeCursor(cursorOf(1714564800123456, traceA, "a000000000000001"))
	out, err := decodeCursor(in)
	require.NoError(t, err)
	assert.Equal(t, cursorOf(1714564800123456, traceA, "a000000000000001"), *out)
	var c cursor
	raw, err := decodeBase64(in)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &c))
	assert.Equal(t, "2024-05-01T12:00:00.123456Z", c.LastStartTimeTo)
}

func cursorOf(startUS int64, traceID, id string) chstore.ObservationCursor {
	return chstore.ObservationCursor{StartTime: startUS, TraceID: traceID, ID: id}
}

func decodeBase64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}
