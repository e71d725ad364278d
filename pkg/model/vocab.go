package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// genVocab is a SentencePiece-style vocabulary for generated models:
// <unk>, <s>, </s>, the 256 byte-fallback tokens, "▁", single characters,
// then "▁x" pairs (each with a merge) and single CJK characters as filler.
// Only one- and two-piece tokens exist, so llama.cpp's SPM tokenizer (which
// merges by score) and HF's BPE (by merge rank) give the same ids.
type genVocab struct {
	tokens []string
	scores []float32
	types  []int32 // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte
	merges [][2]string
}

const spmSpace = "\u2581"

// minGenVocab is the smallest generated vocabulary: specials, bytes, "▁".
const minGenVocab = 3 + 256 + 1

func newGenVocab(n int) (*genVocab, error) {
	if n < minGenVocab {
		return nil, fmt.Errorf("vocabulary of %d tokens: at least %d needed (specials and byte fallback)", n, minGenVocab)
	}
	v := &genVocab{}
	add := func(tok string, typ int32) {
		v.tokens = append(v.tokens, tok)
		v.scores = append(v.scores, -float32(len(v.scores)))
		v.types = append(v.types, typ)
	}
	add("<unk>", 2)
	add("<s>", 3)
	add("</s>", 3)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 6)
	}
	// Byte tokens and specials have score 0 in SentencePiece files.
	for i := range v.scores {
		v.scores[i] = 0
	}
	add(spmSpace, 1)
	singles := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()"
	for _, r := range singles {
		if len(v.tokens) == n {
			return v, nil
		}
		add(string(r), 1)
	}
	for r := 'a'; r <= 'z' && len(v.tokens) < n; r++ {
		add(spmSpace+string(r), 1)
		v.merges = append(v.merges, [2]string{spmSpace, string(r)})
	}
	for r := rune(0x4E00); len(v.tokens) < n; r++ {
		add(string(r), 1)
	}
	return v, nil
}

// writeHFTokenizer writes tokenizer.json and tokenizer_config.json in the
// layout of a Llama-2 (SentencePiece BPE with byte fallback) tokenizer.
func (v *genVocab) writeHFTokenizer(dir string) error {
	vocab := make(map[string]int, len(v.tokens))
	for i, t := range v.tokens {
		vocab[t] = i
	}
	added := []map[string]any{}
	for i := 0; i < 3; i++ {
		added = append(added, map[string]any{"id": i, "content": v.tokens[i], "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	merges := make([][]string, len(v.merges))
	for i, m := range v.merges {
		merges[i] = []string{m[0], m[1]}
	}
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": spmSpace},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": spmSpace},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 1}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": spmSpace}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": "<unk>", "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
			"vocab": vocab, "merges": merges},
	}
	cfg := map[string]any{"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
		"unk_token": "<unk>", "add_bos_token": true, "add_eos_token": false, "legacy": true,
		"clean_up_tokenization_spaces": false}
	for name, obj := range map[string]any{"tokenizer.json": tok, "tokenizer_config.json": cfg} {
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
