package grammar

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}
func (s *byteSet) union(o byteSet) {
	for i := range s {
		s[i] |= o[i]
	}
}
func (s *byteSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}

func rangeSet(lo, hi byte) byteSet {
	var s byteSet
	s.addRange(lo, hi)
	return s
}

func bytesOf(chars string) byteSet {
	var s byteSet
	for i := 0; i < len(chars); i++ {
		s.add(chars[i])
	}
	return s
}

type byteEdge struct {
	set byteSet
	to  int32
}

type callEdge struct {
	rule int32
	to   int32
}

// nfa is a rule body under construction: byte edges, rule calls and
// epsilon edges between numbered states.
type nfa struct {
	bytes [][]byteEdge
	calls [][]callEdge
	eps   [][]int32

	keyBuf []byte // leafKey's serialization, reused
}

func (n *nfa) state() int32 {
	// After reset the state lists keep their length-0 edge lists: a
	// state reuses the one at its index, so rebuilding rule after rule
	// (compile after compile, through the pool) does not regrow them.
	i := len(n.eps)
	if i < cap(n.eps) && i < cap(n.bytes) && i < cap(n.calls) {
		n.bytes, n.calls, n.eps = n.bytes[:i+1], n.calls[:i+1], n.eps[:i+1]
		n.bytes[i], n.calls[i], n.eps[i] = n.bytes[i][:0], n.calls[i][:0], n.eps[i][:0]
		return int32(i)
	}
	n.bytes = append(n.bytes, nil)
	n.calls = append(n.calls, nil)
	n.eps = append(n.eps, nil)
	return int32(i)
}

func (n *nfa) size() int { return len(n.eps) }

// reset empties n for the next rule, keeping its capacity, the per-state
// edge lists' included (state truncates the one it hands out).
func (n *nfa) reset() {
	n.bytes, n.calls, n.eps = n.bytes[:0], n.calls[:0], n.eps[:0]
}

// frag adds a sub-automaton between from and to.
type frag func(n *nfa, from, to int32)

func epsilon() frag { return func(n *nfa, from, to int32) { n.eps[from] = append(n.eps[from], to) } }

func class(s byteSet) frag {
	return func(n *nfa, from, to int32) { n.bytes[from] = append(n.bytes[from], byteEdge{s, to}) }
}

func lit(s string) frag {
	return func(n *nfa, from, to int32) {
		if s == "" {
			n.eps[from] = append(n.eps[from], to)
			return
		}
		cur := from
		for i := 0; i < len(s); i++ {
			next := to
			if i < len(s)-1 {
				next = n.state()
			}
			var bs byteSet
			bs.add(s[i])
			n.bytes[cur] = append(n.bytes[cur], byteEdge{bs, next})
			cur = next
		}
	}
}

func call(rule int32) frag {
	return func(n *nfa, from, to int32) { n.calls[from] = append(n.calls[from], callEdge{rule, to}) }
}

func seq(fs ...frag) frag {
	return func(n *nfa, from, to int32) {
		if len(fs) == 0 {
			n.eps[from] = append(n.eps[from], to)
			return
		}
		cur := from
		for i, f := range fs {
			next := to
			if i < len(fs)-1 {
				next = n.state()
			}
			f(n, cur, next)
			cur = next
		}
	}
}

func alt(fs ...frag) frag {
	return func(n *nfa, from, to int32) {
		if len(fs) == 0 {
			return // the empty language
		}
		for _, f := range fs {
			// Each branch gets its own entry state so loops inside one
			// branch cannot leak into another.
			s := n.state()
			n.eps[from] = append(n.eps[from], s)
			f(n, s, to)
		}
	}
}

func opt(f frag) frag { return rep(f, 0, 1) }

// rep repeats f between min and max times; max < 0 means unbounded.
func rep(f frag, min, max int) frag {
	return func(n *nfa, from, to int32) {
		cur := from
		for i := 0; i < min; i++ {
			next := n.state()
			f(n, cur, next)
			cur = next
		}
		if max < 0 {
			loop := n.state()
			n.eps[cur] = append(n.eps[cur], loop)
			body := n.state()
			f(n, loop, body)
			n.eps[body] = append(n.eps[body], loop)
			n.eps[loop] = append(n.eps[loop], to)
			return
		}
		n.eps[cur] = append(n.eps[cur], to)
		for i := min; i < max; i++ {
			next := n.state()
			f(n, cur, next)
			n.eps[next] = append(n.eps[next], to)
			cur = next
		}
	}
}

// leafKey hashes an automaton without calls (ok false when it has some):
// equal keys determinize to equal DFAs.
func (n *nfa) leafKey(start, final int32) (key [32]byte, ok bool) {
	buf := n.keyBuf[:0]
	defer func() { n.keyBuf = buf[:0] }()
	buf = binary.LittleEndian.AppendUint32(buf, uint32(start))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(final))
	for s := range n.eps {
		if len(n.calls[s]) > 0 {
			return key, false
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(n.eps[s])))
		for _, t := range n.eps[s] {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(n.bytes[s])))
		for _, e := range n.bytes[s] {
			for _, w := range e.set {
				buf = binary.LittleEndian.AppendUint64(buf, w)
			}
			buf = binary.LittleEndian.AppendUint32(buf, uint32(e.to))
		}
	}
	return sha256.Sum256(buf), true
}
