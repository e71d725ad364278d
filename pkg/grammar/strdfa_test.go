package grammar

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuotedRepeatIsQuotedOfRepeat: the direct construction has the same
// classes, tables, acceptance, identity and counter as quoting the content.
func TestQuotedRepeatIsQuotedOfRepeat(t *testing.T) {
	char, err := leafDFA(jsonChar(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ min, max int }{{0, 0}, {0, 1}, {1, 1}, {0, 7}, {3, 7}, {7, 7}, {2, 128}, {0, 500}} {
		content, err := repeatChar(char, b.min, b.max)
		if err != nil {
			t.Fatal(err)
		}
		want := quoted(content)
		got, err := quotedRepeat(char, b.min, b.max)
		if err != nil {
			t.Fatal(err)
		}
		if got.cls != want.cls || got.ncls != want.ncls || !slices.Equal(got.trans, want.trans) ||
			!slices.Equal(got.accept, want.accept) || got.hash != want.hash || got.leaf != want.leaf ||
			*got.counted != *want.counted || !slices.Equal(got.plain, want.plain) || !slices.Equal(got.hasBytes, want.hasBytes) {
			t.Errorf("{%d,%d}: quotedRepeat differs from quoted(repeatChar)", b.min, b.max)
		}
	}
}

// TestTruncatedTableSameAsMap: numbering the layered states in the dense
// table or in the map gives the same automaton.
func TestTruncatedTableSameAsMap(t *testing.T) {
	for _, c := range []struct {
		pattern  string
		maxChars int
	}{{"^(SELECT|WITH) ", 64}, {"^[a-z]+(-[a-z0-9]+)*$", 40}, {"é+x", 9}, {".*", 0}} {
		d := patternContent(t, c.pattern)
		dense, err := truncatedTable(d, c.maxChars, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		sparse, err := truncatedTable(d, c.maxChars, 0)
		if err != nil {
			t.Fatal(err)
		}
		if dense.states() < 2 && c.maxChars > 0 {
			t.Errorf("%q: %d states", c.pattern, dense.states())
		}
		if dense.cls != sparse.cls || dense.ncls != sparse.ncls || !slices.Equal(dense.trans, sparse.trans) ||
			!slices.Equal(dense.accept, sparse.accept) || !slices.Equal(dense.cut.state, sparse.cut.state) ||
			!slices.Equal(dense.cut.left, sparse.cut.left) {
			t.Errorf("%q max %d: the dense table's automaton differs from the map's", c.pattern, c.maxChars)
		}
	}
}

// TestRepeatCharRows: repeatChar's shifted layer template gives every
// state the row worked out state by state from the definition.
func TestRepeatCharRows(t *testing.T) {
	char, err := leafDFA(jsonChar(), nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, ncls := char.states(), char.ncls
	for _, b := range []struct{ min, max int }{{0, 0}, {0, 1}, {1, 1}, {0, 7}, {3, 7}, {7, 7}, {2, 128}} {
		d, err := repeatChar(char, b.min, b.max)
		if err != nil {
			t.Fatal(err)
		}
		if d.states() != (b.max+1)*nc || d.ncls != ncls || d.cls != char.cls {
			t.Fatalf("{%d,%d}: %d states, %d classes", b.min, b.max, d.states(), d.ncls)
		}
		for q := 0; q < d.states(); q++ {
			// State (i, c): i characters done, c inside the next one.
			i, c := q/nc, q%nc
			for k := 0; k < ncls; k++ {
				want := int32(-1)
				switch u := char.trans[c*ncls+k]; {
				case u < 0 || char.accept[c] || i == b.max: // at max no character may start
				case char.accept[u]:
					want = int32((i + 1) * nc)
				default:
					want = int32(i*nc) + int32(u)
				}
				if got := int32(d.trans[q*ncls+k]); got != want {
					t.Fatalf("{%d,%d}: state %d class %d goes to %d, want %d", b.min, b.max, q, k, got, want)
				}
			}
			if want := c == 0 && i >= b.min; d.accept[q] != want {
				t.Fatalf("{%d,%d}: state %d accepts %v", b.min, b.max, q, d.accept[q])
			}
		}
	}
}

// TestLayeredFlags: the bounded strings' flags, worked out from one layer,
// are what scanning every row gives.
func TestLayeredFlags(t *testing.T) {
	char, err := leafDFA(jsonChar(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ min, max int }{{0, 0}, {0, 1}, {1, 1}, {0, 7}, {3, 7}, {7, 7}, {2, 128}} {
		for name, build := range map[string]func(*dfa, int, int) (*dfa, error){"repeatChar": repeatChar, "quotedRepeat": quotedRepeat} {
			d, err := build(char, b.min, b.max)
			if err != nil {
				t.Fatal(err)
			}
			leaf, plain, has := d.leaf, slices.Clone(d.plain), slices.Clone(d.hasBytes)
			d.flags()
			if leaf != d.leaf || !slices.Equal(plain, d.plain) || !slices.Equal(has, d.hasBytes) {
				t.Errorf("%s{%d,%d}: layered flags differ from the rows' (leaf %v/%v, plain equal %v, hasBytes equal %v)",
					name, b.min, b.max, leaf, d.leaf, slices.Equal(plain, d.plain), slices.Equal(has, d.hasBytes))
			}
		}
	}
}

// TestShiftRows: four entries at a time is the same as one at a time, at
// every length, at offsets that leave the words unaligned, for targets up
// to the largest state and -1.
func TestShiftRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n, off int
		base   int16
	}{
		{0, 0, 5}, {1, 0, 5}, {3, 1, 7}, {4, 0, 0}, {5, 3, 1}, {8, 2, 100}, {9, 1, maxDFAStates / 2},
		{1000, 0, 1}, {1001, 3, maxDFAStates / 2}, {4096, 1, 2},
	} {
		src := make([]int16, tc.n+tc.off)[tc.off:]
		for j := range src {
			switch rng.IntN(3) {
			case 0:
				src[j] = -1
			case 1:
				src[j] = int16(maxDFAStates/2 + 1)
			default:
				src[j] = int16(rng.IntN(maxDFAStates/2 + 2))
			}
		}
		dst := make([]int16, tc.n+2*tc.off+1)[2*tc.off+1:]
		shiftRows(dst, src, tc.base)
		for j, s := range src {
			want := s
			if s >= 0 {
				want = s + tc.base
			}
			if dst[j] != want {
				t.Fatalf("n=%d off=%d base=%d: entry %d is %d, want %d (source %d)", tc.n, tc.off, tc.base, j, dst[j], want, s)
			}
		}
	}
}

// TestStateSets: interned sets are found again by content, through the
// table's growth, and new ones get the next id.
func TestStateSets(t *testing.T) {
	var found stateSets
	var want [][]int32
	for i := range 1000 {
		set := []int32{int32(i % 7), int32(i), int32(i + 1000)}
		if i%3 == 0 {
			set = set[:1+i%2] // short sets that repeat
		}
		id, h, ok := found.find(set)
		k := slices.IndexFunc(want, func(w []int32) bool { return slices.Equal(w, set) })
		if ok != (k >= 0) || (ok && int(id) != k) {
			t.Fatalf("set %v: find = %d, %v; want index %d", set, id, ok, k)
		}
		if !ok {
			if int(id) != len(want) {
				t.Fatalf("set %v: new id %d, want %d", set, id, len(want))
			}
			found.insert(set, h)
			want = append(want, slices.Clone(set))
		}
	}
	for i, w := range want {
		if !slices.Equal(found.set(i), w) {
			t.Fatalf("set %d is %v, want %v", i, found.set(i), w)
		}
	}
}

// TestShortestChars: the fewest characters of a text the content automaton
// accepts, counted as truncated counts them (a multi-byte UTF-8 character
// is one; an escape is its bytes), and agreeing with toAccept's start.
func TestShortestChars(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    int
	}{
		{"^a{200,}$", 200},
		{"^(abc|x)y$", 2},
		{"^é{3}$", 3},
		{"^(é|ab)$", 1},
		{"^$", 0},
		{"^[0-9]{4}-[0-9]{2}$", 7},
	} {
		d := patternContent(t, c.pattern)
		if got := d.shortestChars(); got != c.want {
			t.Errorf("%q: shortestChars %d, want %d", c.pattern, got, c.want)
		}
		if got := d.toAccept()[0]; int(got) != c.want {
			t.Errorf("%q: toAccept %d, want %d", c.pattern, got, c.want)
		}
	}
	empty := &dfa{ncls: 1, trans: []int16{-1}, accept: []bool{false}}
	if got := empty.shortestChars(); got != -1 {
		t.Errorf("an automaton accepting nothing: %d, want -1", got)
	}
}

// patternContent is the content automaton of the strings in which pattern
// matches (searched, as JSON Schema's pattern is).
func patternContent(t *testing.T, pattern string) *dfa {
	t.Helper()
	f, err := regexFrag(pattern, true, false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := leafDFA(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
