package sched

import (
	"cmp"
	"slices"
)

// Tuple is one request's (past, future) pair in the Past-Future rule.
type Tuple struct {
	// A is the KV the request holds now ("past").
	A int
	// B is what is still to come ("future"): read both as the tokens the
	// request will still grow by and as the decode steps until it finishes.
	B int
	// Group and Input let later members of a group count their shared prompt
	// once (LightLLM's beam/diverse queue).
	Group uint64
	Input int
}

// Peak returns LightLLM's need_max_token_num for ts: sort by B descending and
// take max_i(Σ_{j≤i} a_j + (i+1)·B_i), where a_j is A_j for the first member
// of a group in that order and A_j − Input_j for later members. Term i is the
// KV in use when the request with the i-th longest future finishes: the i+1
// requests still alive have each grown by B_i since now.
func Peak(ts []Tuple) int {
	l := make([]entry, len(ts))
	for i, t := range ts {
		l[i].Tuple = t
	}
	slices.SortStableFunc(l, func(x, y entry) int { return cmp.Compare(y.B, x.B) })
	return entryPeak(l, true, map[uint64]struct{}{})
}

// entry is a tuple in a pass's scenario list, with the request it came from.
type entry struct {
	Tuple
	r *Request
}

func entryPeak(l []entry, grouped bool, seen map[uint64]struct{}) int {
	need, cum := 0, 0
	if grouped {
		clear(seen)
	}
	for i := range l {
		t := &l[i].Tuple
		a := t.A
		if grouped {
			if _, dup := seen[t.Group]; dup {
				a -= t.Input
			} else {
				seen[t.Group] = struct{}{}
			}
		}
		cum += a
		need = max(need, cum+(i+1)*t.B)
	}
	return need
}

// insertEntry inserts e after every element with B >= e.B, as LightLLM's
// append-then-stable-sort does.
func insertEntry(l []entry, e entry) []entry {
	i, _ := slices.BinarySearchFunc(l, e.B, func(x entry, b int) int {
		if x.B >= b {
			return -1
		}
		return 1
	})
	return slices.Insert(l, i, e)
}

// sortEntries sorts by B descending. Lists are rebuilt in the previous
// pass's order, in which decode steps rarely reorder anything (every B
// shrinks by one per step), so insertion sort is linear in practice; a list
// that turns out to be far from sorted falls back to pdqsort.
func sortEntries(l []entry) {
	budget := 8 * len(l)
	for i := 1; i < len(l); i++ {
		if l[i-1].B >= l[i].B {
			continue
		}
		e := l[i]
		j := i
		for j > 0 && l[j-1].B < e.B {
			l[j] = l[j-1]
			j--
			budget--
		}
		l[j] = e
		if budget < 0 {
			slices.SortFunc(l, func(x, y entry) int { return cmp.Compare(y.B, x.B) })
			return
		}
	}
}

// estimator is what distinguishes the peak-based policies: how many sampled
// scenarios to evaluate, each request's tuple in scenario k, and the bound the
// worst scenario's peak must stay under.
type estimator interface {
	scenarios(v *View) int
	tuple(v *View, r *Request, k int) Tuple
	limit(v *View) int
}

// tuplePass evaluates admission against K scenario lists, each kept sorted by
// future length so that adding a candidate is one insertion and one linear
// pass. Its buffers, and the order of each list, carry over to the next
// Begin.
type tuplePass struct {
	est     estimator
	v       *View
	lists   [][]entry // the first k are this pass's scenarios
	prev    [][]entry
	k       int
	limit   int
	grouped bool
	seen    map[uint64]struct{}
	peak    int
	done    bool
	epoch   uint64
}

func (p *tuplePass) begin(est estimator, v *View) {
	k := max(est.scenarios(v), 1)
	p.est, p.v, p.k, p.limit, p.done, p.grouped = est, v, k, est.limit(v), false, false
	for len(p.lists) < k {
		p.lists, p.prev = append(p.lists, nil), append(p.prev, nil)
	}
	for _, r := range v.Running {
		if r.groupSize > 1 {
			p.grouped = true
			break
		}
	}
	if p.grouped && p.seen == nil {
		p.seen = map[uint64]struct{}{}
	}
	p.peak = 0
	for i := range k {
		// Rebuild list i from the last pass's order of the requests still
		// running, then the ones it has not seen; stamps keep each once.
		p.epoch++
		p.prev[i], p.lists[i] = p.lists[i], p.prev[i][:0]
		l := p.lists[i]
		for _, e := range p.prev[i] {
			if r := e.r; r.state == stateRunning && r.stamp != p.epoch {
				r.stamp = p.epoch
				l = append(l, entry{est.tuple(v, r, i), r})
			}
		}
		for _, r := range v.Running {
			if r.stamp != p.epoch {
				r.stamp = p.epoch
				l = append(l, entry{est.tuple(v, r, i), r})
			}
		}
		clear(p.prev[i])
		sortEntries(l)
		p.lists[i] = l
		p.peak = max(p.peak, entryPeak(l, p.grouped, p.seen))
	}
	for i := k; i < len(p.lists); i++ {
		clear(p.lists[i])
		p.lists[i] = p.lists[i][:0]
	}
}

func (p *tuplePass) Add(group []*Request) (int, bool) {
	if p.done {
		return p.peak, false
	}
	for _, r := range group {
		if r.groupSize > 1 && !p.grouped {
			p.grouped = true
			if p.seen == nil {
				p.seen = map[uint64]struct{}{}
			}
		}
	}
	need := 0
	for i := range p.k {
		for _, r := range group {
			p.lists[i] = insertEntry(p.lists[i], entry{p.est.tuple(p.v, r, i), r})
		}
		need = max(need, entryPeak(p.lists[i], p.grouped, p.seen))
	}
	if need < p.limit {
		p.peak = need
		return need, true
	}
	// Admission stops at the first rejection, so the lists need no undo: the
	// rejected group is still waiting and is dropped at the next Begin.
	p.done = true
	return need, false
}

func (p *tuplePass) Peak() int { return p.peak }
