package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = "w1"
	}
	return strings.Join(w, " ")
}

func writeShareGPT(t *testing.T, entries []any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sharegpt.json")
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func conv(turns ...string) map[string]any {
	var c []map[string]string
	for i, v := range turns {
		from := "human"
		if i%2 == 1 {
			from = "gpt"
		}
		c = append(c, map[string]string{"from": from, "value": v})
	}
	return map[string]any{"id": "x", "conversations": c}
}

// TestShareGPTFilters applies vLLM's rules; lengths include the BOS that
// tokenizer(prompt) adds.
func TestShareGPTFilters(t *testing.T) {
	path := writeShareGPT(t, []any{
		conv(words(10), words(20)),           // ok: 11 / 21
		conv(words(10)),                      // one turn: dropped
		conv(words(2), words(20)),            // prompt 3 tokens < 4: dropped
		conv(words(10), ""),                  // completion 1 token < 4: dropped unless output fixed
		conv(words(1024), words(5)),          // prompt 1025 > 1024: dropped
		conv(words(1000), words(1100)),       // total > 2048: dropped
		conv(words(5), words(7), "3rd", "x"), // ok: first two turns only
		map[string]any{"id": "no-conv"},      // no conversations: dropped
	})
	tok := newWordTok(100)
	got, err := LoadShareGPT(path, tok, 10, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	lens := map[[2]int]bool{}
	for _, s := range got {
		lens[[2]int{s.PromptLen, s.OutputLen}] = true
	}
	if len(got) != 2 || !lens[[2]int{11, 21}] || !lens[[2]int{6, 8}] {
		t.Fatalf("got %+v", got)
	}
	// A fixed output length lifts the completion-length filter and still
	// applies the total limit.
	fixed, err := LoadShareGPT(path, tok, 10, 1, 1100)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fixed {
		if s.OutputLen != 1100 || s.PromptLen+s.OutputLen > 2048 {
			t.Fatalf("fixed: %+v", s)
		}
	}
	if len(fixed) != 3 { // 11, 11 (empty completion now ok), 6
		t.Fatalf("fixed: got %d samples", len(fixed))
	}
	// n caps the sample count; the seed makes the choice repeatable.
	a, _ := LoadShareGPT(path, tok, 1, 7, 0)
	b, _ := LoadShareGPT(path, tok, 1, 7, 0)
	if len(a) != 1 || !reflect.DeepEqual(a[0], b[0]) {
		t.Fatalf("seeded sampling differs: %+v %+v", a, b)
	}
}

func TestShareGPTErrors(t *testing.T) {
	tok := newWordTok(10)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"object.json":    `{"conversations": []}`,
		"truncated.json": `[{"conversations": [`,
		"allshort.json":  `[{"conversations": [{"from":"human","value":"a"},{"from":"gpt","value":"b"}]}]`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadShareGPT(p, tok, 5, 0, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := LoadShareGPT(filepath.Join(dir, "missing.json"), tok, 5, 0, 0); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := LoadShareGPT(filepath.Join(dir, "object.json"), nil, 5, 0, 0); err == nil {
		t.Error("no tokenizer: no error")
	}
}

// growTok is a test double whose decode/encode round trip grows at the
// end of the ids only, as a cut byte-fallback sequence does with a real
// tokenizer: ids ending in an odd id decode with a partial character
// ("_x_y") that encodes to two tokens more.
type growTok struct{ *wordTok }

func (g growTok) Decode(ids []int32, skip bool) string {
	s := g.wordTok.Decode(ids, skip)
	if len(ids) > 0 && ids[len(ids)-1]%2 == 1 {
		s += "_x_y"
	}
	return s
}

func (g growTok) Encode(text string, addSpecial bool) []int32 {
	return g.wordTok.Encode(strings.ReplaceAll(text, "_", " "), addSpecial)
}

// TestRandomSamplesFit: prompts never encode longer than the drawn input
// length, however the tokenizer's round trip grows (before, stories260K's
// tokenizer turned 16-token prompts into up to 44 tokens).
func TestRandomSamplesFit(t *testing.T) {
	tok := growTok{newWordTok(1000)}
	got, err := RandomSamples(tok, 100, 16, 8, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		if s.PromptLen > 16 || s.PromptLen < 12 || s.PromptLen != len(tok.Encode(s.Prompt, false)) {
			t.Fatalf("sample %d: PromptLen %d (encodes to %d), want 12..16", i, s.PromptLen, len(tok.Encode(s.Prompt, false)))
		}
	}
}

func TestRandomSamples(t *testing.T) {
	tok := newWordTok(1000)
	got, err := RandomSamples(tok, 200, 100, 20, 0.5, 42)
	if err != nil {
		t.Fatal(err)
	}
	minIn, maxIn := 1<<30, 0
	for _, s := range got {
		if s.PromptLen != len(tok.Encode(s.Prompt, false)) {
			t.Fatalf("PromptLen %d but the prompt encodes to %d", s.PromptLen, len(tok.Encode(s.Prompt, false)))
		}
		if strings.Contains(s.Prompt, "<s>") {
			t.Fatal("a special token leaked into a random prompt")
		}
		if s.OutputLen < 10 || s.OutputLen > 30 {
			t.Fatalf("output len %d outside [10, 30]", s.OutputLen)
		}
		minIn, maxIn = min(minIn, s.PromptLen), max(maxIn, s.PromptLen)
	}
	if minIn < 50 || maxIn > 150 || maxIn-minIn < 50 {
		t.Fatalf("prompt lengths span [%d, %d], want a spread within [50, 150]", minIn, maxIn)
	}
	again, _ := RandomSamples(tok, 200, 100, 20, 0.5, 42)
	if !reflect.DeepEqual(again[17], got[17]) {
		t.Fatal("same seed, different prompts")
	}
	fixed, _ := RandomSamples(tok, 5, 64, 8, 0, 1)
	for _, s := range fixed {
		if s.PromptLen != 64 || s.OutputLen != 8 {
			t.Fatalf("range ratio 0: %+v", s)
		}
	}
	for _, bad := range []struct {
		in, out int
		r       float64
	}{{0, 1, 0}, {1, 0, 0}, {1, 1, 1}, {1, 1, -0.1}} {
		if _, err := RandomSamples(tok, 1, bad.in, bad.out, bad.r, 0); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := RandomSamples(nil, 1, 1, 1, 0, 0); err == nil {
		t.Error("no tokenizer accepted")
	}
}

func TestArrivals(t *testing.T) {
	if a := Arrivals(5, math.Inf(1), 1, 0); a[4] != 0 {
		t.Fatalf("inf rate: %v", a)
	}
	for _, tc := range []struct{ rate, burst float64 }{{10, 1}, {10, 0.5}, {4, 3}} {
		const n = 20000
		a := Arrivals(n, tc.rate, tc.burst, 9)
		if a[0] != 0 {
			t.Fatal("first request not at 0")
		}
		var sum, sq float64
		for i := 1; i < n; i++ {
			g := (a[i] - a[i-1]).Seconds()
			if g < 0 {
				t.Fatal("arrivals go backwards")
			}
			sum += g
			sq += g * g
		}
		mean := sum / (n - 1)
		cv := math.Sqrt(sq/(n-1)-mean*mean) / mean
		// Gamma(k, 1/(rate k)): mean 1/rate, coefficient of variation 1/sqrt(k).
		if math.Abs(mean*tc.rate-1) > 0.04 || math.Abs(cv*math.Sqrt(tc.burst)-1) > 0.05 {
			t.Errorf("rate %g burstiness %g: mean gap %.4f s, cv %.3f", tc.rate, tc.burst, mean, cv)
		}
	}
	a, b := Arrivals(10, 3, 1, 5), Arrivals(10, 3, 1, 5)
	if a[9] != b[9] || a[9] <= 0 || a[9] > 30*time.Second {
		t.Fatalf("seeded arrivals: %v vs %v", a[9], b[9])
	}
}
