package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestDepthBoundNoDeadEnd: a recursive grammar sampled uniformly among the
// allowed tokens (a random-weight model) nests until Options.MaxDepth; at
// the bound the mask must still lead to a complete text (close the open
// structures, or open only what can be closed within the bound), never to
// a state where no token is allowed. Issue 18's e2e test met the dead end
// with the Llama-3 vocabulary at 20 levels of defs_expression.
func TestDepthBoundNoDeadEnd(t *testing.T) {
	expr, err := os.ReadFile("testdata/schemas/defs_expression.json")
	if err != nil {
		t.Fatal(err)
	}
	v := byteVocab(`{"kind":"binop","op":"+","left":`, `{"kind":"call","fn":"cos","args":[`, `"right":`, `},`, `]}`, `{"`, `<d`, `<s`, `[b`, `b{`)
	cases := []struct {
		name    string
		compile func(o Options) (*Grammar, error)
		depths  []int
	}{
		{"json schema recursion", func(o Options) (*Grammar, error) { return CompileJSONSchema(expr, o) }, []int{6, 9, 13, 24, 64}},
		{"json schema, eager rules", func(o Options) (*Grammar, error) { o.eagerRules = true; return CompileJSONSchema(expr, o) }, []int{9, 24}},
		{"gbnf nested lists", func(o Options) (*Grammar, error) {
			return CompileGBNF(`root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= list | "x" | "(" pair ")"
pair ::= item ":" item`, o)
		}, []int{2, 3, 5, 8, 20}},
		{"gbnf a call on the way back", func(o Options) (*Grammar, error) {
			// After its nested part, a still calls tail, which nests three
			// deep: a may open another "(" only while tail fits below it.
			return CompileGBNF(`root ::= a
a ::= "(" a ")" tail | "x"
tail ::= "<" deep ">"
deep ::= "[" deep "]" | "[" deep2 "]"
deep2 ::= "{" deep2 "}" | "y"`, o)
		}, []int{5, 6, 9, 16}},
		{"gbnf choices at the bound", func(o Options) (*Grammar, error) {
			// After "<", a byte picks a deep or a shallow way (the vocabulary's
			// "<d" token meets it inside one token, the walker's fast path);
			// after "[", b may be entered only while tail fits after it.
			return CompileGBNF(`root ::= a
a ::= "(" a ")" | "<" ("d" deep | "s") ">" | "[" (b tail | "s") "]" | "x"
b ::= "b" b | "b"
tail ::= "{" tail "}" | "{" t2 "}"
t2 ::= "~" t2 | "~"
deep ::= "{" deep "}" | "{" t2 "}"`, o)
		}, []int{3, 4, 5, 7, 12}},
	}
	for _, c := range cases {
		for _, depth := range c.depths {
			t.Run(fmt.Sprintf("%s/depth=%d", c.name, depth), func(t *testing.T) {
				g, err := c.compile(Options{MaxDepth: depth})
				if err != nil {
					t.Fatal(err)
				}
				bits := make([]uint64, v.MaskWords())
				rng := rand.New(rand.NewPCG(uint64(depth), 1))
				ended := 0
				for run := 0; run < 60; run++ {
					m := NewMatcher(g, v)
					var text []byte
					for step := 0; step < 3000 && !m.Done(); step++ {
						n := m.FillMask(bits)
						if n == 0 {
							t.Fatalf("dead end after %q", text)
						}
						tok := nthSet(bits, rng.IntN(n))
						if err := m.Accept(tok); err != nil {
							t.Fatalf("the mask allowed %d but Accept refuses: %v", tok, err)
						}
						text = append(text, v.TokenBytes(tok)...)
					}
					if m.Done() {
						ended++
					}
				}
				if ended == 0 {
					t.Error("no run ended")
				}
			})
		}
	}
}

// TestDepthBoundTooShallow: a grammar whose every text nests deeper than
// MaxDepth matches nothing under the bound, and says so at compile time.
func TestDepthBoundTooShallow(t *testing.T) {
	// Recursive rules stay rules (GBNF inlines the others): the shortest
	// text, <([x])>, takes root, a, b and c's frames.
	const src = `root ::= "<" a ">"
a ::= "(" a ")" | "(" b ")"
b ::= "[" b "]" | "[" c "]"
c ::= "{" c "}" | "x"`
	for _, c := range []struct {
		depth int
		ok    bool
	}{{1, false}, {3, false}, {4, true}, {64, true}} {
		g, err := CompileGBNF(src, Options{MaxDepth: c.depth})
		if c.ok {
			if err != nil {
				t.Fatalf("MaxDepth %d: %v", c.depth, err)
			}
			if m := NewMatcher(g, byteVocab()); m.AcceptBytes([]byte("<([x])>")) != nil || !m.IsAccepting() {
				t.Fatalf("MaxDepth %d: the shortest text is not matched", c.depth)
			}
			continue
		}
		if !errors.Is(err, ErrUnsatisfiable) || !strings.Contains(err.Error(), "MaxDepth") {
			t.Fatalf("MaxDepth %d: got %v, want an unsatisfiable grammar naming MaxDepth", c.depth, err)
		}
	}
}
