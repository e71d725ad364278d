package engine

import (
	"fmt"
)

// KV bookkeeping: a request's slots[:shared] belong to the radix prompt
// cache (locked through r.node), slots[shared:] are the request's own. On
// release or pause the computed part is inserted into the cache, which keeps
// it until it is evicted for room, least recently used first.

// available is what can be allocated now: free slots plus cached tokens no
// running request uses.
func (e *Engine) available() int {
	n := e.pool.FreeCount()
	if e.cache != nil {
		n += e.cache.EvictableTokens()
	}
	return n
}

// allocate appends n slots to r's slot list, evicting cached prefixes first
// when the pool alone is short.
func (e *Engine) allocate(r *reqState, n int) error {
	if n <= 0 {
		return nil
	}
	if free := e.pool.FreeCount(); free < n && e.cache != nil {
		freed, err := e.cache.Evict(n - free)
		e.stats.CacheEvictedTokens += uint64(freed)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	s, err := e.pool.AllocAppend(r.slots, n)
	if err != nil {
		return fmt.Errorf("engine: request %d: %w", r.id, err)
	}
	r.slots = s
	return nil
}

// matchCache points a request about to be prefilled at the longest cached
// prefix of its tokens, all but the last (whose logits must be computed),
// of which it keeps only what its own canonical run would have computed
// (reusable, replay.go).
func (e *Engine) matchCache(r *reqState) error {
	if e.cache == nil || r.noCache || r.kvLen > 0 {
		return nil
	}
	r.node, r.slots = e.cache.Match(r.tokens[:len(r.tokens)-1], r.slots[:0])
	if keep := e.reusable(r, r.slots); keep < len(r.slots) {
		if err := e.cache.Unlock(r.node); err != nil {
			r.node, r.slots = nil, r.slots[:0]
			return fmt.Errorf("engine: request %d: %w", r.id, err)
		}
		r.node, r.slots = e.cache.Match(r.tokens[:keep], r.slots[:0])
	}
	r.shared = len(r.slots)
	r.kvLen = r.shared
	return nil
}

// unmatchCache undoes matchCache for a request that was not admitted after all.
func (e *Engine) unmatchCache(r *reqState) error {
	if r.node == nil {
		return nil
	}
	err := e.cache.Unlock(r.node)
	r.node, r.shared, r.kvLen, r.slots = nil, 0, 0, r.slots[:0]
	if err != nil {
		return fmt.Errorf("engine: request %d: %w", r.id, err)
	}
	return nil
}

// freeKV gives up all of a request's KV: the computed tokens go to the prompt
// cache (when on), the rest back to the pool. A finished request caches only
// its prompt: its generated tokens were computed one per step, in a class no
// later prompt's own run computes them in (replay.go), so they would only
// hold the cache's path against that prompt's reusable K/V; a paused one
// caches everything, for its own recompute. An error means the engine's
// bookkeeping is broken (the pool refuses bad frees and stays consistent).
func (e *Engine) freeKV(r *reqState, generatedToo bool) error {
	var err error
	keep := 0 // leading slots that end up owned by the cache
	if r.node != nil {
		n := r.kvLen
		if !generatedToo {
			n = min(n, max(r.promptLen, r.shared))
		}
		pre, ierr := e.cache.Insert(r.tokens[:n], r.slots[:n])
		if ierr == nil {
			// slots[shared:pre] duplicate what another request cached meanwhile.
			ierr = e.pool.Free(r.slots[r.shared:pre])
			keep = n
		}
		if uerr := e.cache.Unlock(r.node); ierr == nil {
			ierr = uerr
		}
		err = ierr
	}
	if err == nil && keep < len(r.slots) {
		err = e.pool.Free(r.slots[keep:])
	}
	r.slots, r.kvLen, r.shared, r.node = r.slots[:0], 0, 0, nil
	if err != nil {
		return fmt.Errorf("engine: freeing the KV of request %d: %w", r.id, err)
	}
	return nil
}
