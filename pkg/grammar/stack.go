package grammar

import (
	"encoding/binary"
	"slices"
)

// stack is one parse stack, immutable and shared by its extensions: the top
// frame is (rule, state); parent holds the frames below, each already at
// the state its rule returns to.
type stack struct {
	rule, state int32
	parent      *stack
	hash        uint64
	depth       int32
}

func mkStack(parent *stack, rule, state int32) *stack {
	h := uint64(rule)<<32 | uint64(uint32(state))
	h *= 0x9e3779b97f4a7c15
	d := int32(1)
	if parent != nil {
		h ^= parent.hash + 0x632be59bd9b4e019 + (h << 6) + (h >> 2)
		d = parent.depth + 1
	}
	return &stack{rule: rule, state: state, parent: parent, hash: h, depth: d}
}

func sameStack(a, b *stack) bool {
	for a != b {
		if a == nil || b == nil || a.hash != b.hash || a.rule != b.rule || a.state != b.state || a.depth != b.depth {
			return false
		}
		a, b = a.parent, b.parent
	}
	return true
}

func addStack(set []*stack, s *stack) []*stack {
	for _, x := range set {
		if sameStack(x, s) {
			return set
		}
	}
	return append(set, s)
}

// closure expands a configuration into the stacks that can consume a byte
// next: calls are entered, finished rules return. canEnd: the whole
// grammar may be finished here.
func (g *Grammar) closure(cfg []*stack, out []*stack) (res []*stack, canEnd bool) {
	res = out[:0]
	var seen []*stack
	work := append([]*stack(nil), cfg...)
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		dup := false
		for _, x := range seen {
			if sameStack(x, s) {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		seen = append(seen, s)
		d := g.rule(s.rule)
		if d.hasBytes[s.state] {
			res = append(res, s)
		}
		for _, e := range d.callsAt(s.state) {
			// The callee's frame, one deeper, and this rule's frame back
			// at e.to must both still finish within the bound (depth.go).
			if g.need[e.rule] > g.maxDepth-s.depth || !g.fits(d, e.to, s.depth) {
				continue
			}
			work = append(work, mkStack(mkStack(s.parent, s.rule, e.to), e.rule, 0))
		}
		if d.accept[s.state] {
			if s.parent == nil {
				canEnd = true
			} else {
				work = append(work, s.parent)
			}
		}
	}
	return res, canEnd
}

// step consumes byte b from every stack of a closed set.
func (g *Grammar) step(set []*stack, b byte, out []*stack) []*stack {
	out = out[:0]
	for _, s := range set {
		d := g.rule(s.rule)
		if t := d.next(s.state, b); t >= 0 && g.fits(d, t, s.depth) {
			out = addStack(out, mkStack(s.parent, s.rule, t))
		}
	}
	return out
}

// configKey is the exact identity of a configuration, independent of
// stack order, for memoising masks.
func configKey(cfg []*stack) string {
	sorted := slices.Clone(cfg)
	slices.SortFunc(sorted, func(a, b *stack) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	var buf []byte
	for _, s := range sorted {
		buf = binary.AppendUvarint(buf, uint64(s.depth))
		for f := s; f != nil; f = f.parent {
			buf = binary.AppendUvarint(buf, uint64(f.rule))
			buf = binary.AppendUvarint(buf, uint64(f.state))
		}
	}
	return string(buf)
}
