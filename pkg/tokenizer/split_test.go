package tokenizer

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFastPatternsMatchRegex checks the hand-written scanners against a
// backtracking regex engine running the original patterns.
func TestFastPatternsMatchRegex(t *testing.T) {
	texts := []string{
		"", " ", "  ", "a", "I'm sure they'll've done it; she's, we're, you'd, THEY'RE, It'S",
		"Numbers: 1234567890 3.14159 1,000,000 -42", "   leading spaces and trailing   ",
		"tabs\tand\nnewlines\n\n\nand\r\ncrlf", "multiple     spaces    between", "  \n  x", " \u00a0\u3000x",
		"def f(x):\n    return x**2  # comment\n", "'s 't 're 've 'm 'll 'd ’s '", "$$$ %%% ^^^ ...\n\n",
		"混合English和中文mixed文本123数字", "emoji 😀😃😄 👍🏽 ❤️ ✨🎉", "a\u0301e\u0301 combining",
	}
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(t, filepath.Join(sharedDir(t), "fixtures", "tokenizers", "corpus.json"), &corpus)
	texts = append(texts, corpus.Texts[:300]...)
	texts = append(texts, randomTexts(500)...)

	for _, pat := range []string{patGPT2, patLlama3, patQwen2, patLlama3CPP} {
		fast, err := newRegexFinder(pat)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fast.(fastFinder); !ok {
			t.Fatalf("pattern %q did not get a fast scanner", pat)
		}
		slow, err := compileSlowFinder(pat)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, s := range texts {
			got, want := fast.matches(nil, s), slow.matches(nil, s)
			if !slices.Equal(got, want) && bad < 5 {
				bad++
				t.Errorf("pattern %.20q… on %q:\n fast %v\n  re  %v", pat, clip(s), pieces(s, got), pieces(s, want))
			}
		}
	}
}

// compileSlowFinder bypasses the fast path.
func compileSlowFinder(pattern string) (matchFinder, error) {
	f, err := newRegexFinder(pattern + "|(?!)") // same language, no longer a known pattern
	if err != nil {
		return nil, err
	}
	if _, ok := f.(regexFinder); !ok {
		return nil, err
	}
	return f, nil
}

func pieces(s string, m [][2]int) []string {
	out := make([]string, len(m))
	for i, r := range m {
		out[i] = s[r[0]:r[1]]
	}
	return out
}

// randomTexts mixes the character classes the patterns distinguish.
func randomTexts(n int) []string {
	alphabet := []string{"a", "Z", "é", "ж", "中", "ア", "٣", "7", "²", "Ⅻ", " ", " ", "  ", "\t", "\n", "\r",
		"\u00a0", "\u3000", "\u2003", "'", "'s", "'T", "'re", "'LL", "'d", "'x", ".", ",", "!", "$", "😀", "\u0301",
		"\u200d", "\u0380", "-", "_", "\u00ad"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := rng.IntN(24); k > 0; k-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

func TestApplySplitBehaviors(t *testing.T) {
	const s = "the-final--countdown"
	dash := literalFinder{"-"}
	tests := []struct {
		behavior splitBehavior
		invert   bool
		want     []string
	}{
		{splitRemoved, false, []string{"the", "final", "countdown"}},
		{splitIsolated, false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{splitMergedWithPrevious, false, []string{"the-", "final-", "-", "countdown"}},
		{splitMergedWithNext, false, []string{"the", "-final", "-", "-countdown"}},
		{splitContiguous, false, []string{"the", "-", "final", "--", "countdown"}},
		{splitRemoved, true, []string{"-", "-", "-"}},
	}
	for _, tc := range tests {
		if got := applySplit(nil, s, dash, tc.behavior, tc.invert); !slices.Equal(got, tc.want) {
			t.Errorf("behavior %d invert %v: got %q, want %q", tc.behavior, tc.invert, got, tc.want)
		}
	}
}
