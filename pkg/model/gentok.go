package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// endOfTurnTokens are the special tokens chat templates end an assistant
// turn with; a generated model stops on those its template uses, as the
// real model's generation_config.json says.
var endOfTurnTokens = []string{"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "</s>"}

// realTokenizer is a Hugging Face tokenizer a generated model carries
// instead of its synthetic vocabulary (gen-model --tokenizer).
type realTokenizer struct {
	dir   string
	vocab int
	bos   int32 // -1: none
	eos   []int32
}

// loadRealTokenizer reads the tokenizer in dir and picks the model's
// vocabulary size, BOS and stop tokens from it.
func loadRealTokenizer(dir string) (*realTokenizer, error) {
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("gen-model: --tokenizer: %w", err)
	}
	rt := &realTokenizer{dir: dir, vocab: tok.VocabSize(), bos: tok.BOS()}
	if e := tok.EOS(); e >= 0 {
		rt.eos = append(rt.eos, e)
	}
	tmpl := tok.ChatTemplate()
	for _, name := range endOfTurnTokens {
		if id, ok := tok.TokenID(name); ok && strings.Contains(tmpl, name) && !containsID(rt.eos, id) {
			rt.eos = append(rt.eos, id)
		}
	}
	if len(rt.eos) == 0 {
		return nil, fmt.Errorf("gen-model: --tokenizer %s: no end-of-sequence token found", dir)
	}
	return rt, nil
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// copyFiles puts the tokenizer's files (and its chat template) into the
// model directory.
func (rt *realTokenizer) copyFiles(dst string) error {
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"} {
		b, err := os.ReadFile(filepath.Join(rt.dir, name))
		if os.IsNotExist(err) && name != "tokenizer.json" {
			continue
		}
		if err != nil {
			return fmt.Errorf("gen-model: --tokenizer: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return fmt.Errorf("gen-model: %w", err)
		}
	}
	return nil
}

// tokenIDs are the config.json / generation_config.json token entries.
func (rt *realTokenizer) tokenIDs() map[string]any {
	m := map[string]any{"eos_token_id": rt.eos}
	if len(rt.eos) == 1 {
		m["eos_token_id"] = rt.eos[0]
	}
	if rt.bos >= 0 {
		m["bos_token_id"] = rt.bos
	}
	return m
}
