package pricing

import "sync"

// lru is a fixed-size map that evicts the least recently used entry. The
// list is intrusive, so a hit neither allocates nor copies.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	size  int
	items map[K]*lruNode[K, V]
	head  lruNode[K, V] // sentinel: head.next is the most recent
}

type lruNode[K comparable, V any] struct {
	key        K
	value      V
	prev, next *lruNode[K, V]
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	c := &lru[K, V]{size: max(size, 1), items: make(map[K]*lruNode[K, V], max(size, 1))}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.unlink(n)
	c.pushFront(n)
	return n.value, true
}

func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.items[k]; ok {
		n.value = v
		c.unlink(n)
		c.pushFront(n)
		return
	}
	var n *lruNode[K, V]
	if len(c.items) >= c.size {
		// Reuse the evicted node.
		n = c.head.prev
		c.unlink(n)
		delete(c.items, n.key)
	} else {
		n = new(lruNode[K, V])
	}
	n.key, n.value = k, v
	c.items[k] = n
	c.pushFront(n)
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *lru[K, V]) unlink(n *lruNode[K, V]) {
	n.prev.next, n.next.prev = n.next, n.prev
}

func (c *lru[K, V]) pushFront(n *lruNode[K, V]) {
	n.prev, n.next = &c.head, c.head.next
	c.head.next.prev = n
	c.head.next = n
}
