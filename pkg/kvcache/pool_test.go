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
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		size := 1 + rng.IntN(300)
		p, err := NewPool(size)
		if err != nil {
			t.Fatal(err)
		}
		model := make(map[int32]int) // slot -> references we hold
		var owned [][]int32          // allocations, each freed once per reference
		for op := 0; op < 4000; op++ {
			switch r := rng.IntN(10); {
			case r < 4:
				n := rng.IntN(size/4 + 2)
				got, err := p.Alloc(n)
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
	if len(p.ref)-len(p.free) != len(model) {
		t.Fatalf("used %d, reference model holds %d", len(p.ref)-len(p.free), len(model))
	}
	seen := make(map[int32]bool, len(p.free))
	for _, s := range p.free {
		if seen[s] {
			t.Fatalf("slot %d twice on the free stack", s)
		}
		seen[s] = true
		if p.ref[s] != 0 {
			t.Fatalf("free slot %d has ref %d", s, p.ref[s])
		}
	}
	for s, n := range model {
		if int(p.ref[s]) != n {
			t.Fatalf("slot %d ref %d, model %d", s, p.ref[s], n)
		}
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
