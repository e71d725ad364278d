package grammar

import "math"

// The depth bound. A Matcher's stacks hold at most MaxDepth frames, which
// keeps a recursive grammar's configurations finite. Refusing only the
// call that would pass the bound is not enough: a sampled model could walk
// into a state from which every way on needs a deeper call (`"left":` of a
// recursive expression at the bound), where the mask then allowed no token
// at all and the request failed. So every frame must still be able to
// finish within the bound:
//
//   - need[r] is the fewest frames a complete text of rule r takes, r's
//     own included (a rule that calls nothing needs 1, one that calls such
//     a rule 2);
//   - a DFA state's needAt is the same for the rest of its rule's text
//     from that state;
//   - a frame of rule automaton d in state q at depth k fits when
//     k-1 + needAt[q] <= MaxDepth. Calls are entered, and bytes stepped,
//     only into frames that fit (closure, step, walker.fast).
//
// A fitting frame has a way to finish in which every call fits too, so
// every stack a mask allows can still be completed: no dead end at the
// bound, where the model is made to close what it opened instead.

// noNeed is the need of a rule that completes nothing.
const noNeed = math.MaxInt32

// ruleNeeds computes need: rule r needs k when it has a complete text all
// of whose calls need at most k-1, which completes(r, ok) answers (the
// productive check with only the rules in ok callable). It runs for
// k = 1, 2, ... until a pass adds no rule.
func ruleNeeds(nr int, completes func(r int, ok []bool) bool) []int32 {
	need := make([]int32, nr)
	for r := range need {
		need[r] = noNeed
	}
	ok := make([]bool, nr)
	var added []int
	for k := int32(1); ; k++ {
		added = added[:0]
		for r := range nr {
			if need[r] == noNeed && completes(r, ok) {
				added = append(added, r)
			}
		}
		if len(added) == 0 {
			return need
		}
		for _, r := range added {
			need[r], ok[r] = k, true
		}
	}
}

// setNeed computes d.needAt from the needs of the rules it calls: for each
// state, the least over the ways to an accepting state of the largest
// 1+need of a call on the way (1 when there is none) — a bottleneck
// shortest path over the reversed automaton, its costs small integers, so
// a bucket queue orders it. A leaf needs 1 everywhere and keeps needAt nil.
func (d *dfa) setNeed(need []int32) {
	if d.leaf {
		return
	}
	n := d.states()
	type pred struct{ from, cost int32 }
	preds := make([][]pred, n)
	for q := range n {
		last := int32(-1)
		for c := 0; c < d.ncls; c++ {
			if t := int32(d.trans[q*d.ncls+c]); t >= 0 && t != last {
				preds[t] = append(preds[t], pred{int32(q), 1})
				last = t
			}
		}
		for _, e := range d.callsAt(int32(q)) {
			if need[e.rule] != noNeed {
				preds[e.to] = append(preds[e.to], pred{int32(q), 1 + need[e.rule]})
			}
		}
	}
	at := make([]int32, n)
	var buckets [][]int32
	push := func(q, v int32) {
		for int(v) >= len(buckets) {
			buckets = append(buckets, nil)
		}
		buckets[v] = append(buckets[v], q)
	}
	for q := range n {
		at[q] = noNeed
		if d.accept[q] {
			at[q] = 1
			push(int32(q), 1)
		}
	}
	for v := 1; v < len(buckets); v++ {
		for i := 0; i < len(buckets[v]); i++ { // the bucket grows as it is read
			q := buckets[v][i]
			if at[q] != int32(v) {
				continue // reached more cheaply since
			}
			for _, p := range preds[q] {
				if c := max(int32(v), p.cost); c < at[p.from] {
					at[p.from] = c
					push(p.from, c)
				}
			}
		}
	}
	d.needAt = at
}

// fits reports whether a frame of rule automaton d in state q at stack
// depth depth can still finish within the bound.
func (g *Grammar) fits(d *dfa, q, depth int32) bool {
	return d.needAt == nil || d.needAt[q] <= g.maxDepth-depth+1 // noNeed must not overflow
}
