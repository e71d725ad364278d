package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// vocabFromHF builds a GGUFVocab from a tokenizer.json: tokens by id,
// "a b" merges, added tokens as control / user-defined. The file has no
// SentencePiece scores, so a piece scores minus the rank of the merge that
// makes it: merging by score then follows the merge order.
func vocabFromHF(t *testing.T, path, ggufModel, pre string) GGUFVocab {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("fixture %s: %v", path, err)
	}
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	model, err := parseModel(f.Model)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := parseMerges(model.Merges)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range model.Vocab {
		n = max(n, int(id)+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, int(a.ID)+1)
	}
	v := GGUFVocab{Model: ggufModel, Pre: pre, Tokens: make([]string, n), Types: make([]int32, n),
		Scores: make([]float32, n), BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	for s, id := range model.Vocab {
		v.Tokens[id], v.Types[id] = s, TokenNormal
		if _, ok := parseByteToken(s); ok && ggufModel == "llama" {
			v.Types[id] = TokenByte
		}
	}
	for _, a := range f.AddedTokens {
		v.Tokens[a.ID], v.Types[a.ID] = a.Content, TokenUserDefined
		if a.Special {
			v.Types[a.ID] = TokenControl
		}
	}
	for rank, p := range pairs {
		v.Merges = append(v.Merges, p[0]+" "+p[1])
		if id, ok := model.Vocab[p[0]+p[1]]; ok && ggufModel == "llama" {
			v.Scores[id] = -float32(rank)
		}
	}
	v.AddSpacePrefix = ggufModel == "llama"
	return v
}

// TestGGUFVocabMatchesReference runs the GGUF code paths (gpt2 BPE with the
// pre-tokenizer chosen by name, llama SentencePiece by score) on vocabularies
// converted from the fixture tokenizers, against the HF reference ids.
func TestGGUFVocabMatchesReference(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "tokenizers")
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(t, filepath.Join(root, "corpus.json"), &corpus)
	var ref map[string][][]int32
	readJSON(t, filepath.Join(root, "reference_ids.json"), &ref)
	cases := []struct {
		name, model, pre string
		nfcOnly          bool // the HF tokenizer normalizes to NFC, GGUF does not
	}{
		{"llama3", "gpt2", "llama-bpe", false},
		{"qwen3", "gpt2", "qwen2", true},
		{"mistral", "llama", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := FromGGUF(vocabFromHF(t, filepath.Join(root, c.name, "tokenizer.json"), c.model, c.pre))
			if err != nil {
				t.Fatal(err)
			}
			checked, mismatches := 0, 0
			for i, text := range corpus.Texts {
				if c.nfcOnly && !norm.NFC.IsNormalString(text) {
					continue
				}
				checked++
				if got := tk.Encode(text, false); !slices.Equal(got, ref[c.name][i]) {
					mismatches++
					if mismatches <= 3 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), got, ref[c.name][i])
					}
				}
			}
			t.Logf("%s as GGUF %s/%q: %d texts, %d mismatches", c.name, c.model, c.pre, checked, mismatches)
		})
	}
}
