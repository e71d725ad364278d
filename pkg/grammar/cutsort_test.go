package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestByNeedDesc: the counting sort orders like the comparison sort (the
// order within one need is free), on both of its paths.
func TestByNeedDesc(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for name, tc := range map[string]struct{ n, maxNeed int }{
		"few":        {10, 5},
		"many small": {5000, 40},
		"one need":   {300, 1},
		"huge needs": {300, 1 << 20},
	} {
		items := make([]cutItem, tc.n)
		for i := range items {
			items[i] = cutItem{int32(i), int32(rng.IntN(tc.maxNeed))}
		}
		got := byNeedDesc(slices.Clone(items))
		if len(got) != len(items) {
			t.Fatalf("%s: %d items, want %d", name, len(got), len(items))
		}
		for i := 1; i < len(got); i++ {
			if got[i].need > got[i-1].need {
				t.Fatalf("%s: need %d after %d", name, got[i].need, got[i-1].need)
			}
		}
		ids := func(s []cutItem) []int32 {
			out := make([]int32, len(s))
			for i, x := range s {
				out[i] = x.id
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(ids(got), ids(items)) {
			t.Fatalf("%s: items lost or repeated", name)
		}
	}
}
