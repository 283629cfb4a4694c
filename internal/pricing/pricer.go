package pricing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync/atomic"
	"time"
)

// ModelSource serves the projects' own model definitions. The control plane
// store implements it, and the API server extension exposes it to the
// collector's processors.
type ModelSource interface {
	// ProjectModels returns the definitions of every project that has its
	// own, by project id.
	ProjectModels(ctx context.Context) (map[string][]Model, error)
}

// DefaultCacheSize is the number of (project, model name) lookups a Pricer
// keeps by default.
const DefaultCacheSize = 10000

// Pricer finds the definition for a project's model name: the project's own
// definitions first, then the built-in catalogue. Lookups are cached by
// project and model name; a change of a project's definitions invalidates
// that project's entries. It is safe for concurrent use.
type Pricer struct {
	builtin  *Catalogue
	projects atomic.Pointer[projectSet]
	cache    *lru[cacheKey, cacheEntry]
}

// projectSet is an immutable snapshot of the projects' catalogues, with the
// definitions they were compiled from so that unchanged projects are not
// recompiled.
type projectSet struct {
	catalogues map[string]*Catalogue
	sources    map[string][]Model
}

type cacheKey struct {
	project, model string
}

// cacheEntry holds every definition matching a model name in match order,
// whatever their start dates, so that one entry serves every point in time.
// project is the project catalogue it was computed with; an entry whose
// project catalogue has since been replaced is stale.
type cacheEntry struct {
	project    *Catalogue
	candidates []*Price
}

// NewPricer returns a pricer over the built-in catalogue (nil for none)
// that caches up to cacheSize lookups.
func NewPricer(builtin *Catalogue, cacheSize int) *Pricer {
	p := &Pricer{builtin: builtin, cache: newLRU[cacheKey, cacheEntry](cacheSize)}
	p.projects.Store(&projectSet{})
	return p
}

// Find returns the definition that applies to the project's model name at
// time at.
func (p *Pricer) Find(projectID, model string, at time.Time) (*Price, bool) {
	proj := p.projects.Load().catalogues[projectID]
	key := cacheKey{model: model}
	if proj != nil {
		// Projects without definitions of their own share the built-in results.
		key.project = projectID
	}
	if e, ok := p.cache.get(key); ok && e.project == proj {
		return pick(e.candidates, at)
	}
	candidates := p.builtin.appendMatching(proj.appendMatching(nil, model), model)
	p.cache.put(key, cacheEntry{project: proj, candidates: candidates})
	return pick(candidates, at)
}

// SetProjectModels replaces every project's definitions. Projects whose
// definitions are unchanged keep their compiled catalogue (and their cache
// entries). Invalid definitions are left out and reported; the valid ones
// of the same project still apply.
func (p *Pricer) SetProjectModels(models map[string][]Model) error {
	prev := p.projects.Load()
	next := &projectSet{
		catalogues: make(map[string]*Catalogue, len(models)),
		sources:    make(map[string][]Model, len(models)),
	}
	var errs []error
	for project, defs := range models {
		if len(defs) == 0 {
			continue
		}
		next.sources[project] = defs
		if old, ok := prev.sources[project]; ok && reflect.DeepEqual(old, defs) {
			next.catalogues[project] = prev.catalogues[project]
			continue
		}
		c, err := Compile(defs)
		if err != nil {
			errs = append(errs, fmt.Errorf("project %q: %w", project, err))
		}
		next.catalogues[project] = c
	}
	p.projects.Store(next)
	return errors.Join(errs...)
}

// ProjectModelLister lists one project's own model definitions; the control
// plane store implements it.
type ProjectModelLister interface {
	ListModels(ctx context.Context, projectID string) ([]Model, error)
}

// LoadProject replaces one project's definitions with those src holds now.
// When src fails, the definitions loaded before keep applying.
func (p *Pricer) LoadProject(ctx context.Context, src ProjectModelLister, projectID string) error {
	models, err := src.ListModels(ctx, projectID)
	if err != nil {
		return fmt.Errorf("load the model definitions of project %q: %w", projectID, err)
	}
	return p.SetModelsOf(projectID, models)
}

// SetModelsOf replaces one project's definitions and keeps the others'.
// Unchanged definitions keep their compiled catalogue (and cache entries);
// invalid ones are left out and reported, the valid ones still apply. It
// suits a caller that loads one project's definitions when it needs them,
// and is safe to call concurrently for different projects.
func (p *Pricer) SetModelsOf(projectID string, models []Model) error {
	for {
		prev := p.projects.Load()
		old, had := prev.sources[projectID]
		if !had && len(models) == 0 || had && reflect.DeepEqual(old, models) {
			return nil
		}
		next := &projectSet{catalogues: maps.Clone(prev.catalogues), sources: maps.Clone(prev.sources)}
		if next.catalogues == nil {
			next.catalogues, next.sources = map[string]*Catalogue{}, map[string][]Model{}
		}
		var err error
		if len(models) == 0 {
			delete(next.catalogues, projectID)
			delete(next.sources, projectID)
		} else {
			var c *Catalogue
			if c, err = Compile(models); err != nil {
				err = fmt.Errorf("project %q: %w", projectID, err)
			}
			next.catalogues[projectID], next.sources[projectID] = c, models
		}
		if p.projects.CompareAndSwap(prev, next) {
			return err
		}
	}
}

// Builtin is the built-in catalogue the pricer falls back to.
func (p *Pricer) Builtin() *Catalogue {
	return p.builtin
}
