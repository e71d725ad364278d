package grammar

import "fmt"

// leafDFA determinizes a call-free fragment (through the shared cache
// when there is one) into a finished DFA.
func leafDFA(f frag, leaves *leafDFAs) (*dfa, error) {
	n := leaves.nfa()
	defer leaves.release(n)
	s, e := n.state(), n.state()
	f(n, s, e)
	key, _ := n.leafKey(s, e)
	if leaves != nil {
		if d := leaves.get(key); d != nil {
			return d, nil
		}
	}
	d, err := determinize(n, s, e)
	if err != nil {
		return nil, err
	}
	d.trim(nil)
	d.finish()
	if leaves != nil {
		leaves.put(key, d)
	}
	return d, nil
}

// product runs DFAs in lockstep; keep decides acceptance from the parts'
// (its acc is reused from state to state).
func product(ds []*dfa, keep func(acc []bool) bool) (*dfa, error) {
	d, _, err := productStates(ds, keep)
	return d, err
}

// productStates is product, also returning each state's part states (-1:
// that part is dead).
func productStates(ds []*dfa, keep func(acc []bool) bool) (*dfa, [][]int32, error) {
	var sets []byteSet
	for _, d := range ds {
		for c := 0; c < d.ncls; c++ {
			var bs byteSet
			for b := 0; b < 256; b++ {
				if int(d.cls[b]) == c {
					bs.add(byte(b))
				}
			}
			sets = append(sets, bs)
		}
	}
	classOf, reps := byteClasses(sets)
	out := &dfa{ncls: len(reps)}
	for b := range classOf {
		out.cls[b] = uint8(classOf[b])
	}
	var found stateSets // the part-state tuples, as determinize's state sets
	acc := make([]bool, len(ds))
	add := func(qs []int32) (int32, error) {
		id, h, ok := found.find(qs)
		if ok {
			return id, nil
		}
		if id >= maxDFAStates {
			return 0, fmt.Errorf("automaton over %d states", maxDFAStates)
		}
		found.insert(qs, h) // a copy: next is reused by the caller
		for i, q := range qs {
			acc[i] = q >= 0 && ds[i].accept[q]
		}
		out.accept = append(out.accept, keep(acc))
		out.calls = append(out.calls, nil)
		out.trans = append(out.trans, make([]int16, out.ncls)...)
		return id, nil
	}
	start := make([]int32, len(ds))
	if _, err := add(start); err != nil {
		return nil, nil, err
	}
	next := make([]int32, len(ds))
	for q := 0; q < found.len(); q++ {
		qs := found.set(q) // stays valid: appending never writes below the arena's length
		for c, b := range reps {
			alive := false
			for i, s := range qs {
				next[i] = -1
				if s >= 0 {
					next[i] = ds[i].next(s, b)
				}
				alive = alive || next[i] >= 0
			}
			if !alive {
				out.trans[q*out.ncls+c] = -1
				continue
			}
			id, err := add(next)
			if err != nil {
				return nil, nil, err
			}
			out.trans[q*out.ncls+c] = int16(id)
		}
	}
	parts := make([][]int32, found.len())
	for q := range parts {
		parts[q] = found.set(q)
	}
	out.trim(nil)
	out.finish()
	return out, parts, nil
}

func allAccept(acc []bool) bool {
	for _, a := range acc {
		if !a {
			return false
		}
	}
	return true
}

// jsonStrings is the DFA of the JSON strings of at most maxChars
// characters (negative: any length).
func (c *schemaCompiler) jsonStrings(maxChars int) (*dfa, error) {
	if maxChars < 0 {
		return c.leaves().fixed("json-string", func() (*dfa, error) {
			return leafDFA(seq(lit(`"`), rep(jsonChar(), 0, -1), lit(`"`)), nil)
		})
	}
	return c.boundedString(0, maxChars)
}

// differenceFromString is the DFA of the JSON strings b does not match,
// of at most maxChars characters (negative: any length).
func (c *schemaCompiler) differenceFromString(b frag, maxChars int) (*dfa, error) {
	da, err := c.jsonStrings(maxChars)
	if err != nil {
		return nil, err
	}
	db, err := leafDFA(b, nil)
	if err != nil {
		return nil, err
	}
	d, parts, err := productStates([]*dfa{da, db}, func(acc []bool) bool { return acc[0] && !acc[1] })
	if err != nil {
		return nil, err
	}
	x := &exclInfo{s: da, n: db, sState: make([]int32, len(parts)), nState: make([]int32, len(parts))}
	for q, p := range parts {
		x.sState[q], x.nState[q] = p[0], p[1]
	}
	d.excl = x
	return d, nil
}
