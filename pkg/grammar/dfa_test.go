package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestByteClasses: two bytes share a class exactly when every set holds
// both or neither, classes are numbered by their first byte, and reps[c]
// is the first byte of class c — checked against each byte's membership
// signature, for repeated, nested, empty, full and random sets.
func TestByteClasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byteSet {
		var out []byteSet
		for range n {
			var s byteSet
			switch rng.IntN(3) {
			case 0: // a range
				lo := byte(rng.IntN(256))
				s = rangeSet(lo, lo+byte(rng.IntN(256-int(lo))))
			case 1: // a few bytes
				for range 1 + rng.IntN(4) {
					s.add(byte(rng.IntN(256)))
				}
			default:
				s = byteSet{rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()}
			}
			out = append(out, s)
			if rng.IntN(4) == 0 {
				out = append(out, s) // a repeat, adjacent
			}
		}
		return out
	}
	all := byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	cases := map[string][]byteSet{
		"none":       nil,
		"empty set":  {{}},
		"full set":   {all},
		"nested":     {rangeSet('a', 'z'), rangeSet('a', 'f'), rangeSet('a', 'z'), bytesOf("c")},
		"keys":       {bytesOf("n"), bytesOf("a"), bytesOf("m"), bytesOf("e"), bytesOf("n"), bytesOf("a")},
		"random 3":   random(3),
		"random 40":  random(40),
		"random 400": random(400),
	}
	for name, sets := range cases {
		classOf, reps := byteClasses(slices.Clone(sets))
		sig := func(b int) string {
			out := make([]byte, len(sets))
			for i, s := range sets {
				if s.has(byte(b)) {
					out[i] = 1
				}
			}
			return string(out)
		}
		ids := map[string]int{}
		var want []byte
		for b := 0; b < 256; b++ {
			k := sig(b)
			id, ok := ids[k]
			if !ok {
				id = len(want)
				ids[k] = id
				want = append(want, byte(b))
			}
			if classOf[b] != id {
				t.Fatalf("%s: byte %d in class %d, want %d", name, b, classOf[b], id)
			}
		}
		if !slices.Equal(reps, want) {
			t.Fatalf("%s: reps %v, want %v", name, reps, want)
		}
	}
}
