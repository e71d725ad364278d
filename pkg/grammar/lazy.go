package grammar

import (
	"fmt"
)

// Rules that call other rules (objects, arrays, unions) are determinized
// when a Matcher first reaches them, not at compile time: a schema's first
// mask needs its root and what the root's first bytes call, while building
// every object of a Kubernetes resource or a JSON Schema Store config up
// front was a third of the slowest compiles (issue 18's time to first mask).
// Everything a refusal depends on is still decided at compile time: leaf
// automata (strings, patterns, formats, numbers, enums) are built eagerly
// and may fail there; the analyses that need every rule (which rules
// produce anything, left recursion) run on the rules' NFAs, whose edges
// ruleGraph keeps; a deferred rule whose NFA is over maxDFAStates states is
// built eagerly, so that the cap on its automaton is checked at compile
// time too. The DFA a deferred rule gets is the one compile would have
// built: the same body run into an NFA, determinized and trimmed against
// the same productive set.

// ruleGraph is a deferred rule's NFA without its byte sets: which states
// each state reaches by epsilon, by a byte and by a call.
type ruleGraph struct {
	start, final int32
	// State s's epsilon targets are eps[at[s]:at[s+1]], its byte targets
	// byt[bytAt[s]:bytAt[s+1]], its calls calls[callAt[s]:callAt[s+1]].
	at, bytAt, callAt []int32
	eps, byt          []int32
	calls             []callEdge
}

func graphOf(n *nfa, start, final int32) *ruleGraph {
	g := &ruleGraph{start: start, final: final}
	size := n.size()
	g.at = make([]int32, size+1)
	g.bytAt = make([]int32, size+1)
	g.callAt = make([]int32, size+1)
	for s := 0; s < size; s++ {
		g.eps = append(g.eps, n.eps[s]...)
		g.at[s+1] = int32(len(g.eps))
		for _, e := range n.bytes[s] {
			if e.set != (byteSet{}) {
				g.byt = append(g.byt, e.to)
			}
		}
		g.bytAt[s+1] = int32(len(g.byt))
		g.calls = append(g.calls, n.calls[s]...)
		g.callAt[s+1] = int32(len(g.calls))
	}
	return g
}

func (g *ruleGraph) states() int { return len(g.at) - 1 }

// canReachAccept is dfa.canReachAccept on the NFA: from the start, through
// epsilons, bytes (unless nullOnly) and calls of rules marked in ok.
func (g *ruleGraph) canReachAccept(ok []bool, nullOnly bool) bool {
	seen := make([]bool, g.states())
	work := []int32{g.start}
	seen[g.start] = true
	visit := func(t int32) {
		if !seen[t] {
			seen[t] = true
			work = append(work, t)
		}
	}
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		if s == g.final {
			return true
		}
		for _, t := range g.eps[g.at[s]:g.at[s+1]] {
			visit(t)
		}
		if !nullOnly {
			for _, t := range g.byt[g.bytAt[s]:g.bytAt[s+1]] {
				visit(t)
			}
		}
		for _, e := range g.calls[g.callAt[s]:g.callAt[s+1]] {
			if ok[e.rule] {
				visit(e.to)
			}
		}
	}
	return false
}

// live marks the states from which the final state can be reached,
// through calls of productive rules: what trim keeps of the DFA.
func (g *ruleGraph) live(productive []bool) []bool {
	n := g.states()
	rev := make([][]int32, n)
	for s := 0; s < n; s++ {
		for _, t := range g.eps[g.at[s]:g.at[s+1]] {
			rev[t] = append(rev[t], int32(s))
		}
		for _, t := range g.byt[g.bytAt[s]:g.bytAt[s+1]] {
			rev[t] = append(rev[t], int32(s))
		}
		for _, e := range g.calls[g.callAt[s]:g.callAt[s+1]] {
			if productive[e.rule] {
				rev[e.to] = append(rev[e.to], int32(s))
			}
		}
	}
	live := make([]bool, n)
	live[g.final] = true
	work := []int32{g.final}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		for _, s := range rev[t] {
			if !live[s] {
				live[s] = true
				work = append(work, s)
			}
		}
	}
	return live
}

// firstCalls is what checkLeftRecursion collects from a rule's DFA: the
// rules called before a byte is consumed, following calls of nullable
// rules. Compile trims the DFAs of productive rules only, so for those
// (trimmed) a call counts when the trimmed DFA keeps it: its rule is
// productive and its target live (a call from a dead NFA state has a dead
// target, so it never counts); for the others every call counts.
func (g *ruleGraph) firstCalls(nullable, productive []bool, trimmed bool) []int32 {
	var live []bool
	if trimmed {
		if live = g.live(productive); !live[g.start] {
			return nil
		}
	}
	var first []int32
	seen := make([]bool, g.states())
	work := []int32{g.start}
	seen[g.start] = true
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		for _, t := range g.eps[g.at[s]:g.at[s+1]] {
			if !seen[t] {
				seen[t] = true
				work = append(work, t)
			}
		}
		for _, e := range g.calls[g.callAt[s]:g.callAt[s+1]] {
			if trimmed && (!productive[e.rule] || !live[e.to]) {
				continue
			}
			first = append(first, e.rule)
			if nullable[e.rule] && !seen[e.to] {
				seen[e.to] = true
				work = append(work, e.to)
			}
		}
	}
	return first
}

// rule is rule r's automaton, built on first use when it was deferred.
func (g *Grammar) rule(r int32) *dfa {
	if d := g.rules[r].Load(); d != nil {
		return d
	}
	return g.materialize(r)
}

// materialize builds deferred rule r as compile would have. Matchers of one
// Grammar may run on several goroutines: the first to need a rule builds
// it, the others wait for it.
func (g *Grammar) materialize(r int32) *dfa {
	g.lazyMu.Lock()
	defer g.lazyMu.Unlock()
	if d := g.rules[r].Load(); d != nil {
		return d
	}
	var d *dfa
	var err error
	if build := g.later[r]; build != nil {
		d, err = build()
		delete(g.later, r)
	} else {
		n := g.leaves.nfa()
		defer g.leaves.release(n)
		s, f := n.state(), n.state()
		g.bodies[r](n, s, f)
		if d, err = determinize(n, s, f); err == nil {
			if g.productive[r] { // as compile: the others are never called
				d.trim(g.productive)
			}
			d.finish()
			d.setNeed(g.need)
		}
	}
	g.bodies[r] = nil // its closure's data is no longer needed
	if err != nil {
		// Compile deferred only what cannot fail (an NFA under the
		// automaton cap, cuts and products shown to fit); should a build
		// still fail, its rule matches nothing (the output stays valid)
		// and the failure is reported, not swallowed.
		failure := fmt.Errorf("grammar: rule %s: %w", g.names[r], err)
		g.err.CompareAndSwap(nil, &failure)
		d = &dfa{ncls: 1, trans: []int16{-1}, accept: []bool{false}}
		d.finish()
	}
	g.rules[r].Store(d)
	return d
}

// Err reports a rule that could not be built when a Matcher first reached
// it (see materialize); nil when every rule built so far is sound.
func (g *Grammar) Err() error {
	if e := g.err.Load(); e != nil {
		return *e
	}
	return nil
}
