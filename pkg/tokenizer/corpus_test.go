package tokenizer

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReferenceCorpus checks Encode against ids produced by the Hugging Face
// reference implementation for every corpus text and all three tokenizers.
func TestReferenceCorpus(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "tokenizers")
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(t, filepath.Join(root, "corpus.json"), &corpus)
	var ref map[string][][]int32
	readJSON(t, filepath.Join(root, "reference_ids.json"), &ref)

	for _, name := range []string{"llama3", "qwen3", "mistral"} {
		t.Run(name, func(t *testing.T) {
			tk := loadFixture(t, name)
			want := ref[name]
			if len(want) != len(corpus.Texts) {
				t.Fatalf("reference has %d entries for %d texts", len(want), len(corpus.Texts))
			}
			start := time.Now()
			mismatches, roundTrips := 0, 0
			for i, text := range corpus.Texts {
				got := tk.Encode(text, false)
				if !slices.Equal(got, want[i]) {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), clip(fmt.Sprint(got)), clip(fmt.Sprint(want[i])))
					}
				}
				if tk.Decode(want[i], false) == text {
					roundTrips++
					if back := tk.Decode(got, false); back != text {
						t.Errorf("text %d: decode(encode(x)) = %q, want %q", i, clip(back), clip(text))
					}
				}
			}
			t.Logf("%s: %d texts, %d mismatches, %d round-trip, encode %v",
				name, len(corpus.Texts), mismatches, roundTrips, time.Since(start))
		})
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
