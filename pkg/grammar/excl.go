package grammar

// An object's extra member keys are JSON strings other than its property
// names: the product D of a string automaton S and the automaton N of the
// names' literals (differenceFromString). Walking the trie for a state of D
// costs a full walk (~2 ms at Llama-3 size) per key position, though D
// differs from S only on the few texts that spell a name to its closing
// quote. So a state's result is derived from S's (cached and shared by every
// string: the bounded string's counting states are computed once per
// tokenizer) by removing what the names kill.

// exclInfo maps the states of D to its parts: state q of D is sState[q] of
// S and nState[q] of N (-1: dead in that part).
type exclInfo struct {
	s, n           *dfa
	sState, nState []int32
}

// exclLeaf derives what state q of D allows from S's result at sState[q]:
// D dies exactly at the trie nodes p (below the root) where every text S
// still accepts from p finishes a name, so every token through such a node
// and every exit at or below it is removed, and nothing else changes.
func (v *Vocab) exclLeaf(x *exclInfo, q int32) *leafResult {
	base := v.leaf(x.s, x.sState[q])
	n := x.nState[q]
	if n < 0 {
		return base // no name continues from here: D is S
	}
	var dead [][]byte // node texts (relative to q) where D dies
	var path []byte
	var walk func(s, n int32)
	walk = func(s, n int32) {
		for b := 0; b < 256; b++ {
			t, u := x.n.next(n, byte(b)), x.s.next(s, byte(b))
			if t < 0 || u < 0 {
				continue // N dead (D is S below) or S dead (nothing to remove)
			}
			path = append(path, byte(b))
			if contained(x.s, u, x.n, t) {
				dead = append(dead, append([]byte(nil), path...))
			} else {
				walk(u, t)
			}
			path = path[:len(path)-1]
		}
	}
	walk(x.sState[q], n)
	if len(dead) == 0 {
		return base
	}
	bitsOut := make([]uint64, v.MaskWords())
	base.ownInto(bitsOut)
	slice := base.slice
	var ids []int32
	for _, p := range dead {
		if node := v.find(p); node >= 0 {
			for i := node; i < v.nodeEnd[node]; i++ {
				if id := v.nodeTok[i]; id >= 0 {
					ids = append(ids, id)
					ids = append(ids, v.dupTok[i]...)
				}
			}
		}
	}
	for _, id := range ids {
		if slice > 0 && v.sliceUpTo[slice-1][id>>6]>>(uint(id)&63)&1 == 1 {
			// A removed token is in the shared slice: spell the slice out.
			for i, w := range v.sliceUpTo[slice-1] {
				bitsOut[i] |= w
			}
			slice = 0
			break
		}
	}
	for _, id := range ids {
		bitsOut[id>>6] &^= 1 << (uint(id) & 63)
	}
	tr := base.trie
	exits := base.exits
	for _, p := range dead {
		if node := tr.find(p); node >= 0 {
			kept := make([]int32, 0, len(exits))
			for _, e := range exits {
				if e < node || e >= tr.nodeEnd[node] {
					kept = append(kept, e)
				}
			}
			exits = kept
		}
	}
	lr := tr.newLeafResult(bitsOut, exits)
	lr.slice = slice
	return lr
}

// contained reports whether every text S accepts from state s is one N
// accepts from n (N's language is finite, so this recursion is bounded by
// its depth).
func contained(S *dfa, s int32, N *dfa, n int32) bool {
	if S.accept[s] && !N.accept[n] {
		return false
	}
	for b := 0; b < 256; b++ {
		t := S.next(s, byte(b))
		if t < 0 {
			continue
		}
		u := N.next(n, byte(b))
		if u < 0 || !contained(S, t, N, u) {
			return false
		}
	}
	return true
}

// find is the trie node spelling b, or -1.
func (v *Vocab) find(b []byte) int32 {
	n := int32(0)
	for _, c := range b {
		next := int32(-1)
		for k := n + 1; k < v.nodeEnd[n]; k = v.nodeEnd[k] {
			if v.nodeByte[k] == c {
				next = k
				break
			}
			if v.nodeByte[k] > c {
				break
			}
		}
		if next < 0 {
			return -1
		}
		n = next
	}
	return n
}
