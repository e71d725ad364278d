package grammar

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
)

// walker computes masks by walking the vocabulary trie.
type walker struct {
	g       *Grammar
	v       *Vocab
	bits    []uint64
	states  []int32   // DFA state per trie depth on the fast path
	memo    *maskMemo // where exit walks are memoised (nil: not)
	scratch []uint64
}

// exitsKey identifies the exit walk of lr above the frames of parent.
func exitsKey(lr *leafResult, parent *stack) string {
	buf := append([]byte("x"), lr.exitsID[:]...)
	buf = append(buf, configKey([]*stack{parent})...)
	return string(buf)
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
	var general []*stack
	for _, s := range closed {
		d := w.g.rule(s.rule)
		if !d.leaf {
			general = append(general, s)
			continue
		}
		// What a rule that calls nothing allows is the same in every
		// context, except past the points where it may return.
		lr := w.v.leaf(d, s.state)
		lr.orInto(out, w.v)
		if s.parent == nil || len(lr.exits) == 0 {
			continue
		}
		// What the exits allow depends only on the exit nodes and the
		// frames below, not on the leaf's state: a bounded string's
		// states share it while the bound is far, so it is memoised.
		ekey := exitsKey(lr, s.parent)
		if w.memo != nil && w.memo.orInto(ekey, out) {
			continue
		}
		below, _ := w.g.closure([]*stack{s.parent}, nil)
		if len(below) == 0 {
			continue
		}
		if w.scratch == nil {
			w.scratch = make([]uint64, len(out))
		}
		part := w.scratch[:len(out)]
		clear(part)
		ew := &walker{g: w.g, v: lr.trie, bits: part, states: w.states}
		for _, n := range lr.exits {
			ew.children(n, below)
		}
		for i, x := range part {
			out[i] |= x
		}
		if w.memo != nil {
			w.memo.put(ekey, part)
		}
	}
	// Stacks whose top calls or returns walk the trie together.
	w.children(0, general)
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
		if d := w.g.rule(s.rule); d.plain[s.state] {
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
	needAt, room := d.needAt, w.g.maxDepth-s.depth+1 // Grammar.fits
	for i := n + 1; i < end; {
		dep := v.nodeDepth[i]
		q := int32(trans[int(st[dep-1])*ncls+int(cls[v.nodeByte[i]])])
		if q < 0 || needAt != nil && needAt[q] > room {
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
	dense   []uint64 // nil when sparse
	sparse  []int32
	exits   []int32
	exitsID [32]byte // hash of exits and of the trie they index into
	slice   int      // also the Vocab's slice tokens of at most slice-1 characters (0: none)
	trie    *Vocab   // the trie exits index into
}

func (lr *leafResult) orInto(out []uint64, v *Vocab) {
	if lr.slice > 0 {
		for i, x := range v.sliceUpTo[lr.slice-1] {
			out[i] |= x
		}
	}
	lr.ownInto(out)
}

// ownInto ORs in the tokens lr holds itself (not the slice).
func (lr *leafResult) ownInto(out []uint64) {
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

// leaf returns (computing once) what state q of leaf rule d allows. Two
// states with the same language from there on allow the same tokens, so
// results are keyed by a canonical form of the automaton reachable from q:
// a plain string's content state is one entry for every grammar.
func (v *Vocab) leaf(d *dfa, q int32) *leafResult {
	key := leafKey{d.hash, q}
	v.mu.Lock()
	lang, ok := v.leafLang[key]
	if ok {
		if lr, ok := v.leafCache.get(lang); ok {
			v.mu.Unlock()
			return lr
		}
	}
	v.mu.Unlock()
	if !ok {
		if k, counted := d.countedLang(q); counted {
			lang = k
		} else {
			lang = d.langKey(q)
		}
	}
	v.mu.Lock()
	v.leafLang[key] = lang
	lr, ok := v.leafCache.get(lang)
	v.mu.Unlock()
	if ok {
		return lr
	}
	if j := int(q) - 1; d.cut != nil && d.cut.quotedSrc != nil && j >= 0 && j < len(d.cut.state) {
		lr = v.cutLeaf(d.cut, j)
	} else if x := d.excl; x != nil && x.sState[q] >= 0 && (d.accept[q] || d.hasBytes[q]) {
		lr = v.exclLeaf(x, q)
	} else if k, ok := d.plainDepth(q, v.sliceChars); ok {
		lr = v.rest.computeLeaf(d, q)
		lr.slice = k + 1
	} else {
		lr = v.computeLeaf(d, q)
	}
	v.mu.Lock()
	v.leafCache.put(lang, lr, lr.size())
	v.mu.Unlock()
	return lr
}

// langKey hashes the part of d reachable from q, states numbered in
// breadth-first order over bytes 0..255: equal keys, equal languages. Past
// langKeyStates reachable states it hashes (d, q) instead: sharing is
// unlikely there and the canonical form would cost more than it saves.
const langKeyStates = 64

func (d *dfa) langKey(q int32) [32]byte {
	num := map[int32]uint32{q: 0}
	order := []int32{q}
	buf := make([]byte, 0, 1024)
	for i := 0; i < len(order); i++ {
		if len(order) > langKeyStates {
			buf = append(append(buf[:0], d.hash[:]...), 0xfe)
			return sha256.Sum256(binary.LittleEndian.AppendUint32(buf, uint32(q)))
		}
		s := order[i]
		if d.accept[s] {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		prev, run := uint32(1<<31), 0
		flush := func() {
			if run > 0 {
				buf = binary.LittleEndian.AppendUint32(buf, prev)
				buf = append(buf, byte(run-1))
			}
		}
		for b := 0; b < 256; b++ {
			t := d.next(s, byte(b))
			id := uint32(1<<31 - 1) // dead
			if t >= 0 {
				n, seen := num[t]
				if !seen {
					n = uint32(len(order))
					num[t] = n
					order = append(order, t)
				}
				id = n
			}
			if id == prev && run < 256 {
				run++
				continue
			}
			flush()
			prev, run = id, 1
		}
		flush()
	}
	return sha256.Sum256(buf)
}

func (v *Vocab) computeLeaf(d *dfa, q0 int32) *leafResult {
	// Every node's bit is set without a branch: a node without a token
	// sets a bit in a spare word past the mask. About half the nodes end a
	// token, in no order a predictor learns, and the branch was a third of
	// a first visit of a string state (most of the 275k nodes of a 128k
	// vocabulary).
	words := v.MaskWords()
	bitsOut := make([]uint64, words+1)
	spare := int32(words * 64)
	st := make([]int32, v.maxDepth+2)
	st[0] = q0
	var exits []int32
	trans, cls, ncls := d.trans, &d.cls, d.ncls
	for i := int32(1); i < int32(len(v.nodeByte)); {
		dep := v.nodeDepth[i]
		q := int32(trans[int(st[dep-1])*ncls+int(cls[v.nodeByte[i]])])
		if q < 0 {
			i = v.nodeEnd[i]
			continue
		}
		id := v.nodeTok[i]
		none := id >> 31 // all ones when no token ends here
		id = id&^none | spare&none
		bitsOut[id>>6] |= 1 << (uint(id) & 63)
		if v.nodeDup[i] {
			for _, t := range v.dupTok[i] {
				bitsOut[t>>6] |= 1 << (uint(t) & 63)
			}
		}
		if d.accept[q] && v.nodeEnd[i] > i+1 {
			exits = append(exits, i)
		}
		st[dep] = q
		i++
	}
	return v.newLeafResult(bitsOut[:words:words], exits)
}

// newLeafResult packs a leaf's tokens (sparse when few) and exit nodes.
func (v *Vocab) newLeafResult(bitsOut []uint64, exits []int32) *leafResult {
	lr := &leafResult{exits: exits, trie: v}
	h := sha256.New()
	if v.rest == nil {
		h.Write([]byte{1}) // the rest trie (the full one has a rest)
	}
	for _, e := range exits {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(e)))
	}
	copy(lr.exitsID[:], h.Sum(nil))
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
	masks map[string]memoMask
	bytes int
}

// memoMask is a stored mask: the allowed ids when few (most masks outside
// strings allow a handful of tokens: a dense copy would be 16 KB each of
// fresh memory, and its allocation dominated first visits), else the words.
type memoMask struct {
	ids   []int32
	dense []uint64
}

func (mm memoMask) size() int { return 4*len(mm.ids) + 8*len(mm.dense) }

// orInto ORs the stored mask into out.
func (mm memoMask) orInto(out []uint64) {
	if mm.dense != nil {
		for i, x := range mm.dense {
			out[i] |= x
		}
		return
	}
	for _, id := range mm.ids {
		out[id>>6] |= 1 << (uint(id) & 63)
	}
}

// compactMask packs b, sparse when its ids take less room than its words.
func compactMask(b []uint64) memoMask {
	n := popcount(b)
	if n > len(b) {
		return memoMask{dense: append([]uint64(nil), b...)}
	}
	ids := make([]int32, 0, n)
	for i, x := range b {
		for x != 0 {
			ids = append(ids, int32(i*64+bits.TrailingZeros64(x)))
			x &= x - 1
		}
	}
	return memoMask{ids: ids}
}

const maskMemoMax = 32 << 20

func (g *Grammar) memoFor(v *Vocab) *maskMemo {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.tables[v]
	if !ok {
		m = &maskMemo{masks: map[string]memoMask{}}
		g.tables[v] = m
	}
	return m
}

// get writes the mask stored under key into out, which must be clear.
func (m *maskMemo) get(key string, out []uint64) bool { return m.orInto(key, out) }

// orInto ORs the mask stored under key into out.
func (m *maskMemo) orInto(key string, out []uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.masks[key]
	if ok {
		b.orInto(out)
	}
	return ok
}

// put stores a copy of b under key while the memo has room.
func (m *maskMemo) put(key string, b []uint64) {
	m.mu.RLock()
	_, ok := m.masks[key]
	full := m.bytes >= maskMemoMax
	m.mu.RUnlock()
	if ok || full {
		return
	}
	mm := compactMask(b) // outside the lock
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.masks[key]; ok || m.bytes+mm.size() > maskMemoMax {
		return
	}
	m.masks[key] = mm
	m.bytes += mm.size() + len(key)
}

// plainDepth finds k such that from q every text of at most k plain
// characters stays alive without accepting, and either k reaches maxChars
// or every text of k+1 plain characters dies: then exactly the slice tokens
// of at most k characters are allowed from q (ok false: no such k).
func (d *dfa) plainDepth(q int32, maxChars int) (int, bool) {
	seen := map[int32]bool{q: true}
	layer := []int32{q}
	for k := 0; k < maxChars; k++ {
		var next []int32
		safe := true
		for _, s := range layer {
			if !d.charSteps(s, func(t int32) {
				if !seen[t] {
					seen[t] = true
					next = append(next, t)
				}
			}) {
				safe = false
				break
			}
		}
		if !safe {
			for _, s := range layer {
				if !d.charsDie(s) {
					return 0, false
				}
			}
			return k, true
		}
		if len(next) == 0 {
			return maxChars, true // every state seen: the check holds at any depth
		}
		layer = next
	}
	return maxChars, true
}

// charsDie reports whether every plain character dies from s without
// passing an accepting state.
func (d *dfa) charsDie(s int32) bool {
	dead := true
	var walk func(u int, q int32)
	walk = func(u int, q int32) {
		for _, st := range utf8Steps[u] {
			for b := int(st.lo); b <= int(st.hi) && dead; b++ {
				t := d.next(q, byte(b))
				switch {
				case t < 0:
				case d.accept[t] || st.next < 0:
					dead = false
				default:
					walk(st.next, t)
				}
			}
		}
	}
	walk(0, s)
	return dead
}

// utf8Step is where a UTF-8 decoder stands: the bytes the next byte may be
// and what follows it.
type utf8Step struct {
	lo, hi byte
	next   int // index into utf8Steps; -1: the character is complete
}

// utf8Steps[0] lists the lead bytes of plain characters; the others are
// continuation positions.
var utf8Steps = [][]utf8Step{
	0: {{0x20, 0x21, -1}, {0x23, 0x5b, -1}, {0x5d, 0x7f, -1}, {0xc2, 0xdf, 1}, {0xe0, 0xe0, 4}, {0xe1, 0xec, 2},
		{0xed, 0xed, 5}, {0xee, 0xef, 2}, {0xf0, 0xf0, 6}, {0xf1, 0xf3, 3}, {0xf4, 0xf4, 7}},
	1: {{0x80, 0xbf, -1}},
	2: {{0x80, 0xbf, 1}},
	3: {{0x80, 0xbf, 2}},
	4: {{0xa0, 0xbf, 1}},
	5: {{0x80, 0x9f, 1}},
	6: {{0x90, 0xbf, 2}},
	7: {{0x80, 0x8f, 2}},
}

// charSteps calls emit with the state after each plain character from s
// (distinct states, possibly repeated) and reports false when some plain
// character dies or passes an accepting state.
func (d *dfa) charSteps(s int32, emit func(int32)) bool { return d.plainSteps(s, true, emit) }

// plainSteps is charSteps; passing an accepting state fails only when
// stopAtAccept.
func (d *dfa) plainSteps(s int32, stopAtAccept bool, emit func(int32)) bool {
	type pos struct {
		u int
		q int32
	}
	seen := map[pos]bool{}
	var walk func(p pos) bool
	walk = func(p pos) bool {
		if seen[p] {
			return true
		}
		seen[p] = true
		for _, st := range utf8Steps[p.u] {
			last := int32(-2)
			for b := int(st.lo); b <= int(st.hi); b++ {
				t := d.next(p.q, byte(b))
				if t == last {
					continue
				}
				last = t
				if t < 0 || stopAtAccept && d.accept[t] {
					return false
				}
				if st.next < 0 {
					emit(t)
				} else if !walk(pos{st.next, t}) {
					return false
				}
			}
		}
		return true
	}
	return walk(pos{0, s})
}

// cutBase is what a source state of a truncated string allows, each token
// and exit node with its need: the characters it writes plus the fewest
// the state it reaches needs to finish.
type cutBase struct {
	bits  []uint64
	toks  []cutItem // by need, largest first
	exits []cutItem
	// trie is the trie walked: the Vocab's, or its rest when every slice
	// token of k characters needs k+sliceNeed (a free-text state), so the
	// slice is allowed by length alone and never walked.
	trie      *Vocab
	sliceNeed int32
}

type cutItem struct{ id, need int32 }

type cutKey struct {
	src   *dfa
	state int32
}

// cutBasesMax bounds the memory of the cut bases of one Vocab (a base of a
// free-text state holds ~100k items); the least recently used go first.
const cutBasesMax = 64 << 20

func (b *cutBase) size() int { return 8*len(b.bits) + 8*len(b.toks) + 8*len(b.exits) + 64 }

// cutLeaf derives what state j of a truncated content automaton allows from
// its source state: a token (or exit) stays allowed exactly when its need
// fits in the characters left, as needs only shrink along a path. One walk
// per source state instead of one per (state, characters left).
func (v *Vocab) cutLeaf(c *cutInfo, j int) *leafResult {
	left := c.left[j]
	k := cutKey{c.quotedSrc, c.state[j] + 1}
	v.mu.Lock()
	base, ok := v.cutBases.get(k)
	v.mu.Unlock()
	if !ok {
		base = v.newCutBase(c, c.state[j])
		v.mu.Lock()
		v.cutBases.put(k, base, base.size())
		v.mu.Unlock()
	}
	bitsOut := append([]uint64(nil), base.bits...)
	for _, t := range base.toks {
		if t.need <= left {
			break
		}
		bitsOut[t.id>>6] &^= 1 << (uint(t.id) & 63)
	}
	var exits []int32
	for _, e := range base.exits {
		if e.need <= left {
			exits = append(exits, e.id)
		}
	}
	lr := base.trie.newLeafResult(bitsOut, exits)
	if base.trie != v {
		if n := left - base.sliceNeed; n > 0 {
			lr.slice = int(min(n, int32(v.sliceChars))) + 1
		}
	}
	return lr
}

// newCutBase computes the base of content state s: on the rest trie when
// the slice's needs follow from token lengths alone.
func (v *Vocab) newCutBase(c *cutInfo, s int32) *cutBase {
	if v.rest != nil {
		if need, ok := c.src.sliceNeed(s, c.dist, v.sliceChars); ok {
			b := v.rest.computeCutBase(c, s+1)
			b.sliceNeed = need
			return b
		}
	}
	return v.computeCutBase(c, s+1)
}

// sliceNeed reports whether from content state q every text of at most
// maxChars plain characters stays alive and ends in a state dist[] calls
// equally far from acceptance: then a slice token of k characters needs
// exactly k plus that distance.
func (d *dfa) sliceNeed(q int32, dist []int32, maxChars int) (int32, bool) {
	seen := map[int32]bool{}
	layer := []int32{q}
	need := int32(-1)
	for k := 0; k < maxChars && len(layer) > 0; k++ {
		var next []int32
		for _, s := range layer {
			if !d.plainSteps(s, false, func(t int32) {
				if !seen[t] {
					seen[t] = true
					next = append(next, t)
				}
			}) {
				return 0, false
			}
		}
		for _, t := range next {
			if need < 0 {
				need = dist[t]
			} else if dist[t] != need {
				return 0, false
			}
		}
		layer = next
	}
	return need, need >= 0
}

func (v *Vocab) computeCutBase(c *cutInfo, q0 int32) *cutBase {
	d := c.quotedSrc
	base := &cutBase{bits: make([]uint64, v.MaskWords()), toks: make([]cutItem, 0, 1024), trie: v}
	st := make([]int32, v.maxDepth+2)
	chars := make([]int32, v.maxDepth+2) // characters started on the path
	st[0] = q0
	trans, cls, ncls := d.trans, &d.cls, d.ncls
	for i := int32(1); i < int32(len(v.nodeByte)); {
		dep := v.nodeDepth[i]
		b := v.nodeByte[i]
		q := int32(trans[int(st[dep-1])*ncls+int(cls[b])])
		if q < 0 {
			i = v.nodeEnd[i]
			continue
		}
		chars[dep] = chars[dep-1]
		if b < 0x80 || b > 0xbf {
			chars[dep]++
		}
		// Content state q-1 needs dist more; past the closing quote
		// (accepting) nothing, and the quote itself is no character.
		need := chars[dep] - 1
		if !d.accept[q] {
			need = chars[dep] + c.dist[q-1]
		}
		if id := v.nodeTok[i]; id >= 0 {
			v.setTokens(base.bits, i)
			base.toks = append(base.toks, cutItem{id, need})
			if v.nodeDup[i] {
				for _, dup := range v.dupTok[i] {
					base.toks = append(base.toks, cutItem{dup, need})
				}
			}
		}
		if d.accept[q] && v.nodeEnd[i] > i+1 {
			base.exits = append(base.exits, cutItem{i, need})
		}
		st[dep] = q
		i++
	}
	base.toks = byNeedDesc(base.toks)
	return base
}

// byNeedDesc orders items by need, largest first. Needs are small
// (characters of one token plus a state's distance to acceptance), so a
// counting sort: a first visit of a free-text state has ~100k tokens to
// order, which a comparison sort took milliseconds for.
func byNeedDesc(items []cutItem) []cutItem {
	hi, lo := int32(0), int32(0)
	for _, t := range items {
		hi, lo = max(hi, t.need), min(lo, t.need)
	}
	if hi > 1<<16 || lo < 0 || len(items) < 64 {
		slices.SortFunc(items, func(a, b cutItem) int { return int(b.need - a.need) })
		return slices.Clone(items) // without the spare capacity
	}
	start := make([]int, hi+2) // start[hi-need]: where that need's run begins
	for _, t := range items {
		start[hi-t.need+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	out := make([]cutItem, len(items))
	for _, t := range items {
		k := hi - t.need
		out[start[k]] = t
		start[k]++
	}
	return out
}
