package engine

// Exact recompute. The model rounds a multi-token chunk (batch matmul,
// tiled attention) differently from a one-token step, and a sequence's K/V
// depend on how it was chunked. A request's chunks are therefore a function
// of the request alone: its prompt in chunks of e.chunk starting where its
// first admission's cache hit ended, then every generated token as a step
// of its own. A request recomputed after eviction, or resumed with
// AlreadyGenerated, goes through the same chunks again: the generated
// tokens are replayed one per step, batched with the other requests'
// decodes, without sampling (their logits are not even asked for), so the
// K/V and the logits of its next token are bit for bit those of an
// uninterrupted run.

// nextChunk is the number of tokens r computes in its next forward.
func (e *Engine) nextChunk(r *reqState) int {
	start := r.cacheLen
	if start < 0 { // first admission: the chunks start after the cache hit
		start = r.kvLen
	}
	end := r.promptLen
	if r.kvLen < start {
		// Part of the prefix the request first took from the cache was
		// evicted since: refill it up to where its own chunks start.
		end = min(end, start)
	}
	if r.kvLen >= end {
		return 1
	}
	return min(end-r.kvLen, e.chunk)
}

// keepCached returns how much of the cached prefix just matched for a
// request being recomputed it keeps: the leading positions whose K/V are
// the very ones it had (their signatures agree; another request may have
// cached the same tokens computed in other chunks), cut back to one of
// its chunk boundaries so that the rest is recomputed in its own chunks.
func (e *Engine) keepCached(r *reqState) int {
	q := 0
	for q < len(r.slots) && q < len(r.sig) && e.slotSig[r.slots[q]] == r.sig[q] {
		q++
	}
	switch {
	case q <= r.cacheLen || q >= r.promptLen:
		// Below cacheLen the prefix was the cache's in the first place
		// (refilled by nextChunk); from the prompt's end each position is a
		// step of its own.
		return q
	default:
		return r.cacheLen + (q-r.cacheLen)/e.chunk*e.chunk
	}
}

// computed records the signatures of the n positions r computes from
// r.kvLen in this step's forward. A signature chains the previous
// position's with the token, the position and the chunk, so equal
// signatures mean equal K/V (the model is deterministic and a sequence's
// numbers do not depend on the rest of the batch).
func (e *Engine) computed(r *reqState, n int) {
	start := r.kvLen
	h := uint64(0)
	if start > 0 {
		h = r.sig[start-1]
	}
	chunk := uint64(start)<<32 | uint64(n)
	for p := start; p < start+n; p++ {
		h = sigMix(h, uint64(uint32(r.tokens[p]))|uint64(p)<<32, chunk)
		switch {
		case p == len(r.sig):
			r.sig = append(r.sig, h)
		case r.sig[p] != h:
			// Recomputed differently (its cached prefix was lost): what
			// the request had beyond p is no longer its K/V.
			r.sig = append(r.sig[:p], h)
		}
		e.slotSig[r.slots[p]] = h
	}
}

// sigMix is a 64-bit hash step (murmur3's finalizer over the combined words).
func sigMix(h, a, b uint64) uint64 {
	x := h*0x9e3779b97f4a7c15 ^ a ^ b*0xbf58476d1ce4e5b9
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
