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
	for _, pat := range []string{`^[a-z_]+$`, `^(SELECT|WITH) `, `^[0-9]+(Mi|Gi)$`, `é+x`} {
		g, err := CompileJSONSchema([]byte(`{"type":"string","pattern":`+quoteJSON(pat)+`}`), Options{MaxStringLength: 8})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range g.rules {
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
				if !slices.Equal(a, b) || !slices.Equal(got.exits, want.exits) {
					t.Fatalf("%s state %d: derived %d tokens %d exits, walk %d tokens %d exits", pat, q, popcount(a), len(got.exits), popcount(b), len(want.exits))
				}
			}
		}
		if !found {
			t.Fatalf("%s: no truncated rule", pat)
		}
	}
}
