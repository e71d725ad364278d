package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// Words repeat a lot in real text; like HF's BPE cache, remember the ids of
// short words. Sharded so concurrent encoders rarely meet on one lock.
const (
	cacheMaxWordLen  = 64
	cacheShards      = 32
	cacheShardMaxLen = 4096 // a full shard is emptied, bounding memory
)

type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)%cacheShards]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	sh := c.shard(w)
	sh.mu.RLock()
	ids, ok := sh.m[w]
	sh.mu.RUnlock()
	return ids, ok
}

// put stores a copy of ids under a copy of w (w usually points into a
// caller's larger string, which the cache must not keep alive).
func (c *wordCache) put(w string, ids []int32) {
	sh := c.shard(w)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= cacheShardMaxLen {
		sh.m = make(map[string][]int32, 256)
	}
	sh.m[strings.Clone(w)] = append([]int32(nil), ids...)
	sh.mu.Unlock()
}
