package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/ingestion"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// dataObjects are tenant b's datasets, runs, scores and media. Every one of
// them carries secretOfB, which onlyOwn looks for.
type dataObjects struct {
	dataset, item, run, runItem, scoreConfig, media, mediaHash string
}

// dataSeed holds the objects of the latest newServer's tenant b.
var dataSeed dataObjects

const (
	secretOfB    = "secret-of-b"
	itemOfB      = "data-item-of-b"
	runOfB       = "data-run-of-b"
	mediaOfB     = "media content of b"
	datasetOfB   = "dataset-of-b" // made by seedEvaluation
	scoreOfB     = "score-b"      // made by newServer
	mediaTypeOfB = "text/plain"
)

// seedData gives tenant b a described dataset with an item, a run over it,
// and uploaded media; the dataset and the score config come from
// seedEvaluation, the score from newServer.
func seedData(t *testing.T, cp *controlplane.Store, b tenantData, mediaDir string, scoreConfig string) dataObjects {
	t.Helper()
	ctx := context.Background()
	desc := secretOfB
	d, err := cp.UpsertDataset(ctx, b.ProjectID, controlplane.DatasetUpsert{Name: datasetOfB, Description: &desc})
	require.NoError(t, err)
	_, err = cp.UpsertDatasetItem(ctx, b.ProjectID, controlplane.DatasetItemUpsert{DatasetName: datasetOfB, ID: itemOfB,
		Input: json.RawMessage(`"` + secretOfB + `"`), SourceTraceID: &b.trace})
	require.NoError(t, err)
	ri, err := cp.CreateDatasetRunItem(ctx, b.ProjectID, controlplane.NewDatasetRunItem{RunName: runOfB,
		RunDescription: secretOfB, DatasetItemID: itemOfB, TraceID: b.trace})
	require.NoError(t, err)

	sum := sha256.Sum256([]byte(mediaOfB))
	hash := base64.StdEncoding.EncodeToString(sum[:])
	id, err := media.MediaID(hash)
	require.NoError(t, err)
	_, err = cp.PutMedia(ctx, b.ProjectID, controlplane.NewMedia{ID: id, SHA256: hash, ContentType: mediaTypeOfB,
		ContentLength: int64(len(mediaOfB))})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(mediaDir, b.ProjectID), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(mediaDir, b.ProjectID, id), []byte(mediaOfB), 0o600))
	require.NoError(t, cp.MarkMediaStored(ctx, b.ProjectID, id))

	return dataObjects{dataset: d.ID, item: itemOfB, run: ri.DatasetRunID, runItem: ri.ID, scoreConfig: scoreConfig,
		media: id, mediaHash: hash}
}

// noDataOfB asserts a 2xx that reveals none of tenant b's objects.
func noDataOfB(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Less(t, rec.Code, 300, rec.Body.String())
	o := dataSeed
	for _, v := range []string{s.b.ProjectID, s.b.trace, secretOfB, o.dataset, o.run, o.runItem, o.scoreConfig} {
		assert.NotContains(t, rec.Body.String(), v)
	}
}

// ownOrNotFound accepts a 404, or an answer about tenant a's own object of
// the same name: names and client-chosen ids are per project, so an earlier
// attack may have created one.
func ownOrNotFound(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code == http.StatusNotFound {
		return
	}
	noDataOfB(t, s, rec)
}

// createdInA asserts a 2xx that made an object of tenant a's project.
func createdInA(t *testing.T, s server, rec *httptest.ResponseRecorder) {
	t.Helper()
	noDataOfB(t, s, rec)
	assert.Contains(t, rec.Body.String(), `"projectId":"`+s.a.ProjectID+`"`)
}

func dataPath(format func(o dataObjects) string) func(server) string {
	return func(server) string { return format(dataSeed) }
}

var dataAttacks = map[string]attack{
	"POST /api/public/v2/datasets": {auth: projectKey, target: fixed("/api/public/v2/datasets"),
		body:  func(server) any { return map[string]any{"name": datasetOfB, "description": "hijacked"} },
		check: createdInA},
	"GET /api/public/v2/datasets": {auth: projectKey, target: fixed("/api/public/v2/datasets?limit=100"), check: noDataOfB},
	"POST /api/public/datasets": {auth: projectKey, target: fixed("/api/public/datasets"),
		body:  func(server) any { return map[string]any{"name": datasetOfB, "description": "hijacked"} },
		check: createdInA},
	"GET /api/public/datasets": {auth: projectKey, target: fixed("/api/public/datasets?limit=100"), check: noDataOfB},
	"GET /api/public/datasets/{datasetName}": {auth: projectKey,
		target: fixed("/api/public/datasets/" + datasetOfB), check: ownOrNotFound},
	"GET /api/public/v2/datasets/{datasetName}": {auth: projectKey,
		target: fixed("/api/public/v2/datasets/" + datasetOfB), check: ownOrNotFound},
	"POST /api/public/dataset-items": {auth: projectKey, target: fixed("/api/public/dataset-items"),
		body: func(server) any {
			return map[string]any{"datasetName": datasetOfB, "id": itemOfB, "input": "hijacked", "status": "ARCHIVED"}
		}, check: ownOrNotFound},
	"GET /api/public/dataset-items": {auth: projectKey,
		target: func(s server) string { return "/api/public/dataset-items?limit=100&sourceTraceId=" + s.b.trace },
		check:  noDataOfB},
	"GET /api/public/dataset-items/{id}": {auth: projectKey,
		target: fixed("/api/public/dataset-items/" + itemOfB), check: ownOrNotFound},
	"DELETE /api/public/dataset-items/{id}": {auth: projectKey,
		target: fixed("/api/public/dataset-items/" + itemOfB), check: ownOrNotFound},
	"POST /api/public/dataset-run-items": {auth: projectKey, target: fixed("/api/public/dataset-run-items"),
		body: func(s server) any {
			return map[string]any{"runName": runOfB, "datasetItemId": itemOfB, "traceId": s.a.trace}
		}, check: ownOrNotFound},
	"GET /api/public/dataset-run-items": {auth: projectKey,
		target: dataPath(func(o dataObjects) string {
			return "/api/public/dataset-run-items?runName=" + runOfB + "&datasetId=" + o.dataset
		}), check: notFound},
	"GET /api/public/datasets/{datasetName}/runs": {auth: projectKey,
		target: fixed("/api/public/datasets/" + datasetOfB + "/runs"), check: ownOrNotFound},
	"GET /api/public/datasets/{datasetName}/runs/{runName}": {auth: projectKey,
		target: fixed("/api/public/datasets/" + datasetOfB + "/runs/" + runOfB), check: ownOrNotFound},
	"DELETE /api/public/datasets/{datasetName}/runs/{runName}": {auth: projectKey,
		target: fixed("/api/public/datasets/" + datasetOfB + "/runs/" + runOfB), check: ownOrNotFound},

	"POST /api/public/scores": {auth: projectKey, target: fixed("/api/public/scores"),
		body: func(server) any {
			return map[string]any{"id": scoreOfB, "name": "q", "value": 99, "traceId": sharedTrace}
		}, check: noDataOfB},
	"GET /api/public/v2/scores": {auth: projectKey, target: fixed("/api/public/v2/scores?limit=100"), check: noDataOfB},
	"GET /api/public/scores":    {auth: projectKey, target: fixed("/api/public/scores?limit=100"), check: noDataOfB},
	"GET /api/public/scores/{scoreId}": {auth: projectKey,
		target: fixed("/api/public/scores/" + scoreOfB), check: ownOrNotFound},
	"POST /api/public/comments": {auth: projectKey, target: fixed("/api/public/comments"),
		body: func(s server) any {
			return map[string]any{"objectType": "TRACE", "objectId": s.b.trace, "content": "on b's trace"}
		}, check: notFound},
	"GET /api/public/comments":             {auth: projectKey, target: fixed("/api/public/comments?limit=100"), check: noDataOfB},
	"GET /api/public/comments/{commentId}": {auth: projectKey, target: fixed("/api/public/comments/comment-of-b"), check: notFound},
	"GET /api/public/experiments": {auth: projectKey, check: noDataOfB,
		target: fixed("/api/public/experiments?limit=100&fields=core,metadata,scores&fromStartTime=2000-01-01T00:00:00Z")},
	"GET /api/public/experiment-items": {auth: projectKey, check: noDataOfB,
		target: fixed("/api/public/experiment-items?limit=100&fields=core,dataset,io,metadata,scores&fromStartTime=2000-01-01T00:00:00Z")},
	"GET /api/public/v3/scores": {auth: projectKey, target: fixed("/api/public/v3/scores?limit=100&fields=details,subject,annotation"), check: noDataOfB},
	"GET /api/public/v2/scores/{scoreId}": {auth: projectKey,
		target: fixed("/api/public/v2/scores/" + scoreOfB), check: ownOrNotFound},
	"DELETE /api/public/scores/{scoreId}": {auth: projectKey,
		target: fixed("/api/public/scores/" + scoreOfB), check: ownOrNotFound},

	"POST /api/public/score-configs": {auth: projectKey, target: fixed("/api/public/score-configs"),
		body:  func(server) any { return map[string]any{"name": "config-of-b", "dataType": "BOOLEAN"} },
		check: createdInA},
	"GET /api/public/score-configs": {auth: projectKey, target: fixed("/api/public/score-configs?limit=100"), check: noDataOfB},
	"GET /api/public/score-configs/{configId}": {auth: projectKey,
		target: dataPath(func(o dataObjects) string { return "/api/public/score-configs/" + o.scoreConfig }), check: notFound},
	"PATCH /api/public/score-configs/{configId}": {auth: projectKey,
		target: dataPath(func(o dataObjects) string { return "/api/public/score-configs/" + o.scoreConfig }),
		body:   func(server) any { return map[string]any{"isArchived": true, "name": "hijacked"} }, check: notFound},

	// The same bytes in another project are not "already uploaded": a gets an
	// upload URL of its own rather than a hint that b holds the content.
	"POST /api/public/media": {auth: projectKey, target: fixed("/api/public/media"),
		body: func(s server) any {
			return map[string]any{"traceId": s.a.trace, "field": "input", "contentType": mediaTypeOfB,
				"contentLength": len(mediaOfB), "sha256Hash": dataSeed.mediaHash}
		},
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			noDataOfB(t, s, rec)
			got := apitest.Decode[media.UploadURL](t, rec)
			require.NotNil(t, got.UploadURL, "content stored by another project counts as not uploaded")
			assert.Contains(t, *got.UploadURL, "project="+s.a.ProjectID)
		}},
	"PATCH /api/public/media/{mediaId}": {auth: projectKey,
		target: dataPath(func(o dataObjects) string { return "/api/public/media/" + o.media }),
		body: func(server) any {
			return map[string]any{"uploadedAt": "2024-05-01T12:00:00.000Z", "uploadHttpStatus": 500, "uploadHttpError": "hijacked"}
		}, check: ownOrNotFound},
	"GET /api/public/media/{mediaId}": {auth: projectKey,
		target: dataPath(func(o dataObjects) string { return "/api/public/media/" + o.media }), check: notFound},

	// A batch that names b's score id and the shared trace id writes tenant
	// a's own score and trace.
	"POST /api/public/ingestion": {auth: projectKey, target: fixed("/api/public/ingestion"),
		body: func(server) any {
			return map[string]any{"batch": []map[string]any{
				{"id": "e1", "timestamp": "2024-05-01T12:00:00Z", "type": "trace-create",
					"body": map[string]any{"id": sharedTrace, "name": "hijacked"}},
				{"id": "e2", "timestamp": "2024-05-01T12:00:00Z", "type": "score-create",
					"body": map[string]any{"id": scoreOfB, "name": "q", "value": 7, "traceId": sharedTrace}},
			}}
		},
		check: func(t *testing.T, s server, rec *httptest.ResponseRecorder) {
			require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
			got := apitest.Decode[ingestion.Response](t, rec)
			assert.Empty(t, got.Errors)
			assert.ElementsMatch(t, []ingestion.Success{{ID: "e1", Status: http.StatusCreated}, {ID: "e2", Status: http.StatusCreated}},
				got.Successes)
		}},
}

func init() {
	maps.Copy(attacks, dataAttacks)
}

// After every data attack, tenant b's datasets, runs, scores and media are
// whole and unchanged.
func TestDataAttacksLeaveTenantBWhole(t *testing.T) {
	s := newServer(t)
	runAttacks(t, s, dataAttacks)
	assertDataOfBWhole(t, s)
}

func assertDataOfBWhole(t *testing.T, s server) {
	t.Helper()
	o := dataSeed
	get := func(path string) string {
		rec := apitest.Do(t, s.h, http.MethodGet, path, s.b.ProjectAuth, nil)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		assert.NotContains(t, rec.Body.String(), "hijacked", path)
		return rec.Body.String()
	}
	assert.Contains(t, get("/api/public/v2/datasets/"+datasetOfB), `"description":"`+secretOfB+`"`)
	v1 := get("/api/public/datasets/" + datasetOfB)
	assert.Contains(t, v1, `"description":"`+secretOfB+`"`)
	assert.Contains(t, v1, `"runs":["`+runOfB+`"]`)
	assert.Contains(t, v1, `"id":"`+itemOfB+`"`)
	item := get("/api/public/dataset-items/" + itemOfB)
	assert.Contains(t, item, `"status":"ACTIVE"`)
	assert.Contains(t, item, `"datasetId":"`+o.dataset+`"`)
	assert.Contains(t, get("/api/public/datasets/"+datasetOfB+"/runs/"+runOfB), o.runItem)
	assert.Contains(t, get("/api/public/dataset-run-items?runName="+runOfB+"&datasetId="+o.dataset), o.runItem)
	score := get("/api/public/v2/scores/" + scoreOfB)
	assert.Contains(t, score, `"traceId":"`+s.b.trace+`"`)
	assert.Contains(t, score, `"value":1`)
	config := get("/api/public/score-configs/" + o.scoreConfig)
	assert.Contains(t, config, `"isArchived":false`)
	assert.Contains(t, config, `"name":"config-of-b"`)
	assert.Contains(t, get("/api/public/media/"+o.media), `"contentType":"`+mediaTypeOfB+`"`)
	assert.Contains(t, get("/api/public/traces/"+sharedTrace), "shared in "+s.b.ProjectID)
}
