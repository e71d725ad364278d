package tokenizer

// spmModel is llama.cpp's SentencePiece tokenizer (llm_tokenizer_spm): the
// text is cut into UTF-8 characters, then the adjacent pair whose
// concatenation is the highest-scoring vocabulary entry is merged, again
// and again; characters that never became a token go out as byte tokens.
type spmModel struct {
	tokenToID *strIndex
	scores    []float32
	byteID    [256]int32 // "<0xXX>" (or the one-byte token), -1 when absent
	unk       int32
}

type spmSymbol struct {
	off, n     int
	prev, next int
}

type spmBigram struct {
	score       float32
	left, right int
	size        int
}

// better orders the work queue: higher score first, then leftmost.
func (a spmBigram) better(b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

func (m *spmModel) encode(dst []int32, text string) []int32 {
	if text == "" {
		return dst
	}
	syms := make([]spmSymbol, 0, len(text))
	for off := 0; off < len(text); {
		n := min(utf8LenFromLead(text[off]), len(text)-off)
		idx := len(syms)
		next := idx + 1
		if off+n == len(text) {
			next = -1
		}
		syms = append(syms, spmSymbol{off: off, n: n, prev: idx - 1, next: next})
		off += n
	}
	var queue []spmBigram
	tryAdd := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		s := text[syms[left].off : syms[left].off+syms[left].n+syms[right].n]
		id, ok := m.tokenToID.get(s)
		if !ok {
			return
		}
		queue = spmPush(queue, spmBigram{score: m.scores[id], left: left, right: right, size: len(s)})
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	for len(queue) > 0 {
		var bg spmBigram
		bg, queue = spmPop(queue)
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue // one side was merged since this pair was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		tryAdd(l.prev, bg.left)
		tryAdd(bg.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		s := text[syms[i].off : syms[i].off+syms[i].n]
		if id, ok := m.tokenToID.get(s); ok {
			dst = append(dst, id)
			continue
		}
		// Every merged symbol is a vocabulary entry, so only single
		// characters get here: spell them out as bytes.
		for j := 0; j < len(s); j++ {
			if id := m.byteID[s[j]]; id >= 0 {
				dst = append(dst, id)
			} else if m.unk >= 0 {
				dst = append(dst, m.unk)
			}
		}
	}
	return dst
}

// utf8LenFromLead is llama.cpp's unicode_len_utf8: the sequence length a
// lead byte announces by its high nibble (1 for stray continuation bytes).
func utf8LenFromLead(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}

func spmPush(h []spmBigram, c spmBigram) []spmBigram {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].better(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func spmPop(h []spmBigram) (spmBigram, []spmBigram) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].better(h[m]) {
			m = l
		}
		if r < len(h) && h[r].better(h[m]) {
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
