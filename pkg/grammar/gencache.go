package grammar

// genCache is a map bounded in bytes that keeps what was used recently.
// Entries live in a young and an old generation: a hit in the old one
// moves the entry to the young one, and when the young one holds half the
// budget it becomes the old one and the old one is dropped. A cache that
// stops inserting when full would serve what came first forever: a server
// that has seen enough schemas would walk the trie for every new state of
// every later one (MaskBench: mask p99.9 3.3 ms with such a cache full,
// 0.57 ms with room for all). Memory stays within max. Not locked: the
// Vocab's mutex guards it.
type genCache[K comparable, V any] struct {
	young, old map[K]genEntry[V]
	youngBytes int
	oldBytes   int
	max        int
}

type genEntry[V any] struct {
	v    V
	size int
}

func newGenCache[K comparable, V any](max int) genCache[K, V] {
	return genCache[K, V]{young: map[K]genEntry[V]{}, old: map[K]genEntry[V]{}, max: max}
}

func (c *genCache[K, V]) get(k K) (V, bool) {
	if e, ok := c.young[k]; ok {
		return e.v, true
	}
	e, ok := c.old[k]
	if !ok {
		var zero V
		return zero, false
	}
	delete(c.old, k)
	c.oldBytes -= e.size
	c.insert(k, e)
	return e.v, true
}

// put stores v, of size bytes, under k; an entry over half the budget is
// not kept.
func (c *genCache[K, V]) put(k K, v V, size int) {
	if size > c.max/2 {
		return
	}
	if e, ok := c.young[k]; ok {
		c.youngBytes -= e.size
	} else if e, ok := c.old[k]; ok {
		delete(c.old, k)
		c.oldBytes -= e.size
	}
	c.insert(k, genEntry[V]{v, size})
}

func (c *genCache[K, V]) insert(k K, e genEntry[V]) {
	if c.young == nil || c.youngBytes+e.size > c.max/2 {
		c.old, c.oldBytes = c.young, c.youngBytes
		c.young, c.youngBytes = map[K]genEntry[V]{}, 0
	}
	c.young[k] = e
	c.youngBytes += e.size
}
