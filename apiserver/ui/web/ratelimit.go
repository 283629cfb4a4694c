package web

import (
	"sync"
	"time"
)

// Limiter counts attempts per key (an address, an email) in a sliding
// window and refuses more than max. It guards the sign-in forms against
// password guessing. Counts are per process: behind several replicas an
// attacker gets max attempts per replica, still a few per minute. Memory is
// bounded: past maxKeys the oldest windows are dropped.
type Limiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	hits map[string][]time.Time
}

const maxLimiterKeys = 100_000

// NewLimiter allows max attempts per key within window.
func NewLimiter(max int, window time.Duration) *Limiter {
	return &Limiter{max: max, window: window, now: time.Now, hits: map[string][]time.Time{}}
}

// Allow records an attempt for each key and reports whether all of them are
// under the limit; when not, it says how long until the next attempt is
// allowed.
func (l *Limiter) Allow(keys ...string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	cutoff := now.Add(-l.window)
	if len(l.hits) > maxLimiterKeys {
		l.prune(cutoff)
	}
	ok, wait := true, time.Duration(0)
	for _, k := range keys {
		h := l.hits[k]
		i := 0
		for i < len(h) && !h[i].After(cutoff) {
			i++
		}
		h = h[i:]
		if len(h) >= l.max {
			ok = false
			wait = max(wait, h[0].Add(l.window).Sub(now))
		} else {
			h = append(h, now)
		}
		l.hits[k] = h
	}
	return ok, wait
}

// Reset forgets the attempts of a key (after a successful sign-in).
func (l *Limiter) Reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.hits, key)
}

func (l *Limiter) prune(cutoff time.Time) {
	for k, h := range l.hits {
		if len(h) == 0 || !h[len(h)-1].After(cutoff) {
			delete(l.hits, k)
		}
	}
	// Still too many live keys: drop arbitrary ones rather than grow.
	for k := range l.hits {
		if len(l.hits) <= maxLimiterKeys/2 {
			break
		}
		delete(l.hits, k)
	}
}
