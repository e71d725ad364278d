package grammar

import (
	"slices"
	"testing"
)

// TestCutLeafExact: what a truncated pattern string's state allows, derived
// from its source state (cutLeaf), equals a direct walk of the truncated
// automaton from that state, for every state.
func TestCutLeafExact(t *testing.T) {
	if testing.Short() {
		t.Skip("walks the Llama-3 trie once per state")
	}
	v := loadLlama3(t)
	// Free text (`^(SELECT|WITH) `, `^.*$`, `^[^\n]*\n$`: uniform needs,
	// the slice by length) and patterns whose states are walked in full.
	sliced := 0
	for _, pat := range []string{`^[a-z_]+$`, `^(SELECT|WITH) `, `^[0-9]+(Mi|Gi)$`, `é+x`, `^.*$`, `^[^\n]*\n$`} {
		g, err := CompileJSONSchema([]byte(`{"type":"string","pattern":`+quoteJSON(pat)+`}`), Options{MaxStringLength: 8})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for r := range g.rules {
			d := g.rule(int32(r))
			if d.cut == nil {
				continue
			}
			found = true
			for q := int32(1); q < int32(d.states())-1; q++ {
				got := v.cutLeaf(d.cut, int(q)-1)
				want := v.computeLeaf(d, q)
				a, b := make([]uint64, v.MaskWords()), make([]uint64, v.MaskWords())
				got.orInto(a, v)
				want.orInto(b, v)
				if got.trie != v {
					sliced++
				}
				ge, we := exitTexts(got), exitTexts(want)
				if !slices.Equal(a, b) || !slices.Equal(ge, we) {
					t.Fatalf("%s state %d: derived %d tokens %d exits, walk %d tokens %d exits", pat, q, popcount(a), len(ge), popcount(b), len(we))
				}
			}
		}
		if !found {
			t.Fatalf("%s: no truncated rule", pat)
		}
	}
	if sliced == 0 {
		t.Fatal("no state took the slice by length: the free-text path went untested")
	}
}

// exitTexts is the byte prefix of each exit node of lr, in trie order:
// exits of the rest trie and of the full one compare by text.
func exitTexts(lr *leafResult) []string {
	v := lr.trie
	path := make([]byte, v.maxDepth+1)
	var out []string
	next := 0
	for i := int32(1); i < int32(len(v.nodeByte)) && next < len(lr.exits); i++ {
		path[v.nodeDepth[i]] = v.nodeByte[i]
		if i == lr.exits[next] {
			out = append(out, string(path[1:v.nodeDepth[i]+1]))
			next++
		}
	}
	return out
}

// TestExclLeafExact: what a state of an extra-key automaton (a string minus
// the property names) allows, derived from the string's result, equals a
// walk of the trie, for every live state; names at the bound, prefixes of
// each other, escapes and non-ASCII included.
func TestExclLeafExact(t *testing.T) {
	if testing.Short() {
		t.Skip("walks the Llama-3 trie once per state")
	}
	v := loadLlama3(t)
	for _, tc := range []struct {
		names    []string
		maxChars int
	}{
		{[]string{"path", "interval", "timeout"}, 8},
		{[]string{"a", "ab", "abc"}, 3},
		{[]string{"id", "name", "é", `a"b`, `x\y`}, 5},
		{[]string{"path", "interval"}, 128},
		{[]string{"path", "port"}, -1},
	} {
		var leaves leafDFAs
		c := &schemaCompiler{opts: Options{leaves: &leaves}}
		var lits []frag
		for _, k := range tc.names {
			lits = append(lits, lit(quoteJSON(k)))
		}
		d, err := c.differenceFromString(alt(lits...), tc.maxChars)
		if err != nil {
			t.Fatal(err)
		}
		changed := 0
		for q := int32(0); q < int32(d.states()); q++ {
			if d.excl.sState[q] < 0 || !d.accept[q] && !d.hasBytes[q] {
				continue
			}
			got := v.exclLeaf(d.excl, q)
			if got != v.leaf(d.excl.s, d.excl.sState[q]) {
				changed++
			}
			want := v.computeLeaf(d, q)
			a, b := make([]uint64, v.MaskWords()), make([]uint64, v.MaskWords())
			got.orInto(a, v)
			want.orInto(b, v)
			ge, we := exitTexts(got), exitTexts(want)
			if !slices.Equal(a, b) || !slices.Equal(ge, we) {
				t.Fatalf("%q (%d chars) state %d: derived %d tokens %d exits, walk %d tokens %d exits", tc.names, tc.maxChars, q, popcount(a), len(ge), popcount(b), len(we))
			}
		}
		if changed == 0 {
			t.Fatalf("%q: no state removed anything: the derivation went untested", tc.names)
		}
	}
}
