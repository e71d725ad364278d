package tokenizer

import "unicode/utf8"

// bpeMerge is what a pair of adjacent symbols becomes: lower rank merges first.
type bpeMerge struct {
	rank  int32
	newID int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel is HF's BPE model: rank-ordered merges over the symbols of one
// word, with the byte-level alphabet (GPT-2 family) or characters with byte
// fallback (SentencePiece-converted models).
type bpeModel struct {
	vocab  *strIndex // token text → id
	merges mergeTable

	// byteLevel: words arrive as raw bytes and each byte is one symbol, the
	// vocabulary's byte-level character for it (byteToID).
	byteLevel bool
	byteFast  bool // every byte has its symbol and no prefix/suffix applies
	byteToID  [256]int32
	rawToID   *strIndex // byte-level vocab keyed by the raw bytes (for ignoreMerges)

	byteFallback bool
	fallbackID   [256]int32 // id of "<0xXX>", -1 when absent
	unk          int32      // -1 when none
	fuseUnk      bool
	ignoreMerges bool
	contPrefix   string
	endSuffix    string
	bl           *byteLevelMap
}

// bpeScratch is the per-call working memory of one encode.
type bpeScratch struct {
	ids  []int32
	prev []int32
	next []int32
	heap []bpeCand
}

type bpeCand struct {
	rank, pos, newID int32
}

func (m *bpeModel) encode(dst []int32, word string, sc *bpeScratch) []int32 {
	if word == "" {
		return dst
	}
	if m.ignoreMerges {
		if m.byteLevel {
			if id, ok := m.rawToID.get(word); ok {
				return append(dst, id)
			}
		} else if id, ok := m.vocab.get(word); ok {
			return append(dst, id)
		}
	}
	ids := m.initialSymbols(sc.ids[:0], word)
	sc.ids = ids
	if len(ids) > 1 {
		ids = m.mergeAll(ids, sc)
	}
	return append(dst, ids...)
}

// initialSymbols turns a word into one symbol per character (per byte for
// byte-level), as HF's BPE::merge_word does.
func (m *bpeModel) initialSymbols(ids []int32, word string) []int32 {
	if m.byteFast {
		for i := 0; i < len(word); i++ {
			ids = append(ids, m.byteToID[word[i]])
		}
		return ids
	}
	unk, unkOpen := int32(-1), false
	flushUnk := func() {
		if unkOpen {
			ids = append(ids, unk)
			unkOpen = false
		}
	}
	for i := 0; i < len(word); {
		var ch string
		size := 1
		if m.byteLevel {
			ch = string(m.bl.toRune[word[i]])
		} else {
			_, size = utf8.DecodeRuneInString(word[i:])
			ch = word[i : i+size]
		}
		isFirst, isLast := i == 0, i+size >= len(word)
		i += size
		s := ch
		if !isFirst && m.contPrefix != "" {
			s = m.contPrefix + s
		}
		if isLast && m.endSuffix != "" {
			s += m.endSuffix
		}
		if id, ok := m.vocab.get(s); ok {
			flushUnk()
			ids = append(ids, id)
			continue
		}
		if m.byteFallback && m.appendFallback(&ids, s) {
			continue
		}
		if m.unk < 0 {
			continue // HF drops characters it cannot represent when there is no unk token
		}
		if unkOpen && !m.fuseUnk {
			ids = append(ids, unk)
		}
		unk, unkOpen = m.unk, true
	}
	flushUnk()
	return ids
}

// appendFallback emits <0xXX> for every byte of s, only if all exist.
func (m *bpeModel) appendFallback(ids *[]int32, s string) bool {
	for i := 0; i < len(s); i++ {
		if m.fallbackID[s[i]] < 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		*ids = append(*ids, m.fallbackID[s[i]])
	}
	return true
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks (HF Word::merge_all), over a linked list of symbols.
func (m *bpeModel) mergeAll(ids []int32, sc *bpeScratch) []int32 {
	n := len(ids)
	prev, next := grow(sc.prev, n), grow(sc.next, n)
	sc.prev, sc.next = prev, next
	h := sc.heap[:0]
	for i := 0; i < n; i++ {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		if mg, ok := m.merges.get(ids[i], ids[i+1]); ok {
			h = heapPush(h, bpeCand{mg.rank, int32(i), mg.newID})
		}
	}
	for len(h) > 0 {
		var top bpeCand
		top, h = heapPop(h)
		pos := top.pos
		if ids[pos] < 0 || next[pos] < 0 {
			continue
		}
		right := next[pos]
		mg, ok := m.merges.get(ids[pos], ids[right])
		if !ok || mg.newID != top.newID {
			continue // stale entry: one side changed since it was queued
		}
		ids[pos] = top.newID
		ids[right] = -1
		next[pos] = next[right]
		if nr := next[right]; nr >= 0 {
			prev[nr] = pos
		}
		if p := prev[pos]; p >= 0 {
			if mg, ok := m.merges.get(ids[p], ids[pos]); ok {
				h = heapPush(h, bpeCand{mg.rank, p, mg.newID})
			}
		}
		if nx := next[pos]; nx >= 0 {
			if mg, ok := m.merges.get(ids[pos], ids[nx]); ok {
				h = heapPush(h, bpeCand{mg.rank, pos, mg.newID})
			}
		}
	}
	sc.heap = h
	out := ids[:0]
	for i := 0; i >= 0 && i < n; i = int(next[i]) {
		out = append(out, ids[i])
	}
	return out
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func candLess(a, b bpeCand) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

func heapPush(h []bpeCand, c bpeCand) []bpeCand {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !candLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []bpeCand) (bpeCand, []bpeCand) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && candLess(h[l], h[m]) {
			m = l
		}
		if r < len(h) && candLess(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}
