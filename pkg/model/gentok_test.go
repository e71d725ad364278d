package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// TestGenerateWithTokenizer: gen-model --tokenizer writes a model of the
// tokenizer's vocabulary size that stops on the template's end of turn and
// loads with that tokenizer and chat template.
func TestGenerateWithTokenizer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vocab int
		eos   any
	}{
		{"llama3", 128256, []any{128001.0, 128009.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(modelsDir(t), "..", "fixtures", "tokenizers", tc.name)
			dir := t.TempDir()
			o := GenOptions{Arch: "llama", Hidden: 32, Layers: 1, Heads: 2, FFN: 32, DType: "f16", Seed: 1, Tied: true, Tokenizer: src}
			if err := GenerateHF(dir, o); err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			b, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err == nil {
				err = json.Unmarshal(b, &cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg["vocab_size"] != float64(tc.vocab) || !reflect.DeepEqual(cfg["eos_token_id"], tc.eos) {
				t.Fatalf("vocab_size %v eos %v", cfg["vocab_size"], cfg["eos_token_id"])
			}
			tok, err := tokenizer.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tok.VocabSize() != tc.vocab || tok.ChatTemplate() == "" {
				t.Fatalf("tokenizer: vocab %d, template %d bytes", tok.VocabSize(), len(tok.ChatTemplate()))
			}
			m, err := Load(dir, LoadOptions{})
			if err != nil {
				t.Fatalf("load the generated model: %v", err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := ggufWriter(GenOptions{Arch: "llama", Tokenizer: "x"}); err == nil {
		t.Error("GGUF with --tokenizer accepted")
	}
}
