package grammar

import (
	"math/bits"
	"sync"
)

// walker computes masks by walking the vocabulary trie.
type walker struct {
	g      *Grammar
	v      *Vocab
	bits   []uint64
	states []int32 // DFA state per trie depth on the fast path
}

// fill ORs into bits every token allowed after configuration cfg.
func (w *walker) fill(cfg []*stack, out []uint64) {
	w.bits = out
	closed, canEnd := w.g.closure(cfg, nil)
	if canEnd {
		for _, e := range w.v.eos {
			out[e>>6] |= 1 << (uint(e) & 63)
		}
	}
	for _, s := range closed {
		d := w.g.rules[s.rule]
		if !d.leaf {
			w.children(0, []*stack{s})
			continue
		}
		// What a rule that calls nothing allows is the same in every
		// context, except past the points where it may return.
		lr := w.v.leaf(d, s.state)
		lr.orInto(out)
		if s.parent == nil || len(lr.exits) == 0 {
			continue
		}
		below, _ := w.g.closure([]*stack{s.parent}, nil)
		if len(below) == 0 {
			continue
		}
		for _, n := range lr.exits {
			w.children(n, below)
		}
	}
	w.bits = nil
}

// node handles trie node n reached with configuration cfg (not empty):
// its tokens are allowed, and its subtree is explored.
func (w *walker) node(n int32, cfg []*stack) {
	w.v.setTokens(w.bits, n)
	if w.v.nodeEnd[n] == n+1 {
		return
	}
	if len(cfg) == 1 {
		s := cfg[0]
		if d := w.g.rules[s.rule]; d.plain[s.state] {
			w.fast(n, s, d)
			return
		}
	}
	closed, _ := w.g.closure(cfg, nil)
	w.children(n, closed)
}

// children explores the children of node n from a closed configuration.
func (w *walker) children(n int32, closed []*stack) {
	if len(closed) == 0 {
		return
	}
	v := w.v
	end := v.nodeEnd[n]
	var next []*stack
	for c := n + 1; c < end; c = v.nodeEnd[c] {
		next = w.g.step(closed, v.nodeByte[c], next[:0])
		if len(next) > 0 {
			// node may keep next; hand it a copy only when it does.
			w.node(c, append([]*stack(nil), next...))
		}
	}
}

// fast walks the subtree of n while the single stack s stays in states
// that only step bytes: one table lookup per trie node.
func (w *walker) fast(n int32, s *stack, d *dfa) {
	v := w.v
	st := w.states
	st[v.nodeDepth[n]] = s.state
	end := v.nodeEnd[n]
	trans, cls, ncls := d.trans, &d.cls, d.ncls
	for i := n + 1; i < end; {
		dep := v.nodeDepth[i]
		q := trans[int(st[dep-1])*ncls+int(cls[v.nodeByte[i]])]
		if q < 0 {
			i = v.nodeEnd[i]
			continue
		}
		if !d.plain[q] {
			// Deeper calls only write st below dep, so ours stays valid.
			w.node(i, []*stack{mkStack(s.parent, s.rule, q)})
			i = v.nodeEnd[i]
			continue
		}
		v.setTokens(w.bits, i)
		st[dep] = q
		i++
	}
}

// leafKey identifies a state of a rule that calls nothing, across grammars.
type leafKey struct {
	dfa   [32]byte
	state int32
}

// leafResult is what one such state allows on its own: the tokens that stay
// inside the rule, and the trie nodes where the rule may end with more bytes
// to come, which the frames below decide.
type leafResult struct {
	dense  []uint64 // nil when sparse
	sparse []int32
	exits  []int32
}

func (lr *leafResult) orInto(out []uint64) {
	if lr.dense != nil {
		for i, x := range lr.dense {
			out[i] |= x
		}
		return
	}
	for _, id := range lr.sparse {
		out[id>>6] |= 1 << (uint(id) & 63)
	}
}

func (lr *leafResult) size() int { return 8*len(lr.dense) + 4*len(lr.sparse) + 4*len(lr.exits) + 64 }

// leaf returns (computing once) what state q of leaf rule d allows.
func (v *Vocab) leaf(d *dfa, q int32) *leafResult {
	key := leafKey{d.hash, q}
	v.mu.Lock()
	lr, ok := v.leafCache[key]
	v.mu.Unlock()
	if ok {
		return lr
	}
	lr = v.computeLeaf(d, q)
	v.mu.Lock()
	if v.leafBytes+lr.size() <= leafCacheMax {
		v.leafCache[key] = lr
		v.leafBytes += lr.size()
	}
	v.mu.Unlock()
	return lr
}

func (v *Vocab) computeLeaf(d *dfa, q0 int32) *leafResult {
	bitsOut := make([]uint64, v.MaskWords())
	st := make([]int32, v.maxDepth+2)
	st[0] = q0
	var exits []int32
	trans, cls, ncls := d.trans, &d.cls, d.ncls
	for i := int32(1); i < int32(len(v.nodeByte)); {
		dep := v.nodeDepth[i]
		q := trans[int(st[dep-1])*ncls+int(cls[v.nodeByte[i]])]
		if q < 0 {
			i = v.nodeEnd[i]
			continue
		}
		v.setTokens(bitsOut, i)
		if d.accept[q] && v.nodeEnd[i] > i+1 {
			exits = append(exits, i)
		}
		st[dep] = q
		i++
	}
	lr := &leafResult{exits: exits}
	n := 0
	for _, x := range bitsOut {
		n += bits.OnesCount64(x)
	}
	if n*4 < len(bitsOut)*8 {
		lr.sparse = make([]int32, 0, n)
		for i, x := range bitsOut {
			for x != 0 {
				b := bits.TrailingZeros64(x)
				lr.sparse = append(lr.sparse, int32(i*64+b))
				x &= x - 1
			}
		}
	} else {
		lr.dense = bitsOut
	}
	return lr
}

// maskMemo remembers masks of one grammar with one vocabulary by exact
// configuration; bounded so a long-lived grammar cannot grow without limit.
type maskMemo struct {
	mu    sync.RWMutex
	masks map[string][]uint64
	bytes int
}

const maskMemoMax = 32 << 20

func (g *Grammar) memoFor(v *Vocab) *maskMemo {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.tables[v]
	if !ok {
		m = &maskMemo{masks: map[string][]uint64{}}
		g.tables[v] = m
	}
	return m
}

func (m *maskMemo) get(key string, out []uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.masks[key]
	if ok {
		copy(out, b)
	}
	return ok
}

func (m *maskMemo) put(key string, b []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.masks[key]; ok || m.bytes+8*len(b) > maskMemoMax {
		return
	}
	m.masks[key] = append([]uint64(nil), b...)
	m.bytes += 8*len(b) + len(key)
}
