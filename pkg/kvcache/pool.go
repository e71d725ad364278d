// Package kvcache is the token-granular KV slot pool shared by all requests
// (LightLLM's TokenAttention memory manager): the model's K/V storage has
// max_total_token_num slots, each holding one token's keys and values for
// every layer, and a request owns a list of slot indexes, one per position.
//
// Slots are reference counted so that a radix prompt cache can share one
// slot between the tree and the requests that matched it: Alloc hands out
// slots with one reference, Retain adds one, Free drops one and the slot
// is free again when the last reference goes.
package kvcache

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// Errors returned (wrapped) by the pool.
var (
	ErrNoSpace    = errors.New("kvcache: not enough free slots")
	ErrBadSlot    = errors.New("kvcache: slot index out of range")
	ErrDoubleFree = errors.New("kvcache: slot is not allocated (double free)")
)

// Pool hands out slot indexes in [0, Size). A Pool is safe for concurrent
// use: the engine allocates from its step loop while other goroutines may
// read the counters.
//
// Where a slot lies does not change any number (attention reads a
// request's keys in the order of its slot list), but it decides how fast
// they are read: a request whose keys lie in one ascending run is read as
// a stream the hardware prefetcher follows, one whose keys are scattered
// over the pool costs a cache miss per key. So AllocAppend places slots
// where they extend the run the request already ends with, and otherwise
// takes the first free slots at a roving cursor (next fit), which it then
// moves past a gap (growGap) so that the request can keep growing in place
// while the next one is placed further on. Freed runs come back as runs;
// only when the pool is nearly full do requests' slots interleave.
//
// A compact pool (NewCompactPool) instead hands out the lowest free slots,
// for a store whose memory grows with the highest slot in use.
type Pool struct {
	mu    sync.Mutex
	ref   []int32  // references held on each slot; 0 = free
	free  []uint64 // bit s%64 of free[s/64] set: slot s is free
	nfree int
	// cursor is where the next placement looks first; in a compact pool
	// no slot below it is free.
	cursor  int
	compact bool // lowest free slots first, no runs
}

// growGap is the free slots a placement leaves ahead of a request for its
// next tokens: 64 tokens of generation in place before it has to start a
// new run.
const growGap = 64

// NewPool returns a pool of size slots, all free.
func NewPool(size int) (*Pool, error) {
	if size <= 0 || size > 1<<31-1 {
		return nil, fmt.Errorf("kvcache: pool size %d out of range (1..%d)", size, 1<<31-1)
	}
	p := &Pool{ref: make([]int32, size), free: make([]uint64, (size+63)/64), nfree: size}
	for i := range p.free {
		p.free[i] = ^uint64(0)
	}
	if tail := size % 64; tail != 0 {
		p.free[len(p.free)-1] = 1<<tail - 1
	}
	return p, nil
}

// NewCompactPool returns a pool of size slots, all free, that hands out the
// lowest free slots (the sliding-window layers' local slots: their store
// holds slots up to the highest in use).
func NewCompactPool(size int) (*Pool, error) {
	p, err := NewPool(size)
	if err != nil {
		return nil, err
	}
	p.compact = true
	return p, nil
}

// Size is the total number of slots (max_total_token_num).
func (p *Pool) Size() int { return len(p.ref) }

// FreeCount is the number of slots with no reference.
func (p *Pool) FreeCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nfree
}

// UsedCount is Size - FreeCount.
func (p *Pool) UsedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ref) - p.nfree
}

// Alloc returns n newly allocated slots, each with one reference.
func (p *Pool) Alloc(n int) ([]int32, error) {
	return p.AllocAppend(make([]int32, 0, max(n, 0)), n)
}

// AllocAppend allocates n slots and appends them to dst, so a caller that
// keeps per-request slot slices allocates no memory in steady state. dst is
// the request's slots so far: the new ones continue its last slot's run
// while the slots after it are free. On error dst is returned unchanged and
// nothing is allocated.
func (p *Pool) AllocAppend(dst []int32, n int) ([]int32, error) {
	if n < 0 {
		return dst, fmt.Errorf("kvcache: alloc of %d slots", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > p.nfree {
		return dst, fmt.Errorf("%w: want %d, free %d of %d", ErrNoSpace, n, p.nfree, len(p.ref))
	}
	if len(dst) > 0 && !p.compact {
		if last := dst[len(dst)-1]; last >= 0 {
			for s := int(last) + 1; n > 0 && s < len(p.ref) && p.isFree(s); s++ {
				p.take(s)
				dst = append(dst, int32(s))
				n--
			}
		}
	}
	if n == 0 {
		return dst, nil
	}
	// Next fit: the free slots from the cursor on, wrapping once. nfree
	// covers n, so the scan ends before it comes back to where it began.
	// A compact pool's cursor is its lowest free slot, so the same scan
	// takes the lowest ones.
	s := p.cursor
	for n > 0 {
		s = p.nextFree(s)
		p.take(s)
		dst = append(dst, int32(s))
		n--
		s++
	}
	if p.compact {
		p.cursor = s
	} else {
		p.cursor = (s + growGap) % len(p.ref)
	}
	return dst, nil
}

// isFree reports whether slot s has no reference.
func (p *Pool) isFree(s int) bool { return p.free[s/64]&(1<<(s%64)) != 0 }

// take marks free slot s allocated with one reference.
func (p *Pool) take(s int) {
	p.free[s/64] &^= 1 << (s % 64)
	p.nfree--
	p.ref[s] = 1
}

// release marks slot s, whose last reference went, free.
func (p *Pool) release(s int32) {
	p.free[s/64] |= 1 << (s % 64)
	p.nfree++
	if p.compact && int(s) < p.cursor {
		p.cursor = int(s)
	}
}

// nextFree is the first free slot at or after s, wrapping past the end;
// the pool has one.
func (p *Pool) nextFree(s int) int {
	if s >= len(p.ref) {
		s = 0
	}
	w := s / 64
	m := p.free[w] &^ (1<<(s%64) - 1)
	for m == 0 {
		w++
		if w == len(p.free) {
			w = 0
		}
		m = p.free[w]
	}
	return w*64 + bits.TrailingZeros64(m)
}

// Free drops one reference on each slot; a slot whose count reaches zero is
// free again. Free is all-or-nothing: if any index is out of range or not
// allocated (including a slot listed more times than it has references), it
// returns an error and the pool is unchanged.
func (p *Pool) Free(slots []int32) error {
	_, err := p.free1(slots, false)
	return err
}

// FreeHeld is Free over the entries of slots that are not -1 (a list of
// local slots, some already freed), and returns how many it freed.
func (p *Pool) FreeHeld(slots []int32) (int, error) {
	return p.free1(slots, true)
}

// free1 drops one reference from each slot (skipping -1 entries when
// skipHeld), all or nothing, and returns how many slots it took.
func (p *Pool) free1(slots []int32, skipHeld bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range slots {
		if skipHeld && s == -1 {
			continue
		}
		var err error
		switch {
		case s < 0 || int(s) >= len(p.ref):
			err = fmt.Errorf("%w: free slot %d (pool size %d)", ErrBadSlot, s, len(p.ref))
		case p.ref[s] == 0:
			err = fmt.Errorf("%w: free slot %d", ErrDoubleFree, s)
		}
		if err != nil {
			// Undo the decrements done so far: a slot that reached zero
			// is allocated again.
			for _, u := range slots[:i] {
				if skipHeld && u == -1 {
					continue
				}
				if p.ref[u] == 0 {
					p.take(int(u))
					continue
				}
				p.ref[u]++
			}
			return 0, err
		}
		p.ref[s]--
		if p.ref[s] == 0 {
			p.release(s)
		}
	}
	if skipHeld {
		return held(slots), nil
	}
	return len(slots), nil
}

// Retain adds one reference to each (allocated) slot. All-or-nothing like Free.
func (p *Pool) Retain(slots []int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range slots {
		var err error
		switch {
		case s < 0 || int(s) >= len(p.ref):
			err = fmt.Errorf("%w: retain slot %d (pool size %d)", ErrBadSlot, s, len(p.ref))
		case p.ref[s] == 0:
			err = fmt.Errorf("%w: retain of free slot %d", ErrDoubleFree, s)
		}
		if err != nil {
			for _, u := range slots[:i] {
				p.ref[u]--
			}
			return err
		}
		p.ref[s]++
	}
	return nil
}

// RefCount reports the references held on slot (0 when free or out of range).
func (p *Pool) RefCount(slot int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slot < 0 || int(slot) >= len(p.ref) {
		return 0
	}
	return int(p.ref[slot])
}
