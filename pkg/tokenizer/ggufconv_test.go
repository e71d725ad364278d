package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
)

// vocabFromHF builds a GGUFVocab from a tokenizer.json: tokens by id,
// "a b" merges, added tokens as control / user-defined. The file has no
// SentencePiece scores, so a piece scores minus the rank of the merge that
// makes it: merging by score then follows the merge order.
func vocabFromHF(t *testing.T, path, ggufModel, pre string) GGUFVocab {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("fixture %s: %v", path, err), nil)
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

// TestGGUFFileGemma3GptOss: Gemma 3's and gpt-oss's vocabularies written
// into GGUF files with the tokenizer.ggml.* keys llama.cpp's converter
// writes for them (gemma3: SentencePiece "llama" without the space prefix;
// gpt-oss: "gpt2" BPE with pre-tokenizer "gpt-4o") and read back through
// FromGGUFFile encode the whole corpus to the Hugging Face reference ids.
func TestGGUFFileGemma3GptOss(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "tokenizers")
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(t, filepath.Join(root, "corpus.json"), &corpus)
	var ref map[string][][]int32
	readJSON(t, filepath.Join(root, "reference_ids_gemma3_gptoss.json"), &ref)
	for _, c := range []struct{ name, model, pre string }{{"gemma3", "llama", ""}, {"gptoss", "gpt2", "gpt-4o"}} {
		t.Run(c.name, func(t *testing.T) {
			v := vocabFromHF(t, filepath.Join(root, c.name, "tokenizer.json"), c.model, c.pre)
			w := gguf.NewWriter()
			w.Set("general.architecture", c.name)
			w.Set("tokenizer.ggml.model", c.model)
			if c.pre != "" {
				w.Set("tokenizer.ggml.pre", c.pre)
			}
			w.Set("tokenizer.ggml.tokens", v.Tokens)
			w.Set("tokenizer.ggml.token_type", v.Types)
			if c.model == "llama" {
				w.Set("tokenizer.ggml.scores", v.Scores)
				w.Set("tokenizer.ggml.add_space_prefix", false)
			} else {
				w.Set("tokenizer.ggml.merges", v.Merges)
			}
			path := filepath.Join(t.TempDir(), c.name+".gguf")
			if err := w.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tk, err := FromGGUFFile(f)
			if err != nil {
				t.Fatal(err)
			}
			mismatches := 0
			for i, text := range corpus.Texts {
				if got := tk.Encode(text, false); !slices.Equal(got, ref[c.name][i]) {
					mismatches++
					if mismatches <= 3 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), got, ref[c.name][i])
					}
				}
			}
			if len(corpus.Texts) < 1000 || len(ref[c.name]) != len(corpus.Texts) {
				t.Fatalf("%d texts, %d reference rows", len(corpus.Texts), len(ref[c.name]))
			}
			t.Logf("%s from GGUF: %d texts, %d mismatches", c.name, len(corpus.Texts), mismatches)
		})
	}
}

// TestHFGemma3GptOss: the same two vocabularies from tokenizer.json (with
// their tokenizer_config.json) encode the corpus to the reference ids.
func TestHFGemma3GptOss(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "tokenizers")
	var corpus struct {
		Texts []string `json:"texts"`
	}
	readJSON(t, filepath.Join(root, "corpus.json"), &corpus)
	var ref map[string][][]int32
	readJSON(t, filepath.Join(root, "reference_ids_gemma3_gptoss.json"), &ref)
	for _, name := range []string{"gemma3", "gptoss"} {
		t.Run(name, func(t *testing.T) {
			tk, err := LoadDir(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			mismatches := 0
			for i, text := range corpus.Texts {
				if got := tk.Encode(text, false); !slices.Equal(got, ref[name][i]) {
					mismatches++
					if mismatches <= 3 {
						t.Errorf("text %d %q:\n got %v\nwant %v", i, clip(text), got, ref[name][i])
					}
				}
			}
			t.Logf("%s from tokenizer.json: %d texts, %d mismatches", name, len(corpus.Texts), mismatches)
		})
	}
}
