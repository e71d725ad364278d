package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"
)

// Strings with length bounds are built as automata directly: unrolling
// {min,max} copies of a character into an NFA and determinizing costs
// milliseconds at lengths of a few hundred.

// repeatChar is the DFA of between min and max (max >= 0) texts of char,
// a DFA of one character: its accepting states end the character and lead
// nowhere. It keeps char's byte classes.
func repeatChar(char *dfa, min, max int) (*dfa, error) {
	if err := checkRepeat(char, max); err != nil {
		return nil, err
	}
	// State (i, c): i characters done, c inside the next one.
	nc, ncls := char.states(), char.ncls
	n := (max + 1) * nc
	d := &dfa{cls: char.cls, ncls: ncls, trans: make([]int16, n*ncls), accept: make([]bool, n)}
	same := make([]int, ncls)
	for k := range same {
		same[k] = k
	}
	has := repeatLayers(char, max, same, 0, d.trans)
	for i := min; i <= max; i++ {
		d.accept[i*nc] = true
	}
	// Every state can still complete: no trimming needed. The automaton is
	// a function of (char, min, max): that is its identity.
	d.layeredFlags(0, max, has)
	d.hashAs("repeat", repeatID(char, min, max)...)
	d.counted = &charCounter{char: char.hash, nc: nc, min: min, max: max}
	return d, nil
}

func checkRepeat(char *dfa, max int) error {
	nc, ncls := char.states(), char.ncls
	for q := 0; q < nc; q++ {
		if char.accept[q] {
			for c := 0; c < ncls; c++ {
				if char.trans[q*ncls+c] >= 0 {
					return fmt.Errorf("character automaton continues after a character")
				}
			}
		}
	}
	if (max+1)*nc > maxDFAStates {
		return fmt.Errorf("automaton over %d states", maxDFAStates)
	}
	return nil
}

// repeatID is what identifies repeatChar(char, min, max).
func repeatID(char *dfa, min, max int) [][]byte {
	return [][]byte{char.hash[:], binary.LittleEndian.AppendUint64(nil, uint64(min)), binary.LittleEndian.AppendUint64(nil, uint64(max))}
}

// repeatLayers writes the rows of repeatChar(char, _, max)'s states to
// trans, in the classes oldOf maps to char's, every target shifted by
// shift. The layers differ only by their offset: one layer's rows
// (relative to the layer's first state) are worked out once and each
// layer is that template shifted, a third of the time of working out
// every state's row. Layer max takes no character. It returns, for each
// state of a layer, whether it has a byte edge: the layers' flags.
func repeatLayers(char *dfa, max int, oldOf []int, shift int16, trans []int16) (hasBytes []bool) {
	nc, cn, ncls := char.states(), char.ncls, len(oldOf)
	tmpl := make([]int16, nc*ncls)
	hasBytes = make([]bool, nc)
	for c := 0; c < nc; c++ {
		for k, o := range oldOf {
			t := char.trans[c*cn+o]
			switch {
			case t < 0 || char.accept[c]:
				tmpl[c*ncls+k] = -1
			case char.accept[t]:
				tmpl[c*ncls+k] = int16(nc) // the next layer's first state
				hasBytes[c] = true
			default:
				tmpl[c*ncls+k] = t
				hasBytes[c] = true
			}
		}
	}
	for i := 0; i <= max; i++ {
		rows := trans[i*nc*ncls : (i+1)*nc*ncls]
		if i == max {
			for j := range rows {
				rows[j] = -1
			}
			continue
		}
		shiftRows(rows, tmpl, int16(i*nc)+shift)
	}
	return hasBytes
}

// shiftRows writes src to dst with base added to every target (-1, no
// edge, stays). Four entries at a time in a uint64 (SWAR): a bounded
// string's table is hundreds of layers of a thousand entries, and one at
// a time it was a fifth of a typical tool schema's compile. Lanes do not
// carry into each other: a target plus base stays below 1<<15 (states fit
// in int16, see maxDFAStates), and a -1 lane (0xffff) gets nothing added.
// A branch per entry was worse still: which entries have no edge follows
// no pattern a branch predictor learns.
func shiftRows(dst, src []int16, base int16) {
	dst = dst[:len(src)]
	n := len(src) &^ 3
	if n > 0 {
		d := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 2*n)
		s := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 2*n)
		const ones = 0x0001_0001_0001_0001
		b := uint64(uint16(base)) * ones
		for j := 0; j+8 <= len(s) && j+8 <= len(d); j += 8 {
			x := binary.NativeEndian.Uint64(s[j:])
			dead := (x >> 15 & ones) * 0xffff // 0xffff in each -1 lane
			binary.NativeEndian.PutUint64(d[j:], x+b&^dead)
		}
	}
	for j := n; j < len(src); j++ {
		t := src[j]
		dst[j] = t + base&^(t>>15)
	}
}

// layeredFlags is flags for repeatChar's states, as rows states of
// layers 0..max after offset leading states: the layers' per-state
// hasBytes, the last layer's none. Scanning the rows themselves was a
// sixth of api_user's compile; no state has calls.
func (d *dfa) layeredFlags(offset, max int, hasBytes []bool) {
	d.leaf = true
	d.plain = make([]bool, d.states())
	d.hasBytes = make([]bool, d.states())
	nc := len(hasBytes)
	for i := 0; i < max; i++ {
		copy(d.hasBytes[offset+i*nc:], hasBytes)
	}
	for q := range d.plain {
		d.plain[q] = !d.accept[q]
	}
}

// quotedRepeat is quoted(repeatChar(char, min, max)), built without the
// content's table: at a maxLength of a few hundred each table is megabytes,
// and faulting in the second one was half of the slowest first compile
// (api_user's 500-character bio).
func quotedRepeat(char *dfa, min, max int) (*dfa, error) {
	if err := checkRepeat(char, max); err != nil {
		return nil, err
	}
	nc := char.states()
	cls, oldOf := splitQuote(&char.cls)
	quote, ncls := int(cls['"']), len(oldOf)
	n := (max + 1) * nc
	d := &dfa{cls: cls, ncls: ncls, trans: make([]int16, (n+2)*ncls), accept: make([]bool, n+2)}
	for i := range ncls {
		d.trans[i], d.trans[(n+1)*ncls+i] = -1, -1
	}
	d.trans[quote] = 1
	// Content state q is state q+1 here (0 takes the opening quote); the
	// first state of each layer from min on also takes the closing one.
	has := repeatLayers(char, max, oldOf, 1, d.trans[ncls:(n+1)*ncls])
	for i := min; i <= max; i++ {
		d.trans[(i*nc+1)*ncls+quote] = int16(n + 1)
	}
	d.accept[n+1] = true
	d.layeredFlags(1, max, has)
	// The opening-quote state has an edge; the first state of each layer
	// from min on has the closing quote's, the layers' own rows aside.
	d.hasBytes[0] = true
	for i := min; i <= max; i++ {
		d.hasBytes[i*nc+1] = true
	}
	content := derivedHash("repeat", repeatID(char, min, max)...)
	d.hashAs("quoted", content[:])
	d.counted = &charCounter{char: char.hash, nc: nc, min: min, max: max}
	return d, nil
}

// splitQuote is quoted's byte classes: content's, with '"' split off, and
// for each new class the content class it came from.
func splitQuote(contentCls *[256]uint8) ([256]uint8, []int) {
	var cls [256]uint8
	oldOf := []int{}
	var newID [512]int16 // content class*2 (+1 for '"') → new class+1
	for b := 0; b < 256; b++ {
		k := int(contentCls[b]) * 2
		if b == '"' {
			k++
		}
		if newID[k] == 0 {
			oldOf = append(oldOf, int(contentCls[b]))
			newID[k] = int16(len(oldOf))
		}
		cls[b] = uint8(newID[k] - 1)
	}
	return cls, oldOf
}

// quoteRows builds the tables of '"' content '"' for content of n states
// in contentCls's classes: state 0 takes the opening quote, state q+1 is
// content state q (row gives its row and acceptance; an accepting one also
// takes the closing quote), state n+1 is done.
func quoteRows(contentCls *[256]uint8, n int, row func(q int) ([]int16, bool)) *dfa {
	cls, oldOf := splitQuote(contentCls)
	quote := int(cls['"'])
	ncls := len(oldOf)
	d := &dfa{cls: cls, ncls: ncls, trans: make([]int16, (n+2)*ncls), accept: make([]bool, n+2)}
	for i := range ncls {
		d.trans[i], d.trans[(n+1)*ncls+i] = -1, -1
	}
	if n > 0 {
		// Content that matches nothing (trimmed: a dead start) gets no
		// opening quote either, so the string is seen to match nothing
		// rather than leave a matcher at a dead end after the quote.
		if src, acc := row(0); acc || slices.ContainsFunc(src, func(t int16) bool { return t >= 0 }) {
			d.trans[quote] = 1
		}
	}
	for q := 0; q < n; q++ {
		src, acc := row(q)
		dst := d.trans[(q+1)*ncls : (q+2)*ncls]
		for k, o := range oldOf {
			if t := src[o]; t >= 0 {
				dst[k] = t + 1
			} else {
				dst[k] = -1
			}
		}
		if acc {
			dst[quote] = int16(n + 1)
		}
	}
	d.accept[n+1] = true
	return d
}

// quoted is the DFA of '"' content '"'. The content of a JSON string never
// has a raw quote at a character boundary, so the closing quote is
// unambiguous.
func quoted(content *dfa) *dfa {
	cn := content.ncls
	d := quoteRows(&content.cls, content.states(), func(q int) ([]int16, bool) {
		return content.trans[q*cn : (q+1)*cn], content.accept[q]
	})
	// Content is trimmed, so is this; a function of content alone.
	if content.leaf {
		d.finishAs("quoted", content.hash[:])
	} else {
		d.finish()
	}
	d.counted = content.counted
	if c := content.cut; c != nil {
		if c.quotedSrc == nil {
			c.quotedSrc = quoted(c.src)
		}
		d.cut = c
	}
	return d
}

// cyclic reports whether the call-free automaton d accepts unboundedly
// long texts (every state of a trimmed DFA is live, so a reachable cycle
// is enough).
// longest is the most bytes a path from the start takes, -1 when d has
// a cycle. States are trimmed, so every path can still reach acceptance.
func (d *dfa) longest() int {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, d.states())
	depth := make([]int, d.states()) // of a black state: the most bytes after it
	type frame struct{ q, c int32 }
	stack := []frame{{0, 0}}
	color[0] = grey
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if int(f.c) == d.ncls {
			for c := 0; c < d.ncls; c++ {
				if t := d.trans[int(f.q)*d.ncls+c]; t >= 0 {
					depth[f.q] = max(depth[f.q], 1+depth[t])
				}
			}
			color[f.q] = black
			stack = stack[:len(stack)-1]
			continue
		}
		t := int32(d.trans[int(f.q)*d.ncls+int(f.c)])
		f.c++
		if t < 0 {
			continue
		}
		switch color[t] {
		case grey:
			return -1
		case white:
			color[t] = grey
			stack = append(stack, frame{t, 0})
		}
	}
	return depth[0]
}

func (d *dfa) cyclic() bool { return d.longest() < 0 }

// truncated is the call-free automaton d of string content limited to
// texts of at most maxChars characters, counted as bytes that are not UTF-8
// continuation bytes (an escape counts as its bytes: a stricter bound,
// never a looser one). A layered copy of d, built directly: a product with
// a character counter costs far more. Counting whole characters (not
// bytes) keeps every state far from the bound plain, so its masks come
// from the vocabulary's slices.
func truncated(d *dfa, maxChars int) (*dfa, error) { return truncatedTable(d, maxChars, 1<<20) }

// truncatedTable is truncated numbering its states in a dense table of at
// most denseMax entries, or in a map when more would be needed.
func truncatedTable(d *dfa, maxChars, denseMax int) (*dfa, error) {
	// Classes: d's, each split by whether its bytes continue a character.
	var cls [256]uint8
	var oldOf []int
	var cont []bool
	newID := map[int]uint8{}
	for b := 0; b < 256; b++ {
		isCont := b >= 0x80 && b <= 0xbf
		k := int(d.cls[b]) * 2
		if isCont {
			k++
		}
		id, ok := newID[k]
		if !ok {
			id = uint8(len(oldOf))
			newID[k] = id
			oldOf = append(oldOf, int(d.cls[b]))
			cont = append(cont, isCont)
		}
		cls[b] = id
	}
	ncls := len(oldOf)
	out := &dfa{cls: cls, ncls: ncls}
	type key struct {
		n int   // characters started
		p int32 // state of d
	}
	// The layered states are numbered in a dense table (n, p) -> id: it
	// is a few states per character, and a map of them cost most of a
	// long bound's compile. Past denseMax entries a map does.
	nst := d.states()
	var dense []int32
	var sparse map[key]int32
	if layered := (maxChars + 1) * nst; maxChars < denseMax && layered <= denseMax {
		dense = make([]int32, layered)
		for i := range dense {
			dense[i] = -1
		}
	} else {
		sparse = map[key]int32{}
	}
	lookup := func(k key) (int32, bool) {
		if dense != nil {
			id := dense[k.n*nst+int(k.p)]
			return id, id >= 0
		}
		id, ok := sparse[k]
		return id, ok
	}
	number := func(k key, id int32) {
		if dense != nil {
			dense[k.n*nst+int(k.p)] = id
		} else {
			sparse[k] = id
		}
	}
	// Room for every layered state up to the automaton limit, so the
	// tables are not regrown state by state.
	est := min((maxChars+1)*nst, maxDFAStates)
	queue := make([]key, 1, est)
	number(queue[0], 0)
	out.accept = make([]bool, 1, est)
	out.accept[0] = d.accept[0]
	out.trans = make([]int16, ncls, est*ncls)
	for qi := 0; qi < len(queue); qi++ {
		k := queue[qi]
		for c := 0; c < ncls; c++ {
			out.trans[qi*ncls+c] = -1
			t := int32(d.trans[int(k.p)*d.ncls+oldOf[c]])
			if t < 0 {
				continue
			}
			nk := key{k.n, t}
			if !cont[c] {
				if k.n == maxChars {
					continue
				}
				nk.n++
			}
			id, ok := lookup(nk)
			if !ok {
				id = int32(len(out.accept))
				if id >= maxDFAStates {
					return nil, fmt.Errorf("automaton over %d states", maxDFAStates)
				}
				number(nk, id)
				queue = append(queue, nk)
				out.accept = append(out.accept, d.accept[t])
				out.trans = append(out.trans, make([]int16, ncls)...)
			}
			out.trans[qi*ncls+c] = int16(id)
		}
	}
	out.trim(nil)
	out.finish()
	cut := &cutInfo{src: d, state: make([]int32, len(queue)), left: make([]int32, len(queue)), dist: d.toAccept()}
	for i, k := range queue {
		cut.state[i], cut.left[i] = k.p, int32(maxChars-k.n)
	}
	out.cut = cut
	return out, nil
}

// cutInfo maps the states of a truncated automaton to the source's: state
// q is state[q] of src with left[q] characters to go. What a state allows
// is derived from what its source state allows (see Vocab.cutLeaf).
type cutInfo struct {
	src         *dfa
	state, left []int32
	dist        []int32 // per source state: the fewest characters to acceptance
	quotedSrc   *dfa    // quoted(src), for the quoted automaton's states
}

// shortestChars is the fewest characters (bytes that are not UTF-8
// continuations, as truncated counts them) of a text d accepts, -1 when it
// accepts none: toAccept()[0], but from the start alone, by class, and
// stopping at the first accepting state, as compile asks it of every
// pattern string (toAccept's every state and byte is the cut's business).
func (d *dfa) shortestChars() int {
	// A class costs a character unless some byte of it is a continuation.
	free := make([]bool, d.ncls)
	for b := 0x80; b <= 0xbf; b++ {
		free[d.cls[b]] = true
	}
	const inf = int32(1 << 30)
	dist := make([]int32, d.states())
	for i := range dist {
		dist[i] = inf
	}
	// 0-1 BFS: a deque as a slice with a moving head, zero-cost steps
	// pushed in front of it.
	deque := make([]int32, 1, d.states()+1)
	dist[0] = 0
	head := 0
	for head < len(deque) {
		q := deque[head]
		head++
		if d.accept[q] {
			return int(dist[q])
		}
		for c := 0; c < d.ncls; c++ {
			t := int32(d.trans[int(q)*d.ncls+c])
			if t < 0 {
				continue
			}
			w := int32(1)
			if free[c] {
				w = 0
			}
			if dist[q]+w >= dist[t] {
				continue
			}
			dist[t] = dist[q] + w
			if w == 0 {
				head-- // q's slot: head is past it
				deque[head] = t
			} else {
				deque = append(deque, t)
			}
		}
	}
	return -1
}

// toAccept is, per state, the fewest characters (bytes that are not UTF-8
// continuations) that lead to acceptance.
func (d *dfa) toAccept() []int32 {
	n := d.states()
	rev := make([][]int32, n) // predecessor lists, weight folded in below
	cost := make([][]bool, n)
	for q := 0; q < n; q++ {
		for b := 0; b < 256; b++ {
			if t := d.next(int32(q), byte(b)); t >= 0 {
				rev[t] = append(rev[t], int32(q))
				cost[t] = append(cost[t], !(b >= 0x80 && b <= 0xbf))
			}
		}
	}
	const inf = int32(1 << 30)
	dist := make([]int32, n)
	var front, back []int32 // 0-1 BFS deque as two stacks
	for q := range dist {
		dist[q] = inf
		if d.accept[q] {
			dist[q] = 0
			front = append(front, int32(q))
		}
	}
	for len(front) > 0 || len(back) > 0 {
		var t int32
		if len(front) > 0 {
			t, front = front[len(front)-1], front[:len(front)-1]
		} else {
			t, back = back[0], back[1:]
		}
		for i, q := range rev[t] {
			w := int32(0)
			if cost[t][i] {
				w = 1
			}
			if dist[t]+w < dist[q] {
				dist[q] = dist[t] + w
				if w == 0 {
					front = append(front, q)
				} else {
					back = append(back, q)
				}
			}
		}
	}
	return dist
}

// singleByteChars: every character d accepts is one byte (no backslash
// escape, nothing past ASCII), so characters and bytes count alike.
func (d *dfa) singleByteChars() bool {
	for q := 0; q < d.states(); q++ {
		for b := 0x80; b < 0x100; b++ {
			if d.next(int32(q), byte(b)) >= 0 {
				return false
			}
		}
		if d.next(int32(q), '\\') >= 0 {
			return false
		}
	}
	return true
}
