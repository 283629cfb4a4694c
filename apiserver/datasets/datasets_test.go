package datasets

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/apiserver/media"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// fakeObservations knows one observation of project-a.
type fakeObservations struct{}

func (fakeObservations) GetObservation(_ context.Context, projectID, id string) (chstore.Observation, error) {
	if projectID == "project-a" && id == "obs-1" {
		return chstore.Observation{Observation: model.Observation{ProjectID: projectID, ID: id, TraceID: "trace-of-obs-1"}}, nil
	}
	return chstore.Observation{}, chstore.ErrNotFound
}

// fakeMedia has uploaded one media, m1, to project-a.
type fakeMedia struct{}

func (fakeMedia) Record(_ *http.Request, projectID, id string) (media.Record, error) {
	if projectID == "project-a" && id == "m1" {
		return media.Record{MediaID: id, ContentType: "image/png", ContentLength: 42, URL: "http://media.test/m1",
			URLExpiry: httpx.FromTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}, nil
	}
	return media.Record{}, httpx.NotFound("Media %s not found", id)
}

func newHandler(t *testing.T, store *controlplane.Store) http.Handler {
	t.Helper()
	h, err := httpx.NewRouter(Routes(store, fakeObservations{}, fakeMedia{}), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return h
}

func setup(t *testing.T) (http.Handler, apitest.Tenant, apitest.Tenant) {
	store := apitest.ControlPlane(t)
	a, b := apitest.Seed(t, store, "a"), apitest.Seed(t, store, "b")
	return newHandler(t, store), a, b
}

func status(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func post[T any](t *testing.T, h http.Handler, path, auth string, body any) T {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodPost, path, auth, body)
	status(t, rec, http.StatusOK)
	return apitest.Decode[T](t, rec)
}

func get[T any](t *testing.T, h http.Handler, path, auth string) T {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodGet, path, auth, nil)
	status(t, rec, http.StatusOK)
	return apitest.Decode[T](t, rec)
}

func TestDatasets(t *testing.T) {
	h, a, _ := setup(t)
	d := post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth,
		map[string]any{"name": "evals/qa", "description": "QA pairs", "metadata": map[string]any{"v": 1}})
	assert.Equal(t, "evals/qa", d.Name)
	require.NotNil(t, d.Description)
	assert.Equal(t, "QA pairs", *d.Description)
	assert.JSONEq(t, `{"v":1}`, string(d.Metadata))
	assert.Equal(t, "null", string(d.InputSchema))
	assert.Equal(t, "project-a", d.ProjectID)

	again := post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "evals/qa", "metadata": nil})
	assert.Equal(t, d.ID, again.ID)
	assert.Equal(t, "QA pairs", *again.Description, "omitted description is kept")
	assert.Equal(t, "null", string(again.Metadata), "null clears")

	got := get[Dataset](t, h, "/api/public/v2/datasets/evals%2Fqa", a.ProjectAuth)
	assert.Equal(t, d.ID, got.ID)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/datasets/nope", a.ProjectAuth, nil)
	status(t, rec, http.StatusNotFound)
	assert.Contains(t, rec.Body.String(), "Dataset not found")

	for i := range 3 {
		post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": fmt.Sprint("d", i)})
	}
	list := get[httpx.List[Dataset]](t, h, "/api/public/v2/datasets?limit=3&page=2", a.ProjectAuth)
	assert.Equal(t, httpx.Meta{Page: 2, Limit: 3, TotalItems: 4, TotalPages: 2}, list.Meta)
	require.Len(t, list.Data, 1)

	for field, body := range map[string]any{
		"name":        map[string]any{"name": ""},
		"inputSchema": map[string]any{"name": "s", "inputSchema": map[string]any{"type": 5}},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/v2/datasets", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), field)
	}
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/v2/datasets", a.ProjectAuth, nil), http.StatusBadRequest)
}

func TestItems(t *testing.T) {
	h, a, _ := setup(t)
	post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "qa"})
	item := post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{
		"datasetName": "qa", "id": "7f1c2b4e-client-id", "input": map[string]any{"q": "capital of France?"},
		"expectedOutput": "Paris", "metadata": map[string]any{"src": "manual"}, "sourceTraceId": "t-1",
	})
	assert.Equal(t, "7f1c2b4e-client-id", item.ID, "client ids are kept")
	assert.Equal(t, "ACTIVE", item.Status)
	assert.Equal(t, "qa", item.DatasetName)
	assert.JSONEq(t, `"Paris"`, string(item.ExpectedOutput))
	require.NotNil(t, item.SourceTraceID)
	assert.Nil(t, item.SourceObservationID)

	up := post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{
		"datasetName": "qa", "id": item.ID, "metadata": nil, "status": "ARCHIVED"})
	assert.JSONEq(t, `{"q":"capital of France?"}`, string(up.Input), "omitted input is kept")
	assert.Equal(t, "null", string(up.Metadata), "null clears")
	assert.Equal(t, "ARCHIVED", up.Status)

	list := get[httpx.List[Item]](t, h, "/api/public/dataset-items?datasetName=qa", a.ProjectAuth)
	assert.Empty(t, list.Data, "archived items are not listed")
	assert.Equal(t, int64(0), list.Meta.TotalPages)
	got := get[Item](t, h, "/api/public/dataset-items/"+item.ID, a.ProjectAuth)
	assert.Equal(t, "ARCHIVED", got.Status)

	for i := range 5 {
		post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "qa", "input": i})
	}
	// The SDK pages while totalPages > page.
	var seen []string
	for page := 1; ; page++ {
		list := get[httpx.List[Item]](t, h, fmt.Sprintf("/api/public/dataset-items?datasetName=qa&page=%d&limit=2", page), a.ProjectAuth)
		assert.Equal(t, int64(3), list.Meta.TotalPages)
		for _, it := range list.Data {
			seen = append(seen, string(it.Input))
		}
		if int64(page) >= list.Meta.TotalPages {
			break
		}
	}
	assert.Equal(t, []string{"0", "1", "2", "3", "4"}, seen)
	list = get[httpx.List[Item]](t, h, "/api/public/dataset-items?sourceTraceId=t-1", a.ProjectAuth)
	assert.Empty(t, list.Data)

	rec := apitest.Do(t, h, http.MethodDelete, "/api/public/dataset-items/"+item.ID, a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"message":"Dataset item successfully deleted"}`, rec.Body.String())
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/dataset-items/"+item.ID, a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/dataset-items/"+item.ID, a.ProjectAuth, nil), http.StatusNotFound)

	post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "other"})
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "qa", "id": "shared"})
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", a.ProjectAuth,
		map[string]any{"datasetName": "other", "id": "shared"}), http.StatusConflict)

	for want, body := range map[string]any{
		"datasetName": map[string]any{"input": 1},
		"status":      map[string]any{"datasetName": "qa", "status": "DONE"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), want)
	}
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", a.ProjectAuth,
		map[string]any{"datasetName": "missing"}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/dataset-items?datasetName=missing", a.ProjectAuth, nil), http.StatusNotFound)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/dataset-items?version=2024-01-01T00:00:00Z", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "version")
}

func TestItemSchemas(t *testing.T) {
	h, a, _ := setup(t)
	post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "typed",
		"inputSchema": map[string]any{"type": "object", "required": []string{"messages"}, "properties": map[string]any{
			"messages": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []string{"role"}, "properties": map[string]any{"role": map[string]any{"enum": []string{"user", "system"}}}}},
		}},
		"expectedOutputSchema": map[string]any{"type": "number"},
	})
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "typed",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user"}}}, "expectedOutput": 1})

	rec := apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "typed",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user"}, map[string]any{"role": "bot"}}}})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "input/messages/1/role")
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "typed",
		"input": map[string]any{"messages": []any{}}, "expectedOutput": "one"})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "expectedOutput")
	assert.NotContains(t, rec.Body.String(), "invalid input:")
}

func TestRuns(t *testing.T) {
	h, a, _ := setup(t)
	d := post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "qa/v1"})
	for _, id := range []string{"i1", "i2"} {
		post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "qa/v1", "id": id})
	}
	ri := post[RunItem](t, h, "/api/public/dataset-run-items", a.ProjectAuth, map[string]any{
		"runName": "exp 1", "runDescription": "baseline", "metadata": map[string]any{"model": "m"},
		"datasetItemId": "i1", "traceId": "trace-1", "observationId": "span-1"})
	assert.NotEmpty(t, ri.DatasetRunID, "the SDK needs datasetRunId")
	assert.Equal(t, "exp 1", ri.DatasetRunName)
	require.NotNil(t, ri.ObservationID)
	assert.Equal(t, "span-1", *ri.ObservationID)

	byObservation := post[RunItem](t, h, "/api/public/dataset-run-items", a.ProjectAuth, map[string]any{
		"runName": "exp 1", "datasetItemId": "i2", "observationId": "obs-1"})
	assert.Equal(t, "trace-of-obs-1", byObservation.TraceID, "the trace is looked up from the observation")
	assert.Equal(t, ri.DatasetRunID, byObservation.DatasetRunID)

	run := get[RunWithItems](t, h, "/api/public/datasets/qa%2Fv1/runs/exp%201", a.ProjectAuth)
	assert.Equal(t, ri.DatasetRunID, run.ID)
	assert.Equal(t, "baseline", *run.Description)
	assert.JSONEq(t, `{"model":"m"}`, string(run.Metadata))
	assert.Equal(t, d.ID, run.DatasetID)
	assert.Equal(t, "qa/v1", run.DatasetName)
	require.Len(t, run.DatasetRunItems, 2)

	runs := get[httpx.List[Run]](t, h, "/api/public/datasets/qa%2Fv1/runs", a.ProjectAuth)
	assert.Equal(t, int64(1), runs.Meta.TotalItems)
	items := get[httpx.List[RunItem]](t, h, "/api/public/dataset-run-items?datasetId="+d.ID+"&runName=exp%201&limit=1", a.ProjectAuth)
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 1, TotalItems: 2, TotalPages: 2}, items.Meta)

	for want, body := range map[string]any{
		"runName":       map[string]any{"datasetItemId": "i1", "traceId": "t"},
		"datasetItemId": map[string]any{"runName": "r", "traceId": "t"},
		"traceId":       map[string]any{"runName": "r", "datasetItemId": "i1"},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), want)
	}
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", a.ProjectAuth,
		map[string]any{"runName": "r", "datasetItemId": "ghost", "traceId": "t"}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", a.ProjectAuth,
		map[string]any{"runName": "r", "datasetItemId": "i1", "observationId": "unknown"}), http.StatusNotFound)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/dataset-run-items?runName=x", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "datasetId")
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/dataset-run-items?datasetId="+d.ID+"&runName=nope", a.ProjectAuth, nil),
		http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/datasets/nope/runs", a.ProjectAuth, nil), http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/datasets/qa%2Fv1/runs/exp%201", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"message":"Dataset run successfully deleted"}`, rec.Body.String())
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/datasets/qa%2Fv1/runs/exp%201", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/datasets/qa%2Fv1/runs/exp%201", a.ProjectAuth, nil), http.StatusNotFound)
}

func TestIsolation(t *testing.T) {
	h, a, b := setup(t)
	d := post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "private"})
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "private", "id": "item", "input": "a"})
	post[RunItem](t, h, "/api/public/dataset-run-items", a.ProjectAuth,
		map[string]any{"runName": "run", "datasetItemId": "item", "traceId": "t"})

	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api/public/v2/datasets/private"},
		{http.MethodGet, "/api/public/dataset-items/item"},
		{http.MethodDelete, "/api/public/dataset-items/item"},
		{http.MethodGet, "/api/public/dataset-items?datasetName=private"},
		{http.MethodGet, "/api/public/datasets/private/runs"},
		{http.MethodGet, "/api/public/datasets/private/runs/run"},
		{http.MethodDelete, "/api/public/datasets/private/runs/run"},
		{http.MethodGet, "/api/public/dataset-run-items?datasetId=" + d.ID + "&runName=run"},
	} {
		status(t, apitest.Do(t, h, req.method, req.path, b.ProjectAuth, nil), http.StatusNotFound)
	}
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-items", b.ProjectAuth,
		map[string]any{"datasetName": "private", "id": "item", "input": "b"}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", b.ProjectAuth,
		map[string]any{"runName": "run", "datasetItemId": "item", "traceId": "t"}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", b.ProjectAuth,
		map[string]any{"runName": "run", "datasetItemId": "item", "observationId": "obs-1"}), http.StatusNotFound)
	assert.Empty(t, get[httpx.List[Dataset]](t, h, "/api/public/v2/datasets", b.ProjectAuth).Data)
	assert.Empty(t, get[httpx.List[Item]](t, h, "/api/public/dataset-items", b.ProjectAuth).Data)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/datasets", a.OrgAuth, nil), http.StatusForbidden)

	// a's data is intact.
	item := get[Item](t, h, "/api/public/dataset-items/item", a.ProjectAuth)
	assert.JSONEq(t, `"a"`, string(item.Input))
	run := get[RunWithItems](t, h, "/api/public/datasets/private/runs/run", a.ProjectAuth)
	assert.Len(t, run.DatasetRunItems, 1)
}

// TestConcurrentFirstUse posts run items of one new run in parallel on both
// backends: one run is created and holds them all.
func TestConcurrentFirstUse(t *testing.T) {
	apitest.ForEachBackend(t, func(t *testing.T, store *controlplane.Store) {
		a := apitest.Seed(t, store, "a")
		h := newHandler(t, store)
		post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "qa"})
		const n = 6
		for i := range n {
			post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "qa", "id": fmt.Sprint("i", i)})
		}
		var wg sync.WaitGroup
		runIDs := make(chan string, n)
		for i := range n {
			wg.Go(func() {
				rec := apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", a.ProjectAuth,
					map[string]any{"runName": "parallel", "datasetItemId": fmt.Sprint("i", i), "traceId": fmt.Sprint("t", i)})
				if assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String()) {
					runIDs <- apitest.Decode[RunItem](t, rec).DatasetRunID
				}
			})
		}
		wg.Wait()
		close(runIDs)
		ids := map[string]bool{}
		for id := range runIDs {
			ids[id] = true
		}
		assert.Len(t, ids, 1)
		run := get[RunWithItems](t, h, "/api/public/datasets/qa/runs/parallel", a.ProjectAuth)
		assert.Len(t, run.DatasetRunItems, n)
	})
}

// The v1 dataset routes: the list is v2's; create and get carry items and
// run names; every one stays within the key's project.
func TestDatasetsV1(t *testing.T) {
	h, a, b := setup(t)
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/datasets", a.ProjectAuth, map[string]any{"name": "v1/qa", "description": "QA"})
	status(t, rec, http.StatusOK)
	created := apitest.Decode[DatasetV1](t, rec)
	assert.Equal(t, "v1/qa", created.Name)
	assert.Equal(t, "project-a", created.ProjectID)
	for _, field := range []string{`"id":`, `"name":`, `"description":"QA"`, `"metadata":`, `"projectId":`, `"createdAt":`, `"updatedAt":`,
		`"items":[]`, `"runs":[]`} {
		assert.Contains(t, rec.Body.String(), field)
	}
	post[DatasetV1](t, h, "/api/public/datasets", b.ProjectAuth, map[string]any{"name": "v1/qa", "description": "of b"})
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/datasets", a.ProjectAuth, map[string]any{"description": "no name"}),
		http.StatusBadRequest)

	item := post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "v1/qa", "input": "q1"})
	archived := post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth,
		map[string]any{"datasetName": "v1/qa", "input": "q2", "status": "ARCHIVED"})
	post[Item](t, h, "/api/public/dataset-items", b.ProjectAuth, map[string]any{"datasetName": "v1/qa", "input": "of b"})
	post[RunItem](t, h, "/api/public/dataset-run-items", a.ProjectAuth,
		map[string]any{"runName": "run-1", "datasetItemId": item.ID, "traceId": "t1"})

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/datasets/v1%2Fqa", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	got := apitest.Decode[DatasetV1](t, rec)
	assert.Equal(t, created.ID, got.ID)
	require.Len(t, got.Items, 1, "active items only")
	assert.Equal(t, item.ID, got.Items[0].ID)
	assert.NotEqual(t, archived.ID, got.Items[0].ID)
	assert.Equal(t, []string{"run-1"}, got.Runs)
	assert.NotContains(t, rec.Body.String(), "of b")
	v2 := get[Dataset](t, h, "/api/public/v2/datasets/v1%2Fqa", a.ProjectAuth)
	assert.Equal(t, v2, got.Dataset, "the dataset part is v2's")

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/datasets?limit=10", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	v2list := apitest.Do(t, h, http.MethodGet, "/api/public/v2/datasets?limit=10", a.ProjectAuth, nil)
	assert.JSONEq(t, v2list.Body.String(), rec.Body.String())
	list := apitest.Decode[httpx.List[Dataset]](t, rec)
	require.Len(t, list.Data, 1)
	assert.Equal(t, created.ID, list.Data[0].ID)
	assert.Equal(t, int64(1), list.Meta.TotalItems)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/datasets?page=0", a.ProjectAuth, nil), http.StatusBadRequest)

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/datasets/missing", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/datasets/v1%2Fqa", a.OrgAuth, nil), http.StatusForbidden)

	// A dataset beyond what the route embeds is refused, not cut short.
	defer func(n int) { maxV1Embedded = n }(maxV1Embedded)
	maxV1Embedded = 1
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "v1/qa", "input": "q3"})
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/datasets/v1%2Fqa", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "2 active items")
	assert.Contains(t, rec.Body.String(), "/api/public/dataset-items")
}

// GET /dataset-items?version= reads the dataset as it was; run items take
// their creation time and the dataset version they ran against.
func TestItemVersions(t *testing.T) {
	h, a, _ := setup(t)
	post[Dataset](t, h, "/api/public/v2/datasets", a.ProjectAuth, map[string]any{"name": "versions"})
	at := func() string {
		time.Sleep(2 * time.Millisecond) // versions are kept per microsecond
		now := time.Now().UTC().Format(time.RFC3339Nano)
		time.Sleep(2 * time.Millisecond)
		return now
	}
	items := func(query string) []Item {
		return get[httpx.List[Item]](t, h, "/api/public/dataset-items?datasetName=versions"+query, a.ProjectAuth).Data
	}
	inputs := func(list []Item) map[string]string {
		out := map[string]string{}
		for _, it := range list {
			out[it.ID] = string(it.Input)
		}
		return out
	}

	before := at()
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "versions", "id": "q1", "input": "v1"})
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "versions", "id": "q2", "input": "kept"})
	first := at()
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "versions", "id": "q1", "input": "v2"})
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "versions", "id": "q3", "input": "new"})
	second := at()
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/dataset-items/q2", a.ProjectAuth, nil), http.StatusOK)
	post[Item](t, h, "/api/public/dataset-items", a.ProjectAuth, map[string]any{"datasetName": "versions", "id": "q3", "status": "ARCHIVED"})

	assert.Empty(t, items("&version="+url.QueryEscape(before)))
	assert.Equal(t, map[string]string{"q1": `"v1"`, "q2": `"kept"`}, inputs(items("&version="+url.QueryEscape(first))))
	assert.Equal(t, map[string]string{"q1": `"v2"`, "q2": `"kept"`, "q3": `"new"`}, inputs(items("&version="+url.QueryEscape(second))))
	assert.Equal(t, map[string]string{"q1": `"v2"`}, inputs(items("")), "now: q2 deleted, q3 archived")
	paged := get[httpx.List[Item]](t, h, "/api/public/dataset-items?datasetName=versions&limit=2&page=2&version="+url.QueryEscape(second), a.ProjectAuth)
	assert.Equal(t, int64(3), paged.Meta.TotalItems)
	assert.Len(t, paged.Data, 1)

	rec := apitest.Do(t, h, http.MethodGet, "/api/public/dataset-items?version="+url.QueryEscape(first), a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "datasetName")
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/dataset-items?datasetName=versions&version=last-week", a.ProjectAuth, nil), http.StatusBadRequest)

	created := "2024-05-01T12:00:00.000Z"
	ri := post[RunItem](t, h, "/api/public/dataset-run-items", a.ProjectAuth, map[string]any{
		"runName": "pinned", "datasetItemId": "q1", "traceId": "t1", "createdAt": created, "datasetVersion": first})
	assert.Equal(t, created, time.Time(ri.CreatedAt).UTC().Format("2006-01-02T15:04:05.000Z"), "createdAt is honoured")
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/dataset-run-items", a.ProjectAuth, map[string]any{
		"runName": "pinned", "datasetItemId": "q1", "traceId": "t1", "datasetVersion": before})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "was not active at datasetVersion")
}

// Items answer the media references they hold whose media is stored.
func TestItemMediaReferences(t *testing.T) {
	h, a, b := setup(t)
	ref := "@@@langfuseMedia:type=image/png|id=m1|source=bytes@@@"
	missing := "@@@langfuseMedia:type=image/png|id=not-uploaded|source=bytes@@@"
	for _, tenant := range []apitest.Tenant{a, b} {
		post[Dataset](t, h, "/api/public/v2/datasets", tenant.ProjectAuth, map[string]any{"name": "media"})
		post[Item](t, h, "/api/public/dataset-items", tenant.ProjectAuth, map[string]any{"datasetName": "media", "id": "with-media",
			"input":          map[string]any{"messages": []any{map[string]any{"content": ref}}, "it's": ref},
			"expectedOutput": ref, "metadata": map[string]any{"other": missing, "plain": "text"}})
	}
	item := get[Item](t, h, "/api/public/dataset-items/with-media", a.ProjectAuth)
	want := media.Record{MediaID: "m1", ContentType: "image/png", ContentLength: 42, URL: "http://media.test/m1"}
	require.Len(t, item.MediaReferences, 3, "the media not uploaded stays unresolved")
	var paths []string
	for _, mr := range item.MediaReferences {
		paths = append(paths, mr.Field+" "+mr.JSONPath)
		assert.Equal(t, ref, mr.ReferenceString)
		assert.Equal(t, want.URL, mr.Media.URL)
		assert.Equal(t, want.ContentLength, mr.Media.ContentLength)
	}
	assert.Equal(t, []string{`input $['it\'s']`, "input $['messages'][0]['content']", "expectedOutput $"}, paths)
	listed := get[httpx.List[Item]](t, h, "/api/public/dataset-items?datasetName=media", a.ProjectAuth)
	require.Len(t, listed.Data, 1)
	assert.Len(t, listed.Data[0].MediaReferences, 3)
	theirs := get[Item](t, h, "/api/public/dataset-items/with-media", b.ProjectAuth)
	assert.Empty(t, theirs.MediaReferences, "media resolve in the item's own project only")
	assert.NotNil(t, theirs.MediaReferences, "an empty list, not null")
}
