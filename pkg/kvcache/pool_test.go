package kvcache

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestNewPoolRejectsBadSize(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := NewPool(n); err == nil {
			t.Errorf("NewPool(%d): want error", n)
		}
	}
}

func TestAllocFreeBasics(t *testing.T) {
	p, err := NewPool(8)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Alloc(3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 2}; !equal(a, want) {
		t.Fatalf("fresh pool alloc = %v, want %v", a, want)
	}
	if p.FreeCount() != 5 || p.UsedCount() != 3 {
		t.Fatalf("free/used = %d/%d, want 5/3", p.FreeCount(), p.UsedCount())
	}
	if _, err := p.Alloc(6); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("over-alloc: err = %v, want ErrNoSpace", err)
	}
	if p.FreeCount() != 5 {
		t.Fatalf("failed alloc changed the pool: free = %d", p.FreeCount())
	}
	if _, err := p.Alloc(-1); err == nil {
		t.Fatal("Alloc(-1): want error")
	}
	z, err := p.Alloc(0)
	if err != nil || len(z) != 0 {
		t.Fatalf("Alloc(0) = %v, %v", z, err)
	}
	if err := p.Free(a); err != nil {
		t.Fatal(err)
	}
	if p.FreeCount() != 8 {
		t.Fatalf("free after Free = %d, want 8", p.FreeCount())
	}
}

func TestFreeErrorsLeavePoolUnchanged(t *testing.T) {
	cases := []struct {
		name string
		free []int32
		want error
	}{
		{"negative", []int32{0, -1}, ErrBadSlot},
		{"too large", []int32{1, 8}, ErrBadSlot},
		{"not allocated", []int32{0, 5}, ErrDoubleFree},
		{"listed twice", []int32{1, 2, 1}, ErrDoubleFree},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := NewPool(8)
			a, _ := p.Alloc(4) // 0..3
			if err := p.Free(c.free); !errors.Is(err, c.want) {
				t.Fatalf("Free(%v) err = %v, want %v", c.free, err, c.want)
			}
			if p.FreeCount() != 4 {
				t.Fatalf("pool changed by a failed Free: free = %d", p.FreeCount())
			}
			for _, s := range a {
				if p.RefCount(s) != 1 {
					t.Fatalf("slot %d ref = %d after failed Free", s, p.RefCount(s))
				}
			}
			if err := p.Free(a); err != nil {
				t.Fatalf("Free of the real allocation after a failed Free: %v", err)
			}
			if err := p.Free(a[:1]); !errors.Is(err, ErrDoubleFree) {
				t.Fatalf("second Free: err = %v, want ErrDoubleFree", err)
			}
		})
	}
}

func TestRetain(t *testing.T) {
	p, _ := NewPool(4)
	a, _ := p.Alloc(2)
	if err := p.Retain(a); err != nil {
		t.Fatal(err)
	}
	if err := p.Free(a); err != nil {
		t.Fatal(err)
	}
	if p.FreeCount() != 2 {
		t.Fatalf("slots freed while still referenced: free = %d", p.FreeCount())
	}
	if err := p.Retain([]int32{a[0], 3}); !errors.Is(err, ErrDoubleFree) {
		t.Fatalf("Retain of a free slot: err = %v", err)
	}
	if p.RefCount(a[0]) != 1 {
		t.Fatalf("failed Retain changed ref count: %d", p.RefCount(a[0]))
	}
	if err := p.Free(a); err != nil {
		t.Fatal(err)
	}
	if p.FreeCount() != 4 {
		t.Fatalf("free = %d, want 4", p.FreeCount())
	}
}

// TestPoolProperty runs thousands of random alloc/retain/free operations
// (including invalid ones) against a simple reference model and checks after
// each that no slot leaks, none is handed out twice, and the counters agree.
func TestPoolProperty(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		size := 1 + rng.IntN(300)
		newPool := NewPool
		if seed%2 == 0 {
			newPool = NewCompactPool
		}
		p, err := newPool(size)
		if err != nil {
			t.Fatal(err)
		}
		model := make(map[int32]int) // slot -> references we hold
		var owned [][]int32          // allocations, each freed once per reference
		for op := 0; op < 4000; op++ {
			switch r := rng.IntN(10); {
			case r < 4:
				n := rng.IntN(size/4 + 2)
				var got []int32
				var err error
				if ext := len(owned) > 0 && rng.IntN(2) == 0; ext {
					// Extending one of ours, as a request's slots grow: the new
					// slots are checked as fresh ones, and owned as their own
					// allocation.
					prev := owned[rng.IntN(len(owned))]
					got, err = p.AllocAppend(prev[:len(prev):len(prev)], n)
					got = got[len(prev):]
				} else {
					got, err = p.Alloc(n)
				}
				free := size - len(model)
				if n > free {
					if !errors.Is(err, ErrNoSpace) {
						t.Fatalf("seed %d op %d: Alloc(%d) with %d free: err = %v", seed, op, n, free, err)
					}
					break
				}
				if err != nil || len(got) != n {
					t.Fatalf("seed %d op %d: Alloc(%d) = %d slots, %v", seed, op, n, len(got), err)
				}
				for _, s := range got {
					if model[s] != 0 {
						t.Fatalf("seed %d op %d: slot %d handed out while allocated", seed, op, s)
					}
					model[s] = 1
				}
				owned = append(owned, got)
			case r < 5 && len(owned) > 0:
				i := rng.IntN(len(owned))
				if err := p.Retain(owned[i]); err != nil {
					t.Fatalf("seed %d op %d: Retain: %v", seed, op, err)
				}
				for _, s := range owned[i] {
					model[s]++
				}
				owned = append(owned, append([]int32(nil), owned[i]...))
			case r < 9 && len(owned) > 0:
				i := rng.IntN(len(owned))
				if err := p.Free(owned[i]); err != nil {
					t.Fatalf("seed %d op %d: Free: %v", seed, op, err)
				}
				for _, s := range owned[i] {
					if model[s]--; model[s] == 0 {
						delete(model, s)
					}
				}
				owned[i] = owned[len(owned)-1]
				owned = owned[:len(owned)-1]
			default:
				// An invalid free: a random slot we hold no reference to, or out of range.
				s := int32(rng.IntN(size+10)) - 5
				if _, held := model[s]; held {
					break
				}
				if err := p.Free([]int32{s}); err == nil {
					t.Fatalf("seed %d op %d: Free of unowned slot %d succeeded", seed, op, s)
				}
			}
			checkPool(t, p, model)
		}
		for _, a := range owned {
			if err := p.Free(a); err != nil {
				t.Fatal(err)
			}
		}
		if p.FreeCount() != size {
			t.Fatalf("seed %d: leak: %d of %d free after releasing everything", seed, p.FreeCount(), size)
		}
	}
}

func checkPool(t *testing.T, p *Pool, model map[int32]int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ref)-p.nfree != len(model) {
		t.Fatalf("used %d, reference model holds %d", len(p.ref)-p.nfree, len(model))
	}
	free := 0
	for s := range len(p.free) * 64 {
		bit := p.free[s/64]&(1<<(s%64)) != 0
		switch {
		case s >= len(p.ref):
			if bit {
				t.Fatalf("slot %d past the pool's %d marked free", s, len(p.ref))
			}
		case bit != (p.ref[s] == 0):
			t.Fatalf("slot %d: free bit %v, ref %d", s, bit, p.ref[s])
		case bit:
			free++
		}
	}
	if free != p.nfree {
		t.Fatalf("%d slots marked free, nfree %d", free, p.nfree)
	}
	for s := 0; p.compact && s < min(p.cursor, len(p.ref)); s++ {
		if p.ref[s] == 0 {
			t.Fatalf("compact pool: slot %d free below its cursor %d", s, p.cursor)
		}
	}
	for s, n := range model {
		if int(p.ref[s]) != n {
			t.Fatalf("slot %d ref %d, model %d", s, p.ref[s], n)
		}
	}
}

// TestAllocPlacement: a fresh request is placed at the cursor with room
// ahead of it, its next slots continue its run while they are free, and a
// run that cannot continue goes on at the cursor.
func TestAllocPlacement(t *testing.T) {
	p, err := NewPool(512)
	if err != nil {
		t.Fatal(err)
	}
	run := func(from, n int) []int32 {
		r := make([]int32, n)
		for i := range r {
			r[i] = int32(from + i)
		}
		return r
	}
	a, _ := p.Alloc(16)
	b, _ := p.Alloc(16)
	if !equal(a, run(0, 16)) || !equal(b, run(16+growGap, 16)) {
		t.Fatalf("placements %v and %v, want 0.. and %d..", a, b, 16+growGap)
	}
	a, err = p.AllocAppend(a, growGap)
	if err != nil || !equal(a, run(0, 16+growGap)) {
		t.Fatalf("grown in place: %v, %v", a, err)
	}
	a, err = p.AllocAppend(a, 2) // the next slot is b's: a new run at the cursor
	if c := 16 + growGap + 16 + growGap; err != nil || !equal(a[16+growGap:], run(c, 2)) {
		t.Fatalf("continued at %v, %v, want %d..", a[16+growGap:], err, c)
	}
	if err := p.Free(b); err != nil {
		t.Fatal(err)
	}
	// The cursor (now past a's second run and its gap) reaches the end and
	// wraps to the freed run.
	cursor := 16 + growGap + 16 + growGap + 2 + growGap
	rest, err := p.Alloc(512 - cursor)
	if err != nil || !equal(rest, run(cursor, 512-cursor)) {
		t.Fatalf("to the end: %v, %v", rest, err)
	}
	c, err := p.Alloc(16)
	if err != nil || !equal(c, run(16+growGap, 16)) {
		t.Fatalf("last 16 free slots: %v, %v, want b's run", c, err)
	}
	for _, x := range [][]int32{a, rest, c} {
		if err := p.Free(x); err != nil {
			t.Fatal(err)
		}
	}
	if p.FreeCount() != 512 {
		t.Fatalf("%d free after freeing everything", p.FreeCount())
	}
}

// TestCompactPool: a compact pool hands out the lowest free slots, also to
// a request that grows.
func TestCompactPool(t *testing.T) {
	p, err := NewCompactPool(64)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Alloc(4)
	b, _ := p.Alloc(4)
	if err := p.Free(a); err != nil {
		t.Fatal(err)
	}
	b, err = p.AllocAppend(b, 2)
	if want := []int32{4, 5, 6, 7, 0, 1}; err != nil || !equal(b, want) {
		t.Fatalf("grown: %v, %v, want %v", b, err, want)
	}
}

func TestAllocAppendNoAllocs(t *testing.T) {
	p, _ := NewPool(64)
	buf := make([]int32, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = p.AllocAppend(buf[:0], 16)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Free(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AllocAppend+Free allocate %.1f times per call", allocs)
	}
}

func BenchmarkAllocFree(b *testing.B) {
	p, _ := NewPool(1 << 16)
	buf := make([]int32, 0, 256)
	for b.Loop() {
		buf, _ = p.AllocAppend(buf[:0], 256)
		_ = p.Free(buf)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
