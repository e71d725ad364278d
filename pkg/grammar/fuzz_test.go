package grammar

import (
	"errors"
	"slices"
	"testing"
)

// The three compilers below take text straight from API requests
// (response_format, guided_regex, guided_grammar, tools), and the matcher
// then runs inside infer, where a panic would take the role down. The fuzz
// targets compile arbitrary text and, when it compiles, walk the grammar
// with a small vocabulary, checking at each step that FillMask allows
// exactly the tokens Accept takes (TestMaskMatchesAccept's oracle), that
// Rollback restores the mask, and that no step leaves nothing to sample.

// fuzzVocab has every byte as a token plus multi-byte tokens that cross
// JSON and regex boundaries.
func fuzzVocab() *Vocab {
	return byteVocab(`{"`, `":`, `",`, `"}`, `": "`, `ab`, `123`, `"a`, ` "`, `null`, `e+`, `0.`, `"]}`, `":[`, `true`, `\u00`, `ä`, `-1`)
}

// fuzzWalk takes at most maxFuzzSteps tokens of walk through g: each byte
// picks a token among those the mask allows (EOS included), so the walk
// stays inside the language whatever the bytes are.
const maxFuzzSteps = 24

func fuzzWalk(t *testing.T, g *Grammar, v *Vocab, walk []byte) {
	m := NewMatcher(g, v)
	bits := make([]uint64, v.MaskWords())
	again := make([]uint64, v.MaskWords())
	for step := 0; step < maxFuzzSteps && step < len(walk) && !m.Done(); step++ {
		n := m.FillMask(bits)
		if g.Err() != nil {
			return // a rule could not be built: the masks are too narrow by design (Matcher.Err)
		}
		var allowed []int32
		for id := int32(0); id < int32(v.Size()); id++ {
			inMask := maskAllows(bits, id)
			err := m.Accept(id)
			if (err == nil) != inMask {
				t.Fatalf("step %d: token %d %q: in mask %v, Accept error %v", step, id, v.TokenBytes(id), inMask, err)
			}
			if err == nil {
				allowed = append(allowed, id)
				if err := m.Rollback(1); err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, ErrRejected) {
				t.Fatalf("step %d: token %d refused with an unclassified error: %v", step, id, err)
			}
		}
		if n != len(allowed) {
			t.Fatalf("step %d: FillMask counted %d tokens, Accept took %d", step, n, len(allowed))
		}
		if m.FillMask(again) != n || !slices.Equal(bits, again) {
			t.Fatalf("step %d: the mask changed after probing every token and rolling back", step)
		}
		if len(allowed) == 0 {
			// infer ends such a request with "the grammar allows no token
			// here": a text the grammar took must lead somewhere.
			t.Fatalf("step %d: no token allowed, not even EOS", step)
		}
		if err := m.Accept(allowed[int(walk[step])%len(allowed)]); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

// fuzzSrcLimit keeps inputs to what a request's constraint plausibly is
// and each fuzz run short; the compilers' own budgets (maxDFAStates,
// maxDeterminizeWork, maxRegexRepeat) bound the rest.
const fuzzSrcLimit = 512

// fuzzCompiler fuzzes one compiler: seeds are its sources, each added
// with walk; whatever compiles is walked by fuzzWalk.
func fuzzCompiler(f *testing.F, seeds []string, walk []byte, compile func(string) (*Grammar, error)) {
	for _, s := range seeds {
		f.Add(s, walk)
	}
	v := fuzzVocab()
	f.Fuzz(func(t *testing.T, src string, walk []byte) {
		if len(src) > fuzzSrcLimit {
			return
		}
		g, err := compile(src)
		if err != nil {
			return
		}
		fuzzWalk(t, g, v, walk)
	})
}

func FuzzRegex(f *testing.F) {
	fuzzCompiler(f, []string{`[a-z]+@[a-z]+\.com`, `(ab|cd)*x{2,5}`, `\d{3}-\d{4}`, `(?i)yes|no`, `[^"\\]*`, `.{0,3}ä`, `a|`, `(a*)*b`},
		[]byte{0, 1, 2, 3, 250, 7}, CompileRegex)
}

func FuzzGBNF(f *testing.F) {
	fuzzCompiler(f, []string{
		"root ::= \"(\" root \")\" | \"x\"\n",
		"root ::= word (\" \" word){0,2}\nword ::= [a-z]+ # letters\n",
		"root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= list | \"x\" | \"(\" pair \")\"\npair ::= item \":\" item",
		"root ::= [^\\n]* \"\\n\" | \"\\u00e4\"?",
	}, []byte{3, 1, 4, 1, 5, 9, 2, 6}, func(src string) (*Grammar, error) {
		return CompileGBNF(src, Options{MaxDepth: 8})
	})
}

func FuzzJSONSchema(f *testing.F) {
	fuzzCompiler(f, []string{
		`{"type":"object","properties":{"a":{"type":"string"},"n":{"type":["integer","null"]},"l":{"type":"array","items":{"type":"number"}}}}`,
		`{"anyOf":[{"type":"string","maxLength":3},{"type":"object","additionalProperties":{"type":"integer"}}]}`,
		`{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"}`,
		`{"type":"string","pattern":"^a+b?$","format":"date"}`,
		`{"enum":[1,"x",null,{"a":[true]}]}`,
		`{"type":"integer","minimum":-5,"exclusiveMaximum":120,"multipleOf":3}`,
		`{"type":"object","patternProperties":{"^x-":{"const":1}},"required":["id"],"properties":{"id":{"type":"string","format":"uuid"}}}`,
	}, []byte{0, 9, 1, 8, 2, 7, 3, 6}, func(src string) (*Grammar, error) {
		return CompileJSONSchema([]byte(src), Options{MaxDepth: 8, MaxStringLength: 8, MaxItems: 4})
	})
}
