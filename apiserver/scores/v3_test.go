package scores

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

func listV3(t *testing.T, h http.Handler, auth, query string) ListV3 {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v3/scores"+query, auth, nil)
	status(t, rec, http.StatusOK)
	return apitest.Decode[ListV3](t, rec)
}

func idsV3(l ListV3) []string {
	out := []string{}
	for _, s := range l.Data {
		out = append(out, s.ID)
	}
	return out
}

// The v3 list: typed values, cursor pages, field groups, the
// comma-separated filters and their rules.
func TestScoresV3(t *testing.T) {
	h, a, b := setup(t)
	at := func(i int) string {
		return time.Now().Add(-time.Duration(10-i) * time.Minute).UTC().Format(time.RFC3339Nano)
	}
	for i, sc := range []map[string]any{
		{"id": "n1", "traceId": "t1", "name": "quality", "value": 0.2, "dataType": "NUMERIC"},
		{"id": "n2", "traceId": "t1", "observationId": "o1", "name": "quality", "value": 0.8, "dataType": "NUMERIC", "comment": "fine", "metadata": map[string]any{"by": "judge"}},
		{"id": "b1", "sessionId": "s1", "name": "resolved", "value": 1, "dataType": "BOOLEAN"},
		{"id": "c1", "traceId": "t2", "name": "tone", "value": "polite", "dataType": "CATEGORICAL"},
		{"id": "n3", "datasetRunId": "run-1", "name": "quality", "value": 0.5, "dataType": "NUMERIC"},
	} {
		sc["timestamp"] = at(i)
		create(t, h, a.ProjectAuth, sc)
	}
	create(t, h, b.ProjectAuth, map[string]any{"id": "theirs", "traceId": "t1", "name": "quality", "value": 1})

	hourAgo, inAnHour := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	all := listV3(t, h, a.ProjectAuth, "")
	assert.Equal(t, []string{"n3", "c1", "b1", "n2", "n1"}, idsV3(all), "newest first, another project's left out")
	assert.Equal(t, 50, all.Meta.Limit)
	assert.Empty(t, all.Meta.Cursor, "the last page has no cursor")
	byID := map[string]ScoreV3{}
	for _, s := range all.Data {
		byID[s.ID] = s
	}
	assert.Equal(t, 0.8, byID["n2"].Value)
	assert.Equal(t, true, byID["b1"].Value)
	assert.Equal(t, "polite", byID["c1"].Value)
	assert.Nil(t, byID["n2"].Comment, "details only when asked for")
	assert.Nil(t, byID["n2"].Subject)

	// Two pages of two, then the last one.
	p1 := listV3(t, h, a.ProjectAuth, "?limit=2")
	require.NotEmpty(t, p1.Meta.Cursor)
	p2 := listV3(t, h, a.ProjectAuth, "?limit=2&cursor="+p1.Meta.Cursor)
	p3 := listV3(t, h, a.ProjectAuth, "?limit=2&cursor="+p2.Meta.Cursor)
	assert.Equal(t, []string{"n3", "c1"}, idsV3(p1))
	assert.Equal(t, []string{"b1", "n2"}, idsV3(p2))
	assert.Equal(t, []string{"n1"}, idsV3(p3))
	assert.Empty(t, p3.Meta.Cursor)

	full := listV3(t, h, a.ProjectAuth, "?fields=details,subject,annotation&id=n2,b1,n3")
	require.Len(t, full.Data, 3)
	for _, s := range full.Data {
		byID[s.ID] = s
	}
	require.NotNil(t, byID["n2"].Comment)
	assert.Equal(t, "fine", *byID["n2"].Comment)
	assert.JSONEq(t, `{"by":"judge"}`, string(byID["n2"].Metadata))
	assert.Equal(t, &Subject{Kind: "observation", ID: "o1", TraceID: "t1"}, byID["n2"].Subject)
	assert.Equal(t, &Subject{Kind: "session", ID: "s1"}, byID["b1"].Subject)
	assert.Equal(t, &Subject{Kind: "experiment", ID: "run-1"}, byID["n3"].Subject)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v3/scores?fields=annotation&id=b1", a.ProjectAuth, nil)
	assert.Contains(t, rec.Body.String(), `"authorUserId":null`, "asked-for fields are present, null when unset")
	assert.NotContains(t, rec.Body.String(), `"comment"`, "and the other groups absent")

	for query, want := range map[string][]string{
		"?name=quality,tone":                                     {"n3", "c1", "n2", "n1"},
		"?source=api":                                            {"n3", "c1", "b1", "n2", "n1"},
		"?source=annotation,eval":                                {},
		"?dataType=numeric&valueMin=0.3&valueMax=0.8":            {"n3", "n2"},
		"?dataType=NUMERIC&value=0.2,0.5":                        {"n3", "n1"},
		"?dataType=BOOLEAN&value=true":                           {"b1"},
		"?dataType=CATEGORICAL&value=polite,rude":                {"c1"},
		"?traceId=t1&observationId=o1":                           {"n2"},
		"?sessionId=s1":                                          {"b1"},
		"?experimentId=run-1":                                    {"n3"},
		"?traceId=t1,t2":                                         {"c1", "n2", "n1"},
		"?fromTimestamp=" + hourAgo + "&toTimestamp=" + inAnHour: {"n3", "c1", "b1", "n2", "n1"},
		"?toTimestamp=" + hourAgo:                                {},
	} {
		assert.Equal(t, want, idsV3(listV3(t, h, a.ProjectAuth, query)), query)
	}

	for query, message := range map[string]string{
		"?limit=101":                        "limit",
		"?fields=everything":                "unknown group",
		"?observationId=o1":                 "give traceId too",
		"?sessionId=s1&traceId=t1":          "cannot be combined",
		"?experimentId=run-1&traceId=t1":    "cannot be combined",
		"?value=1":                          "exactly one dataType",
		"?dataType=NUMERIC,BOOLEAN&value=1": "exactly one dataType",
		"?dataType=BOOLEAN&value=yes":       "true or false",
		"?dataType=NUMERIC&value=Inf":       "finite numbers",
		"?dataType=BOOLEAN&valueMin=0":      "dataType=NUMERIC",
		"?cursor=not-a-cursor":              "Invalid cursor",
	} {
		rec = apitest.Do(t, h, http.MethodGet, "/api/public/v3/scores"+query, a.ProjectAuth, nil)
		assert.Equal(t, http.StatusBadRequest, rec.Code, query)
		assert.Contains(t, rec.Body.String(), message, query)
	}
}

// TEXT and CORRECTION scores are written and read in every score route; they
// carry their text and aggregate nowhere.
func TestTextAndCorrectionScores(t *testing.T) {
	h, a, _ := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"id": "txt", "traceId": "t1", "name": "review", "value": "Clear and correct.", "dataType": "TEXT"})
	create(t, h, a.ProjectAuth, map[string]any{"id": "fix", "traceId": "t1", "observationId": "o1", "name": "correction", "value": "", "dataType": "CORRECTION"})
	for body, message := range map[string]map[string]any{
		"a TEXT score needs":       {"traceId": "t1", "name": "review", "value": 3, "dataType": "TEXT"},
		"a CORRECTION score needs": {"traceId": "t1", "name": "correction", "value": 1, "dataType": "CORRECTION"},
		"expected NUMERIC":         {"traceId": "t1", "name": "x", "value": "y", "dataType": "SENTIMENT"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/scores", a.ProjectAuth, message)
		assert.Equal(t, http.StatusBadRequest, rec.Code, body)
		assert.Contains(t, rec.Body.String(), body)
	}

	v2 := list(t, h, a.ProjectAuth, "?dataType=TEXT")
	require.Len(t, v2.Data, 1)
	require.NotNil(t, v2.Data[0].StringValue)
	assert.Equal(t, "Clear and correct.", *v2.Data[0].StringValue)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/scores/fix", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, "CORRECTION", apitest.Decode[Score](t, rec).DataType)

	v3 := listV3(t, h, a.ProjectAuth, "?dataType=text,correction")
	require.Len(t, v3.Data, 2)
	values := map[string]any{}
	for _, s := range v3.Data {
		values[s.ID] = s.Value
	}
	assert.Equal(t, map[string]any{"txt": "Clear and correct.", "fix": ""}, values)
}
