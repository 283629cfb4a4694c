package pricing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testPricer(t *testing.T) *Pricer {
	t.Helper()
	return NewPricer(builtinCatalogue(t), 100)
}

func TestProjectModelsOverrideBuiltin(t *testing.T) {
	p := testPricer(t)
	custom := flat("custom", "my-gpt-4o", `gpt-4o`, map[string]float64{"input": 1e-6})
	require.NoError(t, p.SetProjectModels(map[string][]Model{"proj": {custom}}))

	got, ok := p.Find("proj", "gpt-4o", farFuture)
	require.True(t, ok)
	assert.Equal(t, "custom", got.ID(), "a project definition wins over a more specific built-in one")
	got, ok = p.Find("proj", "gpt-4o-mini", farFuture)
	require.True(t, ok)
	assert.Equal(t, "custom", got.ID(), "the unanchored project pattern matches this too")
	got, ok = p.Find("proj", "claude-3-haiku", farFuture)
	require.True(t, ok)
	assert.Equal(t, "claude-3-haiku", got.Name(), "other names fall back to the built-in catalogue")
	got, ok = p.Find("other", "gpt-4o", farFuture)
	require.True(t, ok)
	assert.Equal(t, "gpt-4o", got.Name(), "other projects are not affected")

	// A project definition that starts later leaves earlier generations to the built-in one.
	later := custom
	later.StartDate = day("2030-01-01")
	require.NoError(t, p.SetProjectModels(map[string][]Model{"proj": {later}}))
	got, ok = p.Find("proj", "gpt-4o", day("2029-12-31"))
	require.True(t, ok)
	assert.Equal(t, "gpt-4o", got.Name())
	got, ok = p.Find("proj", "gpt-4o", day("2030-01-01"))
	require.True(t, ok)
	assert.Equal(t, "custom", got.ID())
}

func TestSetModelsOf(t *testing.T) {
	p := testPricer(t)
	a := flat("a1", "a", `^m$`, map[string]float64{"input": 1})
	b := flat("b1", "b", `^m$`, map[string]float64{"input": 1})
	require.NoError(t, p.SetProjectModels(map[string][]Model{"pb": {b}}))
	require.NoError(t, p.SetModelsOf("pa", []Model{a}))
	catA := p.projects.Load().catalogues["pa"]
	for project, id := range map[string]string{"pa": "a1", "pb": "b1"} {
		got, ok := p.Find(project, "m", farFuture)
		require.True(t, ok, project)
		assert.Equal(t, id, got.ID(), "one project set, the other kept")
	}

	require.NoError(t, p.SetModelsOf("pa", []Model{a}))
	assert.Same(t, catA, p.projects.Load().catalogues["pa"], "unchanged definitions keep their catalogue")

	a2 := flat("a2", "a", `^m$`, map[string]float64{"input": 2})
	bad := flat("bad", "bad", `(`, map[string]float64{"input": 1})
	err := p.SetModelsOf("pa", []Model{a2, bad})
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.Contains(t, err.Error(), `project "pa"`)
	got, ok := p.Find("pa", "m", farFuture)
	require.True(t, ok)
	assert.Equal(t, "a2", got.ID(), "the valid definition applies, the cached lookup is replaced")

	require.NoError(t, p.SetModelsOf("pa", nil))
	_, ok = p.Find("pa", "m", farFuture)
	assert.False(t, ok, "no definitions left for the name")
	got, ok = p.Find("pb", "m", farFuture)
	require.True(t, ok)
	assert.Equal(t, "b1", got.ID())
	require.NoError(t, p.SetModelsOf("none", nil))
}

// listerFunc serves one project's definitions, or fails.
type listerFunc func(projectID string) ([]Model, error)

func (f listerFunc) ListModels(_ context.Context, projectID string) ([]Model, error) {
	return f(projectID)
}

func TestLoadProject(t *testing.T) {
	p := testPricer(t)
	a := flat("a1", "a", `^m$`, map[string]float64{"input": 1})
	ok := listerFunc(func(string) ([]Model, error) { return []Model{a}, nil })
	require.NoError(t, p.LoadProject(context.Background(), ok, "pa"))
	got, found := p.Find("pa", "m", farFuture)
	require.True(t, found)
	assert.Equal(t, "a1", got.ID())

	down := listerFunc(func(string) ([]Model, error) { return nil, errors.New("store down") })
	err := p.LoadProject(context.Background(), down, "pa")
	require.ErrorContains(t, err, "store down")
	got, found = p.Find("pa", "m", farFuture)
	require.True(t, found, "an outage keeps the definitions loaded before")
	assert.Equal(t, "a1", got.ID())
}

func TestSetModelsOfConcurrently(t *testing.T) {
	p := testPricer(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			project := fmt.Sprint("p", i)
			assert.NoError(t, p.SetModelsOf(project, []Model{flat(project, project, `^m$`, map[string]float64{"input": 1})}))
		})
	}
	wg.Wait()
	for i := range 8 {
		got, ok := p.Find(fmt.Sprint("p", i), "m", farFuture)
		require.True(t, ok, "no project's definitions were lost")
		assert.Equal(t, fmt.Sprint("p", i), got.ID())
	}
}

func TestSetProjectModelsInvalidatesOnlyChangedProjects(t *testing.T) {
	p := testPricer(t)
	a := flat("a1", "a", `^m$`, map[string]float64{"input": 1})
	b := flat("b1", "b", `^m$`, map[string]float64{"input": 1})
	require.NoError(t, p.SetProjectModels(map[string][]Model{"pa": {a}, "pb": {b}}))
	catB := p.projects.Load().catalogues["pb"]

	got, ok := p.Find("pa", "m", farFuture)
	require.True(t, ok)
	assert.Equal(t, "a1", got.ID())

	a2 := flat("a2", "a", `^m$`, map[string]float64{"input": 2})
	require.NoError(t, p.SetProjectModels(map[string][]Model{"pa": {a2}, "pb": {b}}))
	assert.Same(t, catB, p.projects.Load().catalogues["pb"], "unchanged project keeps its compiled catalogue")
	got, ok = p.Find("pa", "m", farFuture)
	require.True(t, ok)
	assert.Equal(t, "a2", got.ID(), "the cached lookup of the changed project is not reused")

	require.NoError(t, p.SetProjectModels(nil))
	_, ok = p.Find("pa", "m", farFuture)
	assert.False(t, ok, "removed project models no longer apply")
}

func TestSetProjectModelsKeepsValidDefinitions(t *testing.T) {
	p := testPricer(t)
	err := p.SetProjectModels(map[string][]Model{"p": {
		flat("bad", "bad", "(", map[string]float64{"input": 1}),
		flat("good", "good", "^good$", map[string]float64{"input": 1}),
	}})
	require.ErrorIs(t, err, ErrInvalidModel)
	assert.ErrorContains(t, err, `project "p"`)
	got, ok := p.Find("p", "good", farFuture)
	require.True(t, ok)
	assert.Equal(t, "good", got.ID())
}

func TestFindCachesMisses(t *testing.T) {
	p := testPricer(t)
	for i := range 3 {
		_, ok := p.Find(fmt.Sprint("proj", i), "unknown-model", farFuture)
		assert.False(t, ok)
	}
	assert.Equal(t, 1, p.cache.len(), "projects without own models share one entry, misses included")
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU[string, int](2)
	c.put("a", 1)
	c.put("b", 2)
	_, _ = c.get("a")
	c.put("c", 3)
	_, ok := c.get("b")
	assert.False(t, ok, "b was least recently used")
	v, ok := c.get("a")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	c.put("a", 10)
	v, _ = c.get("a")
	assert.Equal(t, 10, v)
	assert.Equal(t, 2, c.len())
}

// Lookups run while the project definitions are replaced (run with -race).
func TestFindDuringReload(t *testing.T) {
	p := testPricer(t)
	defs := func(price float64) map[string][]Model {
		return map[string][]Model{"p": {flat("c", "c", `^gpt-4o$`, map[string]float64{"input": price})}}
	}
	require.NoError(t, p.SetProjectModels(defs(1)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			assert.NoError(t, p.SetProjectModels(defs(float64(i%2+1))))
		}
	}()
	for {
		select {
		case <-done:
			got, ok := p.Find("p", "gpt-4o", farFuture)
			require.True(t, ok)
			c, ok := got.Cost(map[string]int64{"input": 1})
			require.True(t, ok)
			assert.Equal(t, 2.0, c.Total, "the last definitions apply")
			return
		default:
			got, ok := p.Find("p", "gpt-4o", farFuture)
			require.True(t, ok)
			assert.Equal(t, "c", got.ID())
		}
	}
}
