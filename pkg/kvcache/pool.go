// Package kvcache is the token-granular KV slot pool shared by all requests
// (LightLLM's TokenAttention memory manager): the model's K/V storage has
// max_total_token_num slots, each holding one token's keys and values for
// every layer, and a request owns a list of slot indexes, one per position.
//
// Slots are reference counted so that a radix prompt cache can share one
// slot between the tree and the requests that matched it: Alloc hands out
// slots with one reference, Retain adds one, Free drops one and the slot
// returns to the free stack when the last reference goes.
package kvcache

import (
	"errors"
	"fmt"
	"sync"
)

// Errors returned (wrapped) by the pool.
var (
	ErrNoSpace    = errors.New("kvcache: not enough free slots")
	ErrBadSlot    = errors.New("kvcache: slot index out of range")
	ErrDoubleFree = errors.New("kvcache: slot is not allocated (double free)")
)

// Pool hands out slot indexes in [0, Size). Alloc and Free are O(tokens).
// A Pool is safe for concurrent use: the engine allocates from its step loop
// while other goroutines may read the counters.
type Pool struct {
	mu   sync.Mutex
	free []int32 // stack of free slots; the top is free[len(free)-1]
	ref  []int32 // references held on each slot; 0 = free
}

// NewPool returns a pool of size slots, all free.
func NewPool(size int) (*Pool, error) {
	if size <= 0 || size > 1<<31-1 {
		return nil, fmt.Errorf("kvcache: pool size %d out of range (1..%d)", size, 1<<31-1)
	}
	p := &Pool{free: make([]int32, size), ref: make([]int32, size)}
	// Lowest index on top so a fresh pool hands out 0, 1, 2, ... (easier to read in logs).
	for i := range p.free {
		p.free[i] = int32(size - 1 - i)
	}
	return p, nil
}

// Size is the total number of slots (max_total_token_num).
func (p *Pool) Size() int { return len(p.ref) }

// FreeCount is the number of slots with no reference.
func (p *Pool) FreeCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// UsedCount is Size - FreeCount.
func (p *Pool) UsedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ref) - len(p.free)
}

// Alloc returns n newly allocated slots, each with one reference.
func (p *Pool) Alloc(n int) ([]int32, error) {
	return p.AllocAppend(make([]int32, 0, max(n, 0)), n)
}

// AllocAppend allocates n slots and appends them to dst, so a caller that
// keeps per-request slot slices allocates no memory in steady state. On error
// dst is returned unchanged and nothing is allocated.
func (p *Pool) AllocAppend(dst []int32, n int) ([]int32, error) {
	if n < 0 {
		return dst, fmt.Errorf("kvcache: alloc of %d slots", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return dst, fmt.Errorf("%w: want %d, free %d of %d", ErrNoSpace, n, len(p.free), len(p.ref))
	}
	top := len(p.free) - n
	got := p.free[top:]
	for _, s := range got {
		p.ref[s] = 1
	}
	// Hand out in stack order (top first) so a fresh pool yields ascending slots.
	for i := len(got) - 1; i >= 0; i-- {
		dst = append(dst, got[i])
	}
	p.free = p.free[:top]
	return dst, nil
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
	mark := len(p.free)
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
			// Undo the decrements done so far: slots pushed on the stack since
			// mark are exactly those that reached zero.
			for _, u := range slots[:i] {
				if !skipHeld || u != -1 {
					p.ref[u]++
				}
			}
			p.free = p.free[:mark]
			return 0, err
		}
		p.ref[s]--
		if p.ref[s] == 0 {
			p.free = append(p.free, s)
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
