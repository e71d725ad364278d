package kvcache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRadixMatchInsertSplit(t *testing.T) {
	p, _ := NewPool(64)
	tr := NewRadix(p)
	a, _ := p.Alloc(5)
	if pre, err := tr.Insert([]int32{1, 2, 3, 4, 5}, a); err != nil || pre != 0 {
		t.Fatalf("first insert: %d %v", pre, err)
	}
	// A match that stops inside the edge splits it and locks only the matched part.
	n, got := tr.Match([]int32{1, 2, 3, 9}, nil)
	if n.PrefixLen() != 3 || !slices.Equal(got, a[:3]) {
		t.Fatalf("match = %d %v, want 3 %v", n.PrefixLen(), got, a[:3])
	}
	if tr.EvictableTokens() != 2 {
		t.Fatalf("evictable = %d, want 2 (the unlocked tail)", tr.EvictableTokens())
	}
	// Insert a sibling branch: the first three tokens are already present.
	b, _ := p.Alloc(5)
	pre, err := tr.Insert([]int32{1, 2, 3, 7, 8}, b)
	if err != nil || pre != 3 {
		t.Fatalf("second insert prefix = %d %v, want 3", pre, err)
	}
	if err := p.Free(b[:3]); err != nil { // the caller's duplicates of the shared prefix
		t.Fatal(err)
	}
	if tr.TotalTokens() != 7 || p.UsedCount() != 7 {
		t.Fatalf("tree %d tokens, pool used %d, want 7/7", tr.TotalTokens(), p.UsedCount())
	}
	// Evicting everything spares the locked prefix.
	freed, err := tr.Evict(100)
	if err != nil || freed != 4 || tr.TotalTokens() != 3 || p.UsedCount() != 3 {
		t.Fatalf("evict: freed %d (%v), tree %d, used %d", freed, err, tr.TotalTokens(), p.UsedCount())
	}
	if err := tr.Unlock(n); err != nil {
		t.Fatal(err)
	}
	if err := tr.Unlock(n); err == nil {
		t.Fatal("double unlock: want error")
	}
	if freed, _ := tr.Evict(1); freed != 3 || p.UsedCount() != 0 {
		t.Fatalf("evict after unlock freed %d, used %d", freed, p.UsedCount())
	}
	if _, err := tr.Insert([]int32{1}, nil); err == nil {
		t.Fatal("insert with mismatched slots: want error")
	}
}

func TestRadixEvictsLRU(t *testing.T) {
	p, _ := NewPool(16)
	tr := NewRadix(p)
	for _, seq := range [][]int32{{1, 1}, {2, 2}, {3, 3}} {
		s, _ := p.Alloc(2)
		if _, err := tr.Insert(seq, s); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := tr.Match([]int32{1, 1}, nil) // touch {1,1}
	if err := tr.Unlock(n); err != nil {
		t.Fatal(err)
	}
	if freed, _ := tr.Evict(2); freed != 2 {
		t.Fatalf("freed %d", freed)
	}
	if n, got := tr.Match([]int32{2, 2}, nil); len(got) != 0 {
		t.Fatalf("{2,2} (least recently used) should be gone, matched %v", got)
	} else if err := tr.Unlock(n); err != nil {
		t.Fatal(err)
	}
	for _, seq := range [][]int32{{1, 1}, {3, 3}} {
		n, got := tr.Match(seq, nil)
		if len(got) != 2 {
			t.Fatalf("%v evicted too", seq)
		}
		_ = tr.Unlock(n)
	}
}

// TestRadixProperty simulates requests against a pool with the tree on top:
// random prompts over a small alphabet (so prefixes are shared), matching on
// arrival, private slots for the rest, insertion on release, eviction when
// the pool runs short. After every operation: the tree's tokens plus the
// requests' private slots equal the pool's used count, no slot is held twice,
// matched slots hold the K/V of exactly the matched tokens, and locks add up.
func TestRadixProperty(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		size := 30 + rng.IntN(200)
		p, _ := NewPool(size)
		tr := NewRadix(p)
		// kv[slot] is the "K/V" a request wrote: a hash of the tokens up to it.
		kv := make([]uint64, size)
		type req struct {
			tokens  []int32
			slots   []int32
			node    *Node
			matched int
		}
		var live []*req
		for op := 0; op < 3000; op++ {
			switch r := rng.IntN(10); {
			case r < 5: // arrival
				n := 1 + rng.IntN(min(40, size/2))
				toks := make([]int32, n)
				for i := range toks {
					toks[i] = int32(rng.IntN(3))
				}
				node, slots := tr.Match(toks[:n-1], nil)
				matched := len(slots)
				if node.PrefixLen() != matched {
					t.Fatalf("node prefix %d, matched %d slots", node.PrefixLen(), matched)
				}
				h := uint64(0)
				for i, s := range slots {
					h = h*31 + uint64(toks[i]) + 1
					if kv[s] != h {
						t.Fatalf("seed %d op %d: matched slot %d at %d holds another sequence's K/V", seed, op, s, i)
					}
				}
				need := n - matched
				if free := p.FreeCount(); free < need {
					if _, err := tr.Evict(need - free); err != nil {
						t.Fatal(err)
					}
				}
				slots, err := p.AllocAppend(slots, need)
				if err != nil {
					if err := tr.Unlock(node); err != nil {
						t.Fatal(err)
					}
					break
				}
				for i := matched; i < n; i++ {
					h = h*31 + uint64(toks[i]) + 1
					kv[slots[i]] = h
				}
				live = append(live, &req{tokens: toks, slots: slots, node: node, matched: matched})
			case r < 9 && len(live) > 0: // release: insert, free duplicates, unlock
				i := rng.IntN(len(live))
				q := live[i]
				live = slices.Delete(live, i, i+1)
				pre, err := tr.Insert(q.tokens, q.slots)
				if err != nil {
					t.Fatal(err)
				}
				if pre < q.matched {
					t.Fatalf("insert prefix %d < matched %d", pre, q.matched)
				}
				if err := p.Free(q.slots[q.matched:pre]); err != nil {
					t.Fatalf("seed %d op %d: freeing duplicates: %v", seed, op, err)
				}
				if err := tr.Unlock(q.node); err != nil {
					t.Fatal(err)
				}
			default:
				if _, err := tr.Evict(rng.IntN(20)); err != nil {
					t.Fatal(err)
				}
			}
			private := 0
			for _, q := range live {
				private += len(q.slots) - q.matched
			}
			checkRadix(t, tr, p, private)
		}
		for _, q := range live {
			pre, _ := tr.Insert(q.tokens, q.slots)
			_ = p.Free(q.slots[q.matched:pre])
			_ = tr.Unlock(q.node)
		}
		if tr.EvictableTokens() != tr.TotalTokens() {
			t.Fatalf("locks left after releasing everything: %d of %d evictable", tr.EvictableTokens(), tr.TotalTokens())
		}
		if _, err := tr.Evict(size); err != nil {
			t.Fatal(err)
		}
		if tr.TotalTokens() != 0 || p.UsedCount() != 0 {
			t.Fatalf("seed %d: after evicting all: tree %d, pool used %d", seed, tr.TotalTokens(), p.UsedCount())
		}
	}
}

func checkRadix(t *testing.T, tr *Radix, p *Pool, private int) {
	t.Helper()
	total, locked := 0, 0
	seen := map[int32]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		childLocks := 0
		for first, c := range n.children {
			if c.parent != n || c.key[0] != first || len(c.key) != len(c.slots) || len(c.key) == 0 {
				t.Fatal("malformed radix node")
			}
			if c.depth != n.depth+len(c.key) {
				t.Fatalf("depth %d, parent %d + %d", c.depth, n.depth, len(c.key))
			}
			total += len(c.key)
			if c.lock > 0 {
				locked += len(c.key)
			}
			for _, s := range c.slots {
				if seen[s] {
					t.Fatalf("slot %d stored twice in the tree", s)
				}
				seen[s] = true
				if p.RefCount(s) != 1 {
					t.Fatalf("tree slot %d has %d references", s, p.RefCount(s))
				}
			}
			childLocks += c.lock
			walk(c)
		}
		if n != tr.root && n.lock < childLocks {
			t.Fatalf("node lock %d below its children's %d", n.lock, childLocks)
		}
	}
	walk(tr.root)
	if total != tr.TotalTokens() || locked != tr.total-tr.EvictableTokens() {
		t.Fatalf("counters: total %d/%d, locked %d/%d", total, tr.TotalTokens(), locked, tr.total-tr.EvictableTokens())
	}
	if p.UsedCount() != total+private {
		t.Fatalf("pool used %d != tree %d + private %d", p.UsedCount(), total, private)
	}
}
