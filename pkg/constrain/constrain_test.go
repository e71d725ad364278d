package constrain

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/grammar"
)

// toyTokens is a small vocabulary: single bytes, a few multi-byte tokens,
// the thinking and tool-call tags, and EOS (special, id eos).
type toyTokens struct{ toks []string }

const eos = 0

func newToy() *toyTokens {
	t := &toyTokens{toks: []string{"</s>", "<think>", "</think>", "<tool_call>", "{\"", "\":", "</think>\n\n{", "ab"}}
	for c := 0x20; c < 0x7f; c++ {
		t.toks = append(t.toks, string(rune(c)))
	}
	t.toks = append(t.toks, "\n")
	return t
}

func (t *toyTokens) VocabSize() int             { return len(t.toks) }
func (t *toyTokens) TokenBytes(id int32) []byte { return []byte(t.toks[id]) }
func (t *toyTokens) IsSpecial(id int32) bool    { return id == eos }
func (t *toyTokens) EOS() int32                 { return eos }
func (t *toyTokens) id(s string) int32 {
	for i, x := range t.toks {
		if x == s {
			return int32(i)
		}
	}
	panic(s)
}
func (t *toyTokens) TokenID(s string) (int32, bool) {
	for i, x := range t.toks {
		if x == s {
			return int32(i), true
		}
	}
	return -1, false
}

const schema = `{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":99},"b":{"enum":["x","y"]}},"required":["a","b"],"additionalProperties":false}`

// run drives a processor like the engine does: free tokens are forced from
// prefix, then tokens are drawn uniformly among those the mask leaves.
func run(t *testing.T, p *Processor, tt *toyTokens, prefix []string, rng *rand.Rand, extra int) string {
	t.Helper()
	var out strings.Builder
	row := make([]float32, tt.VocabSize()+extra)
	for step := 0; step < 400; step++ {
		for i := range row {
			row[i] = 0
		}
		if err := p.Process(row); err != nil {
			t.Fatal(err)
		}
		var tok int32
		if step < len(prefix) {
			tok = tt.id(prefix[step])
		} else {
			var ok []int32
			for i, v := range row {
				if !math.IsInf(float64(v), -1) && i < tt.VocabSize() {
					ok = append(ok, int32(i))
				}
			}
			if p.ph == pActive && !math.IsInf(float64(row[len(row)-1]), -1) {
				t.Fatal("an id past the tokenizer's vocabulary is allowed")
			}
			if len(ok) == 0 {
				t.Fatalf("no token allowed after %q", out.String())
			}
			tok = ok[rng.IntN(len(ok))]
		}
		if err := p.Accept(tok); err != nil {
			t.Fatalf("after %q: %v", out.String(), err)
		}
		if tok == eos {
			return out.String()
		}
		out.WriteString(tt.toks[tok])
	}
	t.Fatalf("no end after 400 tokens: %q", out.String())
	return ""
}

func checkAnswer(t *testing.T, answer string) {
	t.Helper()
	var v struct {
		A *int    `json:"a"`
		B *string `json:"b"`
	}
	dec := json.NewDecoder(strings.NewReader(answer))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.A == nil || v.B == nil || *v.A < 0 || *v.A > 99 || (*v.B != "x" && *v.B != "y") {
		t.Fatalf("answer %q does not validate: %v", answer, err)
	}
}

func TestProcessor(t *testing.T) {
	tt := newToy()
	f := NewFactory(tt, []int32{eos})
	js := grammar.Spec{Kind: grammar.KindJSONSchema, Text: schema}
	for _, tc := range []struct {
		name   string
		spec   Spec
		prefix []string
		cut    string // the answer is what follows this in the output
	}{
		{"at once", Spec{Grammar: js}, nil, ""},
		{"open thinking", Spec{Grammar: js, ThinkOpen: true}, []string{"a", "b", "<", "/", "t", "h", "i", "n", "k", ">"}, "</think>"},
		{"tag and answer in one token", Spec{Grammar: js, ThinkOpen: true}, []string{"a", "</think>\n\n{"}, "</think>\n\n"},
		{"optional thinking taken", Spec{Grammar: js, ThinkOptional: true}, []string{"<think>", "h", "m", "</think>"}, "</think>"},
		{"optional thinking not taken", Spec{Grammar: js, ThinkOptional: true}, nil, ""},
		{"trigger", Spec{Grammar: js, Trigger: "<tool_call>"}, []string{"o", "k", "<tool_call>"}, "<tool_call>"},
		{"trigger split over tokens", Spec{Grammar: js, Trigger: "<tool_call>"}, strings.Split("<tool_call>", ""), "<tool_call>"},
		{"thinking then trigger", Spec{Grammar: js, ThinkOpen: true, Trigger: "<tool_call>"}, []string{"<tool_call>", "</think>", "z", "<tool_call>"}, "z<tool_call>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk, err := f.New(tc.spec, tt.VocabSize()+5)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 7))
			for range 30 {
				p, err := mk()
				if err != nil {
					t.Fatal(err)
				}
				out := run(t, p, tt, tc.prefix, rng, 5)
				answer, cut := out, tc.cut
				if tc.spec.ThinkOptional && strings.HasPrefix(out, "<think>") {
					cut = "</think>" // the model took the optional block
				}
				if cut != "" {
					i := strings.LastIndex(out, cut)
					if i < 0 && tc.spec.ThinkOptional {
						continue // the model ended inside its thinking block: no answer
					}
					if i < 0 {
						t.Fatalf("output %q lacks %q", out, cut)
					}
					answer = out[i+len(cut):]
				}
				checkAnswer(t, answer)
			}
		})
	}
}

// TestReplay: a processor rebuilt by accepting the same tokens gives the
// same masks (the engine's resume and eviction path).
func TestReplay(t *testing.T) {
	tt := newToy()
	f := NewFactory(tt, []int32{eos})
	mk, err := f.New(Spec{Grammar: grammar.Spec{Kind: grammar.KindJSONSchema, Text: schema}, ThinkOptional: true}, tt.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := mk()
	var toks []int32
	rng := rand.New(rand.NewPCG(3, 4))
	row := make([]float32, tt.VocabSize())
	for len(toks) < 12 {
		clear(row)
		if err := p.Process(row); err != nil {
			t.Fatal(err)
		}
		var ok []int32
		for i, v := range row {
			if !math.IsInf(float64(v), -1) && i != eos {
				ok = append(ok, int32(i))
			}
		}
		tok := ok[rng.IntN(len(ok))]
		if err := p.Accept(tok); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
		q, _ := mk()
		for _, x := range toks {
			if err := q.Accept(x); err != nil {
				t.Fatal(err)
			}
		}
		a, b := make([]float32, len(row)), make([]float32, len(row))
		if err := p.Process(a); err != nil {
			t.Fatal(err)
		}
		if err := q.Process(b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("after %v: token %d masked differently on replay", toks, i)
			}
		}
	}
}

func TestRefused(t *testing.T) {
	f := NewFactory(newToy(), []int32{eos})
	_, err := f.New(Spec{Grammar: grammar.Spec{Kind: grammar.KindJSONSchema, Text: `{"dependencies":{"a":["b"]}}`}}, 200)
	if err == nil || !strings.Contains(err.Error(), "dependencies") {
		t.Fatalf("err %v", err)
	}
	s := Spec{Grammar: grammar.Spec{Kind: grammar.KindRegex, Text: "a+"}, Trigger: "<tool_call>", ThinkOpen: true}
	back, err := ParseSpec(s.Marshal())
	if err != nil || back.Grammar.Text != "a+" || back.Trigger != s.Trigger || !back.ThinkOpen {
		t.Fatalf("round trip %+v %v", back, err)
	}
}
