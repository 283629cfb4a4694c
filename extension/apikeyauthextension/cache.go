package apikeyauthextension // import "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"

import (
	"sync"
	"time"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

// verdict is a remembered outcome of verifying one key pair.
type verdict struct {
	principal apikey.Principal
	valid     bool
	expires   time.Time
}

// verdictCache remembers verdicts by public key and secret hash; it never sees
// a plaintext secret. It holds at most max entries: when full, expired entries
// are swept (at most once a second, so a flood of bad keys costs O(1) per
// request), and a new verdict that still does not fit is not remembered.
type verdictCache struct {
	mu        sync.Mutex
	entries   map[string]verdict
	max       int
	now       func() time.Time
	nextSweep time.Time
	// generation counts clears: a verdict reached before a clear is not
	// stored after it.
	generation uint64
}

func newVerdictCache(maxEntries int, now func() time.Time) *verdictCache {
	return &verdictCache{entries: make(map[string]verdict), max: maxEntries, now: now}
}

func cacheKey(publicKey, secretHash string) string {
	return secretHash + ":" + publicKey
}

// clear forgets every verdict: keys changed in the store.
func (c *verdictCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.generation++
}

// current is the generation a verification starts in; put takes it back.
func (c *verdictCache) current() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

func (c *verdictCache) get(key string) (verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	if !ok {
		return verdict{}, false
	}
	if !c.now().Before(v.expires) {
		delete(c.entries, key)
		return verdict{}, false
	}
	return v, true
}

// put remembers v for ttl; a zero ttl means this kind of verdict is not
// cached, and a verdict from before the last clear is not either.
func (c *verdictCache) put(key string, v verdict, ttl time.Duration, generation uint64) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	now := c.now()
	v.expires = now.Add(ttl)
	if _, exists := c.entries[key]; !exists && len(c.entries) >= c.max {
		if now.Before(c.nextSweep) {
			return
		}
		c.nextSweep = now.Add(time.Second)
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			return
		}
	}
	c.entries[key] = v
}
