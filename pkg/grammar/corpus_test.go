package grammar

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestCorpusRandomWalks samples generations from every corpus schema with
// the Llama-3 vocabulary, uniformly among the allowed tokens (a
// random-weight model at temperature 1): the mask never leaves a dead end,
// and every finished text validates under an independent validator
// (santhosh-tekuri/jsonschema, formats asserted).
func TestCorpusRandomWalks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short (the -race pass): this Llama-3-vocabulary test runs in the plain go test pass")
	}
	v := loadLlama3(t)
	corpus, err := LoadBenchCorpus("testdata/schemas")
	if err != nil {
		t.Fatal(err)
	}
	bits := make([]uint64, v.MaskWords())
	rng := rand.New(rand.NewPCG(7, 7))
	finished, runs := 0, 0
	for _, sc := range corpus {
		g, err := CompileJSONSchema(sc.Schema, Options{})
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		oracle := compileOracle(t, sc.Schema)
		for run := 0; run < 2; run++ {
			runs++
			m := NewMatcher(g, v)
			var text []byte
			for step := 0; step < 400 && !m.Done(); step++ {
				n := m.FillMask(bits)
				if n == 0 {
					t.Fatalf("%s: dead end after %q", sc.Name, text)
				}
				tok := nthSet(bits, rng.IntN(n))
				if err := m.Accept(tok); err != nil {
					t.Fatalf("%s: the mask allowed %d but Accept refuses: %v", sc.Name, tok, err)
				}
				text = append(text, v.TokenBytes(tok)...)
			}
			if !m.Done() {
				continue
			}
			finished++
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
			if err != nil {
				t.Errorf("%s: generated text is not JSON: %v\n%s", sc.Name, err, text)
				continue
			}
			if err := oracle.Validate(inst); err != nil {
				t.Errorf("%s: generated text does not validate: %#v\n%s", sc.Name, err, text)
			}
		}
	}
	t.Logf("%d of %d random generations finished within 400 tokens, all valid", finished, runs)
	if finished == 0 {
		t.Fatal("no generation finished: nothing was validated")
	}
}

func compileOracle(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// nthSet is the index of the k-th set bit.
func nthSet(bits []uint64, k int) int32 {
	for w, x := range bits {
		for x != 0 {
			if k == 0 {
				return int32(w*64 + trailingZeros(x))
			}
			k--
			x &= x - 1
		}
	}
	return -1
}

// BenchmarkCorpusCompile compiles the whole corpus in order through a
// fresh Cache per iteration: what bench-grammar's time to first mask pays
// in compile (the automata shared between schemas built once), without its
// first masks and without the garbage of its random runs.
// GOMAXPROCS=1 go test -run XXX -bench CorpusCompile -benchmem ./pkg/grammar
func BenchmarkCorpusCompile(b *testing.B) {
	corpus, err := LoadBenchCorpus("testdata/schemas")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := NewCache(len(corpus))
		for _, sc := range corpus {
			if _, err := c.Compile(Spec{Kind: KindJSONSchema, Text: string(sc.Schema)}, Options{}); err != nil {
				b.Fatalf("%s: %v", sc.Name, err)
			}
		}
	}
}
