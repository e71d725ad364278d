package engine

import (
	"fmt"
)

// KV bookkeeping: a request's slots[:shared] belong to the radix prompt
// cache (locked through r.node), slots[shared:] are the request's own. On
// release or pause the computed part is inserted into the cache, which keeps
// it until it is evicted for room, least recently used first.
//
// Windowed KV (a model with sliding-window layers, WindowedKVer): each
// position also has a local slot (r.local, same ownership rule) for the
// local layers. Once r.kvLen passes p + window - 1 no new token of r reads
// p's local K/V, so dropLocal frees it, except the prompt's pinned tail
// (pinFrom): the local K/V a later request's cache hit on this prompt needs
// to resume (reusable). A request thus holds at most window - 1 + chunk
// local slots while prefilling and window + its pinned tail (< window +
// chunk) after, whatever its length; the cache keeps the local slots it was
// given, so a hit resumes only where the window before it is held.

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
	if e.lpool != nil {
		l, err := e.lpool.AllocAppend(r.local, n)
		if err != nil {
			// Cannot happen while every local slot pairs with a global one.
			_ = e.pool.Free(s[len(r.slots):])
			return fmt.Errorf("engine: request %d: local KV: %w", r.id, err)
		}
		r.local = l
	}
	r.slots = s
	return nil
}

// pinFrom is the first prompt position whose local slot r keeps until it
// is released, for the prompt cache: a later request repeating r's prompt
// resumes at startAt(P-1), one extending it at or after the start of the
// canonical chunk holding P, and either needs the window before that.
func (e *Engine) pinFrom(r *reqState) int {
	P := r.promptLen
	if e.cache == nil || r.noCache {
		return P
	}
	return max(0, min(e.startAt(r, P-1), P/e.chunk*e.chunk)-e.window+1)
}

// dropLocal frees the local slots of r's positions that no later token's
// window reaches (the cache's are only forgotten), but the pinned tail.
func (e *Engine) dropLocal(r *reqState) error {
	if e.lpool == nil {
		return nil
	}
	end := r.kvLen - e.window + 1 // the next token reads positions end..
	pin := r.pin
	e.lfree = e.lfree[:0]
	for p := r.localDone; p < end; p++ {
		if p >= pin && p < r.promptLen {
			continue
		}
		if p >= r.shared && r.local[p] >= 0 {
			e.lfree = append(e.lfree, r.local[p])
		}
		r.local[p] = -1
	}
	r.localDone = max(r.localDone, end)
	if err := e.lpool.Free(e.lfree); err != nil {
		return fmt.Errorf("engine: request %d: local KV: %w", r.id, err)
	}
	return nil
}

// localReady reports whether r holds the local slots a chunk starting at q
// reads: those of the window before q.
func (e *Engine) localReady(r *reqState, q int) bool {
	if e.lpool == nil {
		return true
	}
	for p := max(0, q-e.window+1); p < q; p++ {
		if r.local[p] < 0 {
			return false
		}
	}
	return true
}

// matchCache points a request about to be prefilled at the longest cached
// prefix of its tokens, all but the last (whose logits must be computed),
// of which it keeps only what its own canonical run would have computed
// (reusable, replay.go).
func (e *Engine) matchCache(r *reqState) error {
	if e.cache == nil || r.noCache || r.kvLen > 0 {
		return nil
	}
	r.node, r.slots, r.local = e.cache.MatchLocal(r.tokens[:len(r.tokens)-1], r.slots[:0], e.localBuf(r))
	if keep := e.reusable(r, r.slots); keep < len(r.slots) {
		if err := e.cache.Unlock(r.node); err != nil {
			r.node, r.slots, r.local = nil, r.slots[:0], e.localBuf(r)
			return fmt.Errorf("engine: request %d: %w", r.id, err)
		}
		r.node, r.slots, r.local = e.cache.MatchLocal(r.tokens[:keep], r.slots[:0], e.localBuf(r))
	}
	r.shared = len(r.slots)
	r.kvLen = r.shared
	r.localDone = 0
	return nil
}

// unmatchCache undoes matchCache for a request that was not admitted after all.
func (e *Engine) unmatchCache(r *reqState) error {
	if r.node == nil {
		return nil
	}
	err := e.cache.Unlock(r.node)
	r.node, r.shared, r.kvLen, r.slots, r.local, r.localDone = nil, 0, 0, r.slots[:0], e.localBuf(r), 0
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
		var local []int32
		if e.lpool != nil {
			local = r.local[:n]
		}
		pre, ierr := e.cache.InsertLocal(r.tokens[:n], r.slots[:n], local)
		if ierr == nil {
			// slots[shared:pre] duplicate what another request cached meanwhile.
			ierr = e.pool.Free(r.slots[r.shared:pre])
			if ierr == nil && e.lpool != nil {
				_, ierr = e.lpool.FreeHeld(r.local[r.shared:pre])
			}
			keep = n
		}
		if uerr := e.cache.Unlock(r.node); ierr == nil {
			ierr = uerr
		}
		err = ierr
	}
	if err == nil && keep < len(r.slots) {
		err = e.pool.Free(r.slots[keep:])
		if err == nil && e.lpool != nil {
			_, err = e.lpool.FreeHeld(r.local[keep:])
		}
	}
	r.slots, r.kvLen, r.shared, r.node = r.slots[:0], 0, 0, nil
	r.local, r.localDone = e.localBuf(r), 0
	if err != nil {
		return fmt.Errorf("engine: freeing the KV of request %d: %w", r.id, err)
	}
	return nil
}

// localBuf is r.local emptied, or nil when the KV store is not windowed.
func (e *Engine) localBuf(r *reqState) []int32 {
	if e.lpool == nil {
		return nil
	}
	if r.local == nil {
		return make([]int32, 0, cap(r.slots))
	}
	return r.local[:0]
}
