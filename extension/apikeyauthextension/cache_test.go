package apikeyauthextension

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

func TestVerdictCacheIsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	c := newVerdictCache(3, clock.now)
	for i := range 5 {
		c.put(fmt.Sprint(i), verdict{}, 5*time.Second, 0)
	}
	assert.Len(t, c.entries, 3, "no more than max entries")
	_, ok := c.get("4")
	assert.False(t, ok, "a verdict that does not fit is not remembered")

	// Once the old entries expire, the next put sweeps them out.
	clock.advance(5 * time.Second)
	c.put("new", verdict{valid: true, principal: apikey.Principal{ProjectID: "p"}}, time.Minute, 0)
	assert.Len(t, c.entries, 1)
	v, ok := c.get("new")
	assert.True(t, ok)
	assert.Equal(t, "p", v.principal.ProjectID)

	// Sweeps happen at most once a second.
	c = newVerdictCache(1, clock.now)
	c.put("a", verdict{}, time.Millisecond, 0)
	c.put("b", verdict{}, time.Millisecond, 0) // full: sweeps, nothing expired yet
	clock.advance(time.Millisecond)
	c.put("b", verdict{}, time.Millisecond, 0)
	assert.Contains(t, c.entries, "a", "no second sweep within a second")
	clock.advance(time.Second)
	c.put("b", verdict{}, time.Millisecond, 0)
	assert.Contains(t, c.entries, "b")
	assert.NotContains(t, c.entries, "a")
}

func TestVerdictCacheZeroTTL(t *testing.T) {
	c := newVerdictCache(10, time.Now)
	c.put("k", verdict{valid: true}, 0, 0)
	_, ok := c.get("k")
	assert.False(t, ok)
}

// A clear forgets every verdict, and a verdict reached before it (a
// verification in flight while a key was revoked) is not stored after it.
func TestClearForgetsAndFencesInFlightVerdicts(t *testing.T) {
	c := newVerdictCache(10, time.Now)
	before := c.current()
	c.put("k", verdict{valid: true}, time.Minute, before)
	c.clear()
	_, ok := c.get("k")
	assert.False(t, ok)
	c.put("late", verdict{valid: true}, time.Minute, before)
	_, ok = c.get("late")
	assert.False(t, ok, "verified before the clear")
	c.put("late", verdict{valid: true}, time.Minute, c.current())
	_, ok = c.get("late")
	assert.True(t, ok)
}
