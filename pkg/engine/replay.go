package engine

// Output invariance. The model rounds a token row differently depending on
// the length of the chunk it is computed in (pkg/model: a one-token step
// uses the vector kernels, a chunk of two or more the batch matmul, a chunk
// of 64 or more the tiled flash attention, as llama.cpp does), and a
// position's K/V feed every later position. A request's numbers are
// therefore made a function of the request alone:
//
//   - Canonical chunks. Its prompt is computed in chunks of e.chunk counted
//     from position 0, [0,c) [c,2c) ... [kc,P), wherever a cache hit ends,
//     and every generated token as a step of its own. A cache-less run is
//     what it always was (and what llama.cpp does with -ub c).
//   - Rounding classes. The model says, through RowClasser, which rows of
//     which chunk lengths round alike (1 | 2..63 | 64+ for pkg/model, and
//     with q4_K or q2_K weights also whether a row is among the last n%4 of
//     its chunk, which llama.cpp's repacked gemm leaves to its gemv).
//     Position p's canonical class is that of its row in its canonical
//     chunk.
//   - Signatures. Every slot's K/V carries a signature chaining the previous
//     position's, the token, the position and the class it was computed in.
//     A cached prefix (from the radix cache: another request's, or this
//     request's own before an eviction) is used only as far as its
//     signatures are the ones this request's canonical run would produce,
//     and only up to a position q from which the rest of that canonical
//     chunk, [q, end), computed as a chunk of its own, gives every row its
//     canonical class; the remainder of the
//     prompt then runs in canonical chunks again. A full hit recomputes at
//     most the last 63 prompt tokens; a partial one reuses everything the
//     classes allow.
//
// The generated tokens replayed after an eviction or an infer restart run
// one per step, batched with other requests' decodes, without sampling, so
// the K/V and the logits of the next token are bit for bit those of an
// uninterrupted run.

// RowClasser is implemented by a model whose numbers for a token row
// depend on the chunk the row is computed in only through RowClass(n, i),
// for row i of a chunk of n tokens: rows of the same class, over equal K/V
// of the earlier positions, are bit-identical. A Forwarder without it is
// taken to round every chunk length differently (reuse then only ever
// starts at canonical chunk boundaries).
type RowClasser interface {
	RowClass(n, i int) int
}

// RowClass is f's rounding class of row i of a chunk of n tokens: n itself
// for a Forwarder that does not say. A wrapper around a Forwarder
// implements RowClasser with it, so that the wrapped model's classes show
// through.
func RowClass(f Forwarder, n, i int) int {
	if c, ok := f.(RowClasser); ok {
		return c.RowClass(n, i)
	}
	return n
}

// class is the model's rounding class of row i of a chunk of n tokens.
func (e *Engine) class(n, i int) int { return RowClass(e.m, n, i) }

// canonEnd is the end of r's canonical chunk holding prompt position p.
func (e *Engine) canonEnd(r *reqState, p int) int {
	return min((p/e.chunk+1)*e.chunk, r.promptLen)
}

// canonClass is the class position p of r is computed in by a canonical run.
func (e *Engine) canonClass(r *reqState, p int) int {
	if p >= r.promptLen {
		return e.class(1, 0)
	}
	start := p / e.chunk * e.chunk
	return e.class(e.canonEnd(r, p)-start, p-start)
}

// nextChunk is the number of tokens r computes in its next forward: the
// rest of its canonical chunk (r.kvLen is always a start allowed by
// startAt), or one token past the prompt.
func (e *Engine) nextChunk(r *reqState) int {
	if r.kvLen >= r.promptLen {
		return 1
	}
	return e.canonEnd(r, r.kvLen) - r.kvLen
}

// startAt cuts a reusable prefix length q back to a position from which the
// rest of its canonical chunk, computed as a chunk of its own, rounds every
// row in its canonical class.
func (e *Engine) startAt(r *reqState, q int) int {
	if q >= r.promptLen {
		return q // generated positions are single steps anyway
	}
	start, end := q/e.chunk*e.chunk, e.canonEnd(r, q)
	for ; q > start; q-- {
		if e.sameClasses(start, q, end) {
			break
		}
	}
	return q
}

// sameClasses reports whether every row of [q, end) has the class in a
// chunk [q, end) that it has in the chunk [start, end).
func (e *Engine) sameClasses(start, q, end int) bool {
	for p := q; p < end; p++ {
		if e.class(end-q, p-q) != e.class(end-start, p-start) {
			return false
		}
	}
	return true
}

// reusable returns how many leading positions of slots (a cached prefix of
// r's tokens) hold exactly the K/V of r's canonical run, cut back by
// startAt, and leaves r.sig holding their signatures.
func (e *Engine) reusable(r *reqState, slots []int32) int {
	r.sig = r.sig[:0]
	h := uint64(0)
	for p, sl := range slots {
		h = posSig(h, r.tokens[p], p, e.canonClass(r, p))
		if e.slotSig[sl] != h {
			break
		}
		r.sig = append(r.sig, h)
	}
	q := e.startAt(r, len(r.sig))
	// Windowed KV: the resumed chunk also needs the local K/V of the window
	// before it, which the cache holds only where it was not freed.
	for q > 0 && !(e.localReady(r, q) && e.startAt(r, q) == q) {
		q--
	}
	r.sig = r.sig[:q]
	return q
}

// computed records the signatures of the n positions r computes from
// r.kvLen in this step's forward, in the class the chunk really had.
func (e *Engine) computed(r *reqState, n int) {
	start := r.kvLen
	h := uint64(0)
	if start > 0 {
		h = r.sig[start-1]
	}
	for p := start; p < start+n; p++ {
		h = posSig(h, r.tokens[p], p, e.class(n, p-start))
		switch {
		case p == len(r.sig):
			r.sig = append(r.sig, h)
		case r.sig[p] != h:
			r.sig = append(r.sig[:p], h)
		}
		e.slotSig[r.slots[p]] = h
	}
}

// posSig chains one position's signature.
func posSig(prev uint64, tok int32, p, class int) uint64 {
	return sigMix(prev, uint64(uint32(tok))|uint64(p)<<32, uint64(class)+1)
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
