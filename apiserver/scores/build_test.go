package scores

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// fakeConfigs holds configs of project "p".
type fakeConfigs map[string]controlplane.ScoreConfig

func (f fakeConfigs) GetScoreConfig(_ context.Context, projectID, id string) (controlplane.ScoreConfig, error) {
	cfg, ok := f[id]
	if !ok || projectID != "p" {
		return controlplane.ScoreConfig{}, controlplane.ErrNotFound
	}
	return cfg, nil
}

func f64(v float64) *float64 { return &v }

var testConfigs = fakeConfigs{
	"num":  {ID: "num", Name: "accuracy", DataType: controlplane.ScoreNumeric, MinValue: f64(0), MaxValue: f64(1)},
	"cat":  {ID: "cat", Name: "tone", DataType: controlplane.ScoreCategorical, Categories: []controlplane.ScoreCategory{{Value: 2, Label: "polite"}, {Value: 0, Label: "rude"}}},
	"bool": {ID: "bool", Name: "correct", DataType: controlplane.ScoreBoolean, Categories: controlplane.BooleanCategories},
	"old":  {ID: "old", Name: "old", DataType: controlplane.ScoreNumeric, IsArchived: true},
}

func body(js string) Body {
	var b Body
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		panic(err)
	}
	return b
}

func TestBuild(t *testing.T) {
	ts := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	b := Builder{Configs: testConfigs}
	build := func(js string) (chstore.Score, error) {
		return b.Build(context.Background(), "p", body(js), ts, IngestionSources)
	}

	sc, err := build(`{"id":"s1","traceId":"t","observationId":"o","name":" quality ","value":0.5,"comment":"ok",
		"metadata":{"k":1},"environment":"Langfuse-Prod"}`)
	require.NoError(t, err)
	assert.Equal(t, chstore.Score{ProjectID: "p", ID: "s1", Timestamp: ts.UnixMicro(), Name: "quality", Value: 0.5,
		DataType: chstore.ScoreNumeric, Source: chstore.SourceAPI, Comment: "ok", Metadata: `{"k":1}`, Environment: "prod",
		TraceID: "t", ObservationID: "o"}, sc)

	sc, err = build(`{"sessionId":"s","name":"tone","value":"nice"}`)
	require.NoError(t, err)
	assert.Equal(t, chstore.ScoreCategorical, sc.DataType, "a string value is categorical")
	assert.Equal(t, "nice", sc.StringValue)
	assert.NotEmpty(t, sc.ID, "ids are generated when not given")
	assert.Equal(t, "{}", sc.Metadata)
	assert.Equal(t, "default", sc.Environment)

	sc, err = build(`{"datasetRunId":"r","name":"ok","value":1,"dataType":"BOOLEAN","source":"EVAL","metadata":[1]}`)
	require.NoError(t, err)
	assert.Equal(t, "True", sc.StringValue)
	assert.Equal(t, 1.0, sc.Value)
	assert.Equal(t, chstore.SourceEval, sc.Source)
	assert.Equal(t, `{"metadata":[1]}`, sc.Metadata, "non-object metadata is wrapped")

	// With a config: its name wins, its type applies, values are checked and mapped.
	sc, err = build(`{"traceId":"t","name":"ignored","value":"polite","configId":"cat"}`)
	require.NoError(t, err)
	assert.Equal(t, "tone", sc.Name)
	assert.Equal(t, 2.0, sc.Value)
	assert.Equal(t, "polite", sc.StringValue)
	sc, err = build(`{"traceId":"t","name":"x","value":0,"configId":"bool","source":"ANNOTATION"}`)
	require.NoError(t, err)
	assert.Equal(t, "False", sc.StringValue)
	assert.Equal(t, chstore.ScoreBoolean, sc.DataType)
	sc, err = build(`{"traceId":"t","name":"x","value":1,"configId":"num"}`)
	require.NoError(t, err)
	assert.Equal(t, "accuracy", sc.Name)

	for name, tt := range map[string]struct {
		body   string
		status int
		field  string
	}{
		"no target":         {`{"name":"n","value":1}`, 400, "traceId"},
		"two targets":       {`{"traceId":"t","sessionId":"s","name":"n","value":1}`, 400, "sessionId"},
		"observation alone": {`{"observationId":"o","name":"n","value":1}`, 400, "observationId"},
		"no name":           {`{"traceId":"t","value":1}`, 400, "name"},
		"no value":          {`{"traceId":"t","name":"n"}`, 400, "value"},
		"object value":      {`{"traceId":"t","name":"n","value":{}}`, 400, "value"},
		"numeric string":    {`{"traceId":"t","name":"n","value":"x","dataType":"NUMERIC"}`, 400, "NUMERIC"},
		"categorical num":   {`{"traceId":"t","name":"n","value":1,"dataType":"CATEGORICAL"}`, 400, "CATEGORICAL"},
		"boolean two":       {`{"traceId":"t","name":"n","value":2,"dataType":"BOOLEAN"}`, 400, "BOOLEAN"},
		"unknown type":      {`{"traceId":"t","name":"n","value":"x","dataType":"SENTIMENT"}`, 400, "dataType"},
		"text number":       {`{"traceId":"t","name":"n","value":3,"dataType":"TEXT"}`, 400, "TEXT"},
		"bad source":        {`{"traceId":"t","name":"n","value":1,"source":"UI"}`, 400, "source"},
		"annotation":        {`{"traceId":"t","name":"n","value":1,"source":"ANNOTATION"}`, 400, "configId"},
		"missing config":    {`{"traceId":"t","name":"n","value":1,"configId":"nope"}`, 404, "nope"},
		"archived config":   {`{"traceId":"t","name":"n","value":1,"configId":"old"}`, 400, "archived"},
		"out of range":      {`{"traceId":"t","name":"n","value":1.5,"configId":"num"}`, 400, "values from 0 to 1"},
		"unknown category":  {`{"traceId":"t","name":"n","value":"meh","configId":"cat"}`, 400, "polite, rude"},
		"type mismatch":     {`{"traceId":"t","name":"n","value":1,"configId":"num","dataType":"BOOLEAN"}`, 400, "dataType"},
		"string metadata":   {`{"traceId":"t","name":"n","value":1,"metadata":"x"}`, 0, ""},
	} {
		_, err := build(tt.body)
		if tt.status == 0 {
			assert.NoError(t, err, name)
			continue
		}
		var apiErr *httpx.Error
		require.ErrorAs(t, err, &apiErr, name)
		assert.Equal(t, tt.status, apiErr.Status, name)
		assert.Contains(t, apiErr.Message, tt.field, name)
	}

	// The REST route does not accept EVAL; a config of another project is not found.
	_, err = b.Build(context.Background(), "p", body(`{"traceId":"t","name":"n","value":1,"source":"EVAL"}`), ts, RESTSources)
	assert.Error(t, err)
	_, err = b.Build(context.Background(), "q", body(`{"traceId":"t","name":"n","value":1,"configId":"num"}`), ts, RESTSources)
	var apiErr *httpx.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.Status)
}
