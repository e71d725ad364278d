package grammar

import (
	"bytes"
	"slices"
	"sync"
	"unicode/utf8"
)

// TokenSource is what a Vocab is built from; *tokenizer.Tokenizer has these methods.
type TokenSource interface {
	VocabSize() int
	TokenBytes(id int32) []byte
	IsSpecial(id int32) bool
	EOS() int32
}

// Vocab is a tokenizer's vocabulary as the grammar engine needs it: the raw
// bytes of every token and a byte trie over them. Build it once per
// tokenizer; it is safe for concurrent use and holds the caches that do not
// depend on any one grammar.
type Vocab struct {
	size   int        // number of token ids: mask bits
	tokens flatTokens // id → bytes; empty: never allowed by a grammar (special tokens)
	eos    []int32    // allowed exactly when the grammar may end

	// The trie in preorder: node 0 is the root (empty prefix); the subtree
	// of node i is [i, end[i]); a node's children follow it in byte order.
	nodeByte  []byte
	nodeEnd   []int32
	nodeDepth []uint16
	nodeTok   []int32 // id of a token that ends here, -1 if none
	nodeDup   []bool  // more tokens with the same bytes end here: see dupTok
	dupTok    map[int32][]int32
	maxDepth  int

	// The slice of plain string content: tokens of at most sliceChars
	// characters, none of them a quote, a backslash or a control
	// character, in valid UTF-8. A state that keeps every such text inside
	// its rule allows them all at once, and only the other tokens (rest,
	// a trie of its own) are walked.
	slice      []uint64
	sliceUpTo  [sliceMaxChars + 1][]uint64 // slice tokens of at most k characters
	sliceChars int
	rest       *Vocab

	mu        sync.Mutex
	leafLang  map[leafKey][32]byte            // (rule automaton, state) → language key
	leafCache genCache[[32]byte, *leafResult] // bounded by leafCacheMax
	cutBases  genCache[cutKey, *cutBase]      // bounded by cutBasesMax
}

const leafCacheMax = 256 << 20

// NewVocab builds a Vocab from token bytes indexed by id; nil or empty
// entries are never allowed (special and unused ids), eos lists the ids
// that end the text.
func NewVocab(tokens [][]byte, eos []int32) *Vocab {
	v := &Vocab{size: len(tokens), tokens: flatten(tokens), leafLang: map[leafKey][32]byte{}, leafCache: newGenCache[[32]byte, *leafResult](leafCacheMax), cutBases: newGenCache[cutKey, *cutBase](cutBasesMax), dupTok: map[int32][]int32{}}
	for _, e := range eos {
		if e >= 0 && int(e) < len(tokens) {
			v.eos = append(v.eos, e)
		}
	}
	ids := make([]int32, 0, len(tokens))
	for id, b := range tokens {
		if len(b) > 0 && !slices.Contains(v.eos, int32(id)) {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(tokens[a], tokens[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.buildTrie(ids)
	v.buildSlice()
	return v
}

const sliceMaxChars = 16

func (v *Vocab) buildSlice() {
	v.slice = make([]uint64, v.MaskWords())
	for k := range v.sliceUpTo {
		v.sliceUpTo[k] = make([]uint64, v.MaskWords())
	}
	restToks := make([][]byte, v.size)
	v.sliceChars = sliceMaxChars
	for id := range v.size {
		b := v.tokens.at(int32(id))
		if len(b) == 0 || slices.Contains(v.eos, int32(id)) {
			continue
		}
		if plainContent(b, sliceMaxChars) {
			v.slice[id>>6] |= 1 << (uint(id) & 63)
			for k := utf8.RuneCount(b); k <= sliceMaxChars; k++ {
				v.sliceUpTo[k][id>>6] |= 1 << (uint(id) & 63)
			}
		} else {
			restToks[id] = b
		}
	}
	r := &Vocab{size: v.size, tokens: flatten(restToks), dupTok: map[int32][]int32{}}
	var ids []int32
	for id, b := range restToks {
		if len(b) > 0 {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(restToks[a], restToks[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	r.buildTrie(ids)
	v.rest = r
}

// plainContent: valid UTF-8 of at most maxChars characters, none of them
// '"', '\\' or below U+0020.
func plainContent(b []byte, maxChars int) bool {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 || r < 0x20 || r == '"' || r == '\\' {
			return false
		}
		b = b[size:]
		n++
	}
	return n <= maxChars
}

// VocabFromTokenizer builds the Vocab of a loaded tokenizer: special tokens
// are never allowed by a grammar, except the EOS id (and extraEOS, e.g. a
// chat model's end-of-turn token), which is allowed where the grammar may end.
func VocabFromTokenizer(t TokenSource, extraEOS ...int32) *Vocab {
	n := t.VocabSize()
	toks := make([][]byte, n)
	for id := 0; id < n; id++ {
		if t.IsSpecial(int32(id)) {
			continue
		}
		toks[id] = t.TokenBytes(int32(id))
	}
	eos := append([]int32{}, extraEOS...)
	if e := t.EOS(); e >= 0 {
		eos = append(eos, e)
	}
	v := NewVocab(toks, eos)
	v.warmStrings(DefaultMaxStringLength)
	return v
}

// warmStrings computes what every state of a string of at most maxChars
// characters allows, once per tokenizer: every bounded string state with
// as many characters left shares these results (charCounter), so the
// first masks of a request's strings cost a lookup, not a walk.
func (v *Vocab) warmStrings(maxChars int) {
	var leaves leafDFAs
	c := &schemaCompiler{opts: Options{leaves: &leaves}}
	d, err := c.boundedString(0, maxChars)
	if err != nil {
		return // too many states for the bound: nothing to share
	}
	for q := int32(1); q < int32(d.states())-1; q++ {
		v.leaf(d, q)
	}
}

// Size is the number of token ids, the number of bits FillMask writes.
func (v *Vocab) Size() int { return v.size }

// maskAllows reports whether token id is set in a mask FillMask filled.
func maskAllows(bits []uint64, id int32) bool { return bits[id>>6]>>(uint(id)&63)&1 == 1 }

// MaskWords is the length of the []uint64 FillMask needs.
func (v *Vocab) MaskWords() int { return (v.size + 63) / 64 }

// EOS lists the ids allowed exactly where the grammar may end.
func (v *Vocab) EOS() []int32 { return v.eos }

// TokenBytes is the bytes of token id (nil for special ids).
func (v *Vocab) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= v.size {
		return nil
	}
	return v.tokens.at(id)
}

// flatTokens holds every token's bytes in one pointer-free buffer. One
// slice per token was 128k small objects (Llama 3) that every garbage
// collection of the process marked again, and a collection running during
// a grammar compile slowed it (issue 18's time to first mask).
type flatTokens struct {
	buf []byte
	off []uint32 // token id's bytes are buf[off[id]:off[id+1]]
}

func flatten(tokens [][]byte) flatTokens {
	n := 0
	for _, b := range tokens {
		n += len(b)
	}
	f := flatTokens{buf: make([]byte, 0, n), off: make([]uint32, len(tokens)+1)}
	for id, b := range tokens {
		f.buf = append(f.buf, b...)
		f.off[id+1] = uint32(len(f.buf))
	}
	return f
}

// at is token id's bytes (nil when it has none); the caller must not
// modify them.
func (f flatTokens) at(id int32) []byte {
	lo, hi := f.off[id], f.off[id+1]
	if lo == hi {
		return nil
	}
	return f.buf[lo:hi:hi]
}

// buildTrie lays the sorted tokens out as a preorder trie.
func (v *Vocab) buildTrie(ids []int32) {
	v.nodeByte = append(v.nodeByte, 0)
	v.nodeDepth = append(v.nodeDepth, 0)
	v.nodeTok = append(v.nodeTok, -1)
	v.nodeDup = append(v.nodeDup, false)
	path := []int32{0} // path[d]: node at depth d on the current branch
	var prev []byte
	for _, id := range ids {
		b := v.tokens.at(id)
		if len(b) > 0xffff {
			continue
		}
		common := 0
		for common < len(prev) && common < len(b) && prev[common] == b[common] {
			common++
		}
		if common == len(b) && len(prev) == len(b) { // same bytes as the previous token
			n := path[len(b)]
			v.dupTok[n] = append(v.dupTok[n], id)
			v.nodeDup[n] = true
			continue
		}
		path = path[:common+1]
		for d := common; d < len(b); d++ {
			n := int32(len(v.nodeByte))
			v.nodeByte = append(v.nodeByte, b[d])
			v.nodeDepth = append(v.nodeDepth, uint16(d+1))
			v.nodeTok = append(v.nodeTok, -1)
			v.nodeDup = append(v.nodeDup, false)
			path = append(path, n)
		}
		v.nodeTok[path[len(b)]] = id
		v.maxDepth = max(v.maxDepth, len(b))
		prev = b
	}
	// Subtree ends: a node's subtree ends where the next node at its depth or shallower starts.
	v.nodeEnd = make([]int32, len(v.nodeByte))
	var open []int32
	for i := range v.nodeByte {
		d := v.nodeDepth[i]
		for len(open) > 0 && v.nodeDepth[open[len(open)-1]] >= d {
			v.nodeEnd[open[len(open)-1]] = int32(i)
			open = open[:len(open)-1]
		}
		open = append(open, int32(i))
	}
	for _, n := range open {
		v.nodeEnd[n] = int32(len(v.nodeByte))
	}
}

// setTokens marks the tokens that end at trie node n.
func (v *Vocab) setTokens(bits []uint64, n int32) {
	if id := v.nodeTok[n]; id >= 0 {
		bits[id>>6] |= 1 << (uint(id) & 63)
		if v.nodeDup[n] {
			for _, d := range v.dupTok[n] {
				bits[d>>6] |= 1 << (uint(d) & 63)
			}
		}
	}
}
