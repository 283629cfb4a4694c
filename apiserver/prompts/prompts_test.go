package prompts

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

func newHandler(t *testing.T, store *controlplane.Store) http.Handler {
	t.Helper()
	h, err := httpx.NewRouter(Routes(store), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return FolderNames(h)
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

func create(t *testing.T, h http.Handler, auth string, body map[string]any) Prompt {
	t.Helper()
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/v2/prompts", auth, body)
	status(t, rec, http.StatusCreated)
	return apitest.Decode[Prompt](t, rec)
}

func TestCreateAndGet(t *testing.T) {
	h, a, _ := setup(t)
	p := create(t, h, a.ProjectAuth, map[string]any{
		"name": "movie-critic", "prompt": "As a {{criticLevel}} critic, rate {{movie}}.",
		"config": map[string]any{"model": "gpt-4o", "temperature": 0.7}, "labels": []string{"production"},
		"tags": []string{"movies"}, "commitMessage": "initial",
	})
	assert.Equal(t, 1, p.Version)
	assert.Equal(t, "text", p.Type)
	assert.True(t, p.IsActive)
	assert.Equal(t, []string{"latest", "production"}, p.Labels)
	assert.Equal(t, "project-a", p.ProjectID)
	require.NotNil(t, p.CommitMessage)
	assert.Equal(t, "initial", *p.CommitMessage)

	chat := create(t, h, a.ProjectAuth, map[string]any{
		"name": "chat", "type": "chat",
		"prompt": []map[string]any{
			{"role": "system", "content": "You are {{role}}.", "type": "chatmessage"},
			{"type": "placeholder", "name": "history"},
		},
	})
	assert.JSONEq(t, `[{"role":"system","content":"You are {{role}}."},{"type":"placeholder","name":"history"}]`, string(chat.Prompt))
	assert.False(t, chat.IsActive)
	assert.Nil(t, chat.CommitMessage)

	// No query: production.
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/movie-critic", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	got := apitest.Decode[map[string]any](t, rec)
	assert.Equal(t, "As a {{criticLevel}} critic, rate {{movie}}.", got["prompt"])
	assert.Equal(t, map[string]any{"model": "gpt-4o", "temperature": 0.7}, got["config"])
	assert.Nil(t, got["resolutionGraph"])
	for _, k := range []string{"id", "createdAt", "updatedAt", "createdBy", "tags", "labels", "isActive", "commitMessage", "version", "type", "name"} {
		assert.Contains(t, got, k)
	}

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/chat", a.ProjectAuth, nil), http.StatusNotFound)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/chat?label=latest", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, "chat", apitest.Decode[Prompt](t, rec).Type)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/chat?version=1", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/nope", a.ProjectAuth, nil)
	status(t, rec, http.StatusNotFound)
	assert.Contains(t, rec.Body.String(), "Prompt not found: 'nope' with label 'production'")
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/chat?version=4", a.ProjectAuth, nil)
	status(t, rec, http.StatusNotFound)
	assert.Contains(t, rec.Body.String(), "with version 4")
}

func TestFolderNames(t *testing.T) {
	h, a, _ := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"name": "team/support/greet", "prompt": "hi", "labels": []string{"production"}})
	for _, path := range []string{
		"/api/public/v2/prompts/team%2Fsupport%2Fgreet",
		"/api/public/v2/prompts/team/support/greet",
		"/api/public/v2/prompts/team%2Fsupport/greet",
	} {
		rec := apitest.Do(t, h, http.MethodGet, path, a.ProjectAuth, nil)
		status(t, rec, http.StatusOK)
		assert.Equal(t, "team/support/greet", apitest.Decode[Prompt](t, rec).Name, path)
	}
	rec := apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/team/support/greet/versions/1", a.ProjectAuth,
		map[string]any{"newLabels": []string{"staging"}})
	status(t, rec, http.StatusOK)
	assert.Equal(t, []string{"latest", "production", "staging"}, apitest.Decode[Prompt](t, rec).Labels)

	// A name that ends like the PATCH path is still a name for GET.
	create(t, h, a.ProjectAuth, map[string]any{"name": "x/versions/2", "prompt": "odd", "labels": []string{"production"}})
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/x/versions/2", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, "x/versions/2", apitest.Decode[Prompt](t, rec).Name)

	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/team/support/greet", a.ProjectAuth, nil), http.StatusNoContent)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/team%2Fsupport%2Fgreet", a.ProjectAuth, nil), http.StatusNotFound)
}

func TestLabelsAndDelete(t *testing.T) {
	h, a, _ := setup(t)
	for i := 1; i <= 3; i++ {
		create(t, h, a.ProjectAuth, map[string]any{"name": "p", "prompt": fmt.Sprint("v", i)})
	}
	rec := apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/p/versions/2", a.ProjectAuth,
		map[string]any{"newLabels": []string{"production"}})
	status(t, rec, http.StatusOK)
	assert.True(t, apitest.Decode[Prompt](t, rec).IsActive)

	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/p/versions/2", a.ProjectAuth,
		map[string]any{"newLabels": []string{"latest"}})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "latest")
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/p/versions/two", a.ProjectAuth, map[string]any{"newLabels": []string{}})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "version")
	rec = apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/p/versions/2", a.ProjectAuth, map[string]any{})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "newLabels")
	status(t, apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/p/versions/9", a.ProjectAuth,
		map[string]any{"newLabels": []string{"x"}}), http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p?label=production&version=2", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p?version=3", a.ProjectAuth, nil), http.StatusNoContent)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/p?label=latest", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, 2, apitest.Decode[Prompt](t, rec).Version)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p?label=production", a.ProjectAuth, nil), http.StatusNoContent)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p?label=production", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p", a.ProjectAuth, nil), http.StatusNoContent)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/p", a.ProjectAuth, nil), http.StatusNotFound)
}

func TestComposition(t *testing.T) {
	h, a, _ := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"name": "shared/tone", "prompt": "Be \"kind\".", "labels": []string{"production"}})
	parent := create(t, h, a.ProjectAuth, map[string]any{"name": "assistant", "labels": []string{"production"},
		"prompt": "Hello. @@@langfusePrompt:name=shared/tone|label=production@@@ Answer {{q}}."})

	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/assistant", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	got := apitest.Decode[Prompt](t, rec)
	assert.JSONEq(t, `"Hello. Be \"kind\". Answer {{q}}."`, string(got.Prompt))
	require.NotNil(t, got.ResolutionGraph)
	assert.Equal(t, PromptRef{ID: parent.ID, Name: "assistant", Version: 1}, got.ResolutionGraph.Root)
	require.Len(t, got.ResolutionGraph.Dependencies[parent.ID], 1)
	assert.Equal(t, "shared/tone", got.ResolutionGraph.Dependencies[parent.ID][0].Name)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/assistant?resolve=false", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	raw := apitest.Decode[Prompt](t, rec)
	assert.Contains(t, string(raw.Prompt), "@@@langfusePrompt:name=shared/tone|label=production@@@")
	assert.Nil(t, raw.ResolutionGraph)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/assistant?resolve=maybe", a.ProjectAuth, nil), http.StatusBadRequest)

	rec = apitest.Do(t, h, http.MethodPost, "/api/public/v2/prompts", a.ProjectAuth,
		map[string]any{"name": "broken", "prompt": "@@@langfusePrompt:name=ghost|label=production@@@"})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "ghost")

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/shared%2Ftone", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "assistant")
}

// allocatedDuring returns the bytes the process allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A text referenced thousands of times would multiply into a response of
// hundreds of MB; resolution refuses it before building it, at creation and,
// when a label later moves to a larger version, at read.
func TestCompositionIsBounded(t *testing.T) {
	store := apitest.ControlPlane(t)
	a := apitest.Seed(t, store, "a")
	h := newHandler(t, store)
	const flat = 16 << 20 // the unbounded resolution allocated over 200 MB
	leaf := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50<<10/45)
	bomb := strings.Repeat("@@@langfusePrompt:name=leaf|version=1@@@", 2000)

	create(t, h, a.ProjectAuth, map[string]any{"name": "leaf", "prompt": leaf})
	var rec *httptest.ResponseRecorder
	alloc := allocatedDuring(func() {
		rec = apitest.Do(t, h, http.MethodPost, "/api/public/v2/prompts", a.ProjectAuth, map[string]any{"name": "bomb", "prompt": bomb})
	})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "max_resolved_bytes")
	assert.Less(t, alloc, uint64(flat))

	// Valid when created: 2,000 references to a short text.
	create(t, h, a.ProjectAuth, map[string]any{"name": "part", "prompt": "short", "labels": []string{"production"}})
	create(t, h, a.ProjectAuth, map[string]any{"name": "wrapper",
		"prompt": strings.Repeat("@@@langfusePrompt:name=part|label=production@@@", 2000)})
	create(t, h, a.ProjectAuth, map[string]any{"name": "part", "prompt": leaf, "labels": []string{"production"}})
	alloc = allocatedDuring(func() {
		rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/wrapper?version=1", a.ProjectAuth, nil)
	})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "max_resolved_bytes")
	assert.Less(t, alloc, uint64(flat))

	// The reference count is bounded too, and both bounds are configurable.
	store.SetPromptLimits(promptcompose.Limits{MaxResolvedBytes: promptcompose.DefaultMaxResolvedBytes, MaxReferences: 3})
	refs := ""
	for i := range 4 {
		create(t, h, a.ProjectAuth, map[string]any{"name": fmt.Sprintf("n%d", i), "prompt": "x"})
		refs += fmt.Sprintf("@@@langfusePrompt:name=n%d|version=1@@@", i)
	}
	rec = apitest.Do(t, h, http.MethodPost, "/api/public/v2/prompts", a.ProjectAuth, map[string]any{"name": "many", "prompt": refs})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "more than 3 prompt references")
	assert.Contains(t, rec.Body.String(), "max_references")
}

func TestValidation(t *testing.T) {
	h, a, _ := setup(t)
	for field, body := range map[string]any{
		"name":           map[string]any{"name": "", "prompt": "x"},
		"prompt":         map[string]any{"name": "p", "prompt": 3},
		"type":           map[string]any{"name": "p", "type": "image", "prompt": "x"},
		"label":          map[string]any{"name": "p", "prompt": "x", "labels": []string{"UPPER"}},
		"prompt[0].role": map[string]any{"name": "p", "type": "chat", "prompt": []map[string]any{{"content": "x"}}},
		"commitMessage":  map[string]any{"name": "p", "prompt": "x", "commitMessage": string(make([]byte, 501))},
	} {
		rec := apitest.Do(t, h, http.MethodPost, "/api/public/v2/prompts", a.ProjectAuth, body)
		status(t, rec, http.StatusBadRequest)
		assert.Contains(t, rec.Body.String(), field)
	}
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/p?version=1&label=x", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts?limit=101", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "limit")
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts?fromUpdatedAt=yesterday", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "fromUpdatedAt")
}

func TestList(t *testing.T) {
	h, a, _ := setup(t)
	for i := range 12 {
		create(t, h, a.ProjectAuth, map[string]any{"name": fmt.Sprintf("p%02d", i), "prompt": "x", "tags": []string{"t"}})
	}
	create(t, h, a.ProjectAuth, map[string]any{"name": "p00", "prompt": "y", "labels": []string{"production"},
		"config": map[string]any{"k": 1}})

	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	list := apitest.Decode[List](t, rec)
	assert.Len(t, list.Data, 10, "the default limit is 10")
	assert.Equal(t, httpx.Meta{Page: 1, Limit: 10, TotalItems: 12, TotalPages: 2}, list.Meta)
	assert.Equal(t, list.Meta, list.Pagination)
	first := list.Data[0]
	assert.Equal(t, "p00", first.Name)
	assert.Equal(t, []int{1, 2}, first.Versions)
	assert.Equal(t, []string{"latest", "production"}, first.Labels)
	assert.Equal(t, []string{"t"}, first.Tags)
	assert.JSONEq(t, `{"k":1}`, string(first.LastConfig))

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts?page=2", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	list = apitest.Decode[List](t, rec)
	require.Len(t, list.Data, 2)
	assert.Equal(t, "p11", list.Data[1].Name)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts?label=production", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	list = apitest.Decode[List](t, rec)
	require.Len(t, list.Data, 1)
	assert.Equal(t, []int{2}, list.Data[0].Versions)
}

func TestIsolation(t *testing.T) {
	h, a, b := setup(t)
	create(t, h, a.ProjectAuth, map[string]any{"name": "mine", "prompt": "a", "labels": []string{"production"}})

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/mine", b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodPatch, "/api/public/v2/prompts/mine/versions/1", b.ProjectAuth,
		map[string]any{"newLabels": []string{"x"}}), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/v2/prompts/mine", b.ProjectAuth, nil), http.StatusNotFound)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts", b.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Empty(t, apitest.Decode[List](t, rec).Data)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts", a.OrgAuth, nil), http.StatusForbidden)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts", "", nil), http.StatusUnauthorized)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/mine", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, []string{"latest", "production"}, apitest.Decode[Prompt](t, rec).Labels, "untouched")
}

// TestConcurrentLabelMoves sends PATCH requests that race to put the same
// labels on different versions; afterwards each label is on exactly one.
func TestConcurrentLabelMoves(t *testing.T) {
	apitest.ForEachBackend(t, func(t *testing.T, store *controlplane.Store) {
		a := apitest.Seed(t, store, "a")
		h := newHandler(t, store)
		const versions = 6
		for i := 1; i <= versions; i++ {
			create(t, h, a.ProjectAuth, map[string]any{"name": "race", "prompt": fmt.Sprint("v", i)})
		}
		var wg sync.WaitGroup
		codes := make(chan int, 2*versions)
		for v := 1; v <= versions; v++ {
			for _, labels := range [][]string{{"production", "beta"}, {"beta", "production"}} {
				wg.Go(func() {
					rec := apitest.Do(t, h, http.MethodPatch, fmt.Sprintf("/api/public/v2/prompts/race/versions/%d", v), a.ProjectAuth,
						map[string]any{"newLabels": labels})
					codes <- rec.Code
				})
			}
		}
		wg.Wait()
		close(codes)
		for code := range codes {
			assert.Equal(t, http.StatusOK, code)
		}
		holders := map[string][]int{}
		for v := 1; v <= versions; v++ {
			rec := apitest.Do(t, h, http.MethodGet, fmt.Sprintf("/api/public/v2/prompts/race?version=%d", v), a.ProjectAuth, nil)
			status(t, rec, http.StatusOK)
			for _, l := range apitest.Decode[Prompt](t, rec).Labels {
				holders[l] = append(holders[l], v)
			}
		}
		assert.Len(t, holders["production"], 1, "%v", holders)
		assert.Len(t, holders["beta"], 1, "%v", holders)
		assert.Equal(t, []int{versions}, holders["latest"])
	})
}

// The v1 routes: creation needs isActive, which adds the production label;
// GET takes the name as a query parameter and answers as v2's GET does.
func TestV1Routes(t *testing.T) {
	h, a, b := setup(t)
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/prompts", a.ProjectAuth,
		map[string]any{"name": "folder/greeting", "prompt": "Hello {{name}}", "isActive": true, "labels": []string{"staging"}})
	status(t, rec, http.StatusCreated)
	v1 := apitest.Decode[Prompt](t, rec)
	assert.Equal(t, 1, v1.Version)
	assert.True(t, v1.IsActive)
	assert.ElementsMatch(t, []string{"latest", "production", "staging"}, v1.Labels)
	for _, field := range []string{`"id":`, `"name":`, `"version":`, `"type":"text"`, `"prompt":`, `"config":`, `"labels":`, `"tags":`,
		`"isActive":true`, `"projectId":"project-a"`, `"createdBy":`} {
		assert.Contains(t, rec.Body.String(), field)
	}

	rec = apitest.Do(t, h, http.MethodPost, "/api/public/prompts", a.ProjectAuth,
		map[string]any{"name": "folder/greeting", "prompt": "Hi {{name}}", "isActive": false})
	status(t, rec, http.StatusCreated)
	v2 := apitest.Decode[Prompt](t, rec)
	assert.Equal(t, 2, v2.Version)
	assert.False(t, v2.IsActive)
	assert.Equal(t, []string{"latest"}, v2.Labels)

	rec = apitest.Do(t, h, http.MethodPost, "/api/public/prompts", a.ProjectAuth, map[string]any{"name": "x", "prompt": "no flag"})
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "isActive is required")
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/prompts", a.ProjectAuth, map[string]any{"name": "x", "isActive": true}),
		http.StatusBadRequest)

	// Without a version the production one, as v2 answers.
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder%2Fgreeting", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	same := apitest.Do(t, h, http.MethodGet, "/api/public/v2/prompts/folder%2Fgreeting", a.ProjectAuth, nil)
	status(t, same, http.StatusOK)
	assert.JSONEq(t, same.Body.String(), rec.Body.String())
	assert.Equal(t, 1, apitest.Decode[Prompt](t, rec).Version)
	rec = apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder/greeting&version=2", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, v2.ID, apitest.Decode[Prompt](t, rec).ID)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/prompts", a.ProjectAuth, nil)
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "name is required")
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder/greeting&version=x", a.ProjectAuth, nil), http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder/greeting&version=9", a.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder/greeting", b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/prompts?name=folder/greeting", a.OrgAuth, nil), http.StatusForbidden)
}
