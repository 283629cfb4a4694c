package experiments

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/testutil/chtest"
)

// item stores one experiment item as the SDK's runner sends it: the item's
// root span (description, expected output) and a generation under it that
// carries the propagated ids.
func item(projectID, traceID, experiment, itemID, datasetID string, offset time.Duration) []model.Observation {
	rootID := traceID[:15] + "1"
	exp := model.Experiment{ID: experiment, Name: experiment + " run", DatasetID: datasetID, ItemID: itemID,
		ItemRootID: rootID, Metadata: `{"model":"fake"}`, ItemMetadata: `{"item":"` + itemID + `"}`}
	root := apitest.Obs(projectID, traceID, rootID, offset)
	root.IsRoot, root.Name, root.Environment = true, "experiment-item-run", "sdk-experiment"
	root.Input, root.Output, root.Metadata = `{"question":"`+itemID+`?"}`, `"answer `+itemID+`"`, `{"index":1}`
	root.Experiment = exp
	root.Experiment.Description, root.Experiment.ItemExpectedOutput = "fake model", `"expected `+itemID+`"`
	gen := apitest.Obs(projectID, traceID, traceID[:15]+"2", offset+time.Millisecond)
	gen.ParentID, gen.Type, gen.Experiment = rootID, model.TypeGeneration, exp
	return []model.Observation{root, gen}
}

func raw(t *testing.T, h http.Handler, auth, target string) map[string]any {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodGet, target, auth, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out
}

func data(page map[string]any) []map[string]any {
	out := []map[string]any{}
	for _, d := range page["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func TestExperimentsAndItems(t *testing.T) {
	cp := apitest.ControlPlane(t)
	ch := chtest.Store(t)
	a, b := apitest.Seed(t, cp, "a"), apitest.Seed(t, cp, "b")
	h, err := httpx.NewRouter(Routes(ch), httpx.Options{Verifier: cp, Logger: zaptest.NewLogger(t)})
	require.NoError(t, err)

	var obs []model.Observation
	obs = append(obs, item(a.ProjectID, strings.Repeat("1", 32), "exp-old", "i1", "ds-1", 0)...)
	obs = append(obs, item(a.ProjectID, strings.Repeat("2", 32), "exp-old", "i2", "ds-1", time.Minute)...)
	obs = append(obs, item(a.ProjectID, strings.Repeat("3", 32), "exp-new", "i1", "ds-1", 2*time.Minute)...)
	obs = append(obs, item(a.ProjectID, strings.Repeat("4", 32), "exp-local", "h4", "", 3*time.Minute)...)
	// Stored twice, as a retried export would: counted once.
	obs = append(obs, item(a.ProjectID, strings.Repeat("4", 32), "exp-local", "h4", "", 3*time.Minute)...)
	obs = append(obs, item(b.ProjectID, strings.Repeat("5", 32), "exp-theirs", "i1", "ds-9", 0)...)
	plain := apitest.Obs(a.ProjectID, strings.Repeat("6", 32), "6666666666666661", 0)
	obs = append(obs, plain)
	apitest.Insert(t, ch, obs...)
	apitest.InsertScores(t, ch,
		chstore.Score{ProjectID: a.ProjectID, ID: "run-score", Name: "avg", Value: 0.5, DataType: "NUMERIC", Source: "API",
			DatasetRunID: "exp-old", Timestamp: apitest.Base.UnixMicro(), Environment: "default"},
		chstore.Score{ProjectID: a.ProjectID, ID: "item-score", Name: "exact", Value: 1, DataType: "NUMERIC", Source: "API",
			TraceID: strings.Repeat("1", 32), ObservationID: strings.Repeat("1", 15) + "1", Timestamp: apitest.Base.UnixMicro(), Environment: "default"},
		chstore.Score{ProjectID: a.ProjectID, ID: "gen-score", Name: "gen", Value: 1, DataType: "NUMERIC", Source: "API",
			TraceID: strings.Repeat("1", 32), ObservationID: strings.Repeat("1", 15) + "2", Timestamp: apitest.Base.UnixMicro(), Environment: "default"},
	)
	from := url.QueryEscape(apitest.Base.Add(-time.Hour).Format(time.RFC3339))

	t.Run("experiments", func(t *testing.T) {
		page := raw(t, h, a.ProjectAuth, "/api/public/experiments?fromStartTime="+from)
		got := data(page)
		require.Len(t, got, 3, "another project's experiment and plain traces are left out")
		assert.Equal(t, []any{"exp-local", "exp-new", "exp-old"}, []any{got[0]["id"], got[1]["id"], got[2]["id"]}, "most recently active first")
		old := got[2]
		assert.Equal(t, "exp-old run", old["name"])
		assert.Equal(t, "fake model", old["description"])
		assert.Equal(t, "ds-1", old["datasetId"])
		assert.EqualValues(t, 2, old["itemCount"])
		assert.Equal(t, "2024-05-01T12:00:00.000Z", old["startTime"])
		assert.Equal(t, "2024-05-01T12:01:01.001Z", old["endTime"], "the last end of any of its spans")
		assert.NotContains(t, old, "metadata", "groups only when asked for")
		assert.NotContains(t, old, "scores")
		assert.Nil(t, got[0]["datasetId"], "local data has no dataset")
		assert.EqualValues(t, 1, got[0]["itemCount"], "a span stored twice counts once")
		assert.NotContains(t, page["meta"], "cursor", "the last page has no cursor")

		withGroups := data(raw(t, h, a.ProjectAuth, "/api/public/experiments?fields=core,metadata,scores&name=exp-old+run&fromStartTime="+from))
		require.Len(t, withGroups, 1)
		assert.Equal(t, map[string]any{"model": "fake"}, withGroups[0]["metadata"])
		scores := withGroups[0]["scores"].([]any)
		require.Len(t, scores, 1)
		assert.Equal(t, "run-score", scores[0].(map[string]any)["id"])
		assert.Equal(t, "experiment", scores[0].(map[string]any)["subject"].(map[string]any)["kind"])

		// Cursor pages of one.
		var ids []any
		cursor := ""
		for range 4 {
			page := raw(t, h, a.ProjectAuth, "/api/public/experiments?limit=1&fromStartTime="+from+cursor)
			for _, d := range data(page) {
				ids = append(ids, d["id"])
			}
			c, ok := page["meta"].(map[string]any)["cursor"]
			if !ok {
				break
			}
			cursor = "&cursor=" + c.(string)
		}
		assert.Equal(t, []any{"exp-local", "exp-new", "exp-old", nil}[:len(ids)], ids)
		assert.Len(t, ids, 3)

		byDataset := data(raw(t, h, a.ProjectAuth, "/api/public/experiments?datasetId=ds-1&fromStartTime="+from))
		assert.Len(t, byDataset, 2)
		filter := url.QueryEscape(`[{"column":"name","type":"string","operator":"starts with","value":"exp-n"}]`)
		filtered := data(raw(t, h, a.ProjectAuth, "/api/public/experiments?filter="+filter+"&fromStartTime="+from))
		require.Len(t, filtered, 1)
		assert.Equal(t, "exp-new", filtered[0]["id"])
		window := url.QueryEscape(apitest.Base.Add(90 * time.Second).Format(time.RFC3339))
		assert.Len(t, data(raw(t, h, a.ProjectAuth, "/api/public/experiments?fromStartTime="+window)), 2, "the window bounds the spans read")
	})

	t.Run("items", func(t *testing.T) {
		page := raw(t, h, a.ProjectAuth, "/api/public/experiment-items?fromStartTime="+from)
		got := data(page)
		require.Len(t, got, 4, "one per item root span, stored twice or not")
		first := got[len(got)-1]
		assert.Equal(t, strings.Repeat("1", 15)+"1", first["id"])
		assert.Equal(t, strings.Repeat("1", 32), first["traceId"])
		assert.Equal(t, "exp-old", first["experimentId"])
		assert.Equal(t, "exp-old run", first["experimentName"])
		assert.Equal(t, "i1", first["experimentItemId"])
		assert.Equal(t, "sdk-experiment", first["environment"])
		assert.Equal(t, "DEFAULT", first["level"])
		assert.Equal(t, "ds-1", first["experimentDatasetId"], "core,dataset by default")
		assert.Contains(t, first, "experimentItemVersion")
		assert.NotContains(t, first, "input")

		all := data(raw(t, h, a.ProjectAuth, "/api/public/experiment-items?experimentId=exp-old&experimentItemId=i1&fields=core,io,metadata,itemMetadata,experimentMetadata,scores&fromStartTime="+from))
		require.Len(t, all, 1)
		it := all[0]
		assert.NotContains(t, it, "experimentDatasetId", "dataset only when asked for")
		assert.Equal(t, map[string]any{"question": "i1?"}, it["input"])
		assert.Equal(t, "answer i1", it["output"])
		assert.Equal(t, "expected i1", it["expectedOutput"])
		assert.Equal(t, map[string]any{"index": float64(1)}, it["metadata"])
		assert.Equal(t, map[string]any{"item": "i1"}, it["experimentItemMetadata"])
		assert.Equal(t, map[string]any{"model": "fake"}, it["experimentMetadata"])
		assert.Equal(t, "fake model", it["experimentDescription"])
		scores := it["scores"].([]any)
		require.Len(t, scores, 1, "the item's scores, not another observation's")
		assert.Equal(t, "item-score", scores[0].(map[string]any)["id"])

		filter := url.QueryEscape(`[{"column":"datasetId","type":"stringOptions","operator":"none of","value":["ds-1"]}]`)
		local := data(raw(t, h, a.ProjectAuth, "/api/public/experiment-items?filter="+filter+"&fromStartTime="+from))
		require.Len(t, local, 1)
		assert.Equal(t, "exp-local", local[0]["experimentId"])

		two := raw(t, h, a.ProjectAuth, "/api/public/experiment-items?limit=2&fromStartTime="+from)
		next := raw(t, h, a.ProjectAuth, "/api/public/experiment-items?limit=2&fromStartTime="+from+"&cursor="+two["meta"].(map[string]any)["cursor"].(string))
		assert.Equal(t, []any{got[2]["id"], got[3]["id"]}, []any{data(next)[0]["id"], data(next)[1]["id"]})

		theirs := data(raw(t, h, b.ProjectAuth, "/api/public/experiment-items?fromStartTime="+from))
		require.Len(t, theirs, 1)
		assert.Equal(t, "exp-theirs", theirs[0]["experimentId"])
	})

	t.Run("refusals", func(t *testing.T) {
		for target, message := range map[string]string{
			"/api/public/experiments":                                                                                "fromStartTime is required",
			"/api/public/experiments?fields=io&fromStartTime=" + from:                                                "unknown group",
			"/api/public/experiment-items?fields=everything&fromStartTime=" + from:                                   "unknown group",
			"/api/public/experiments?limit=101&fromStartTime=" + from:                                                "limit",
			"/api/public/experiments?cursor=bogus&fromStartTime=" + from:                                             "Invalid cursor",
			"/api/public/experiments?fromStartTime=yesterday":                                                        "fromStartTime",
			"/api/public/experiments?filter=%5B%7B%22column%22%3A%22experimentItemId%22%7D%5D&fromStartTime=" + from: "column",
			"/api/public/experiment-items?filter=not-json&fromStartTime=" + from:                                     "Invalid filter",
			"/api/public/experiment-items?filter=" + url.QueryEscape(`[{"column":"experimentId","type":"number","operator":"=","value":1}]`) + "&fromStartTime=" + from: "does not apply",
		} {
			rec := apitest.Do(t, h, http.MethodGet, target, a.ProjectAuth, nil)
			assert.Equal(t, http.StatusBadRequest, rec.Code, target)
			assert.Contains(t, rec.Body.String(), message, target)
		}
	})
}
