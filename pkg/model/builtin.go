package model

import (
	"bytes"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/model/builtin"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// Builtin models (pkg/model/builtin) are generated GGUF images held in
// memory: the same code path as a .gguf file, with no file at all.

// builtinOptions is the generator's description of a builtin model.
func builtinOptions(s builtin.Spec) GenOptions {
	return GenOptions{Arch: s.Arch, Hidden: s.Hidden, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads,
		FFN: s.FFN, Vocab: s.Vocab, MaxPos: s.MaxPos, DType: "f32", Seed: s.Seed}
}

// BuiltinGGUF builds the GGUF image of a builtin model in memory and
// parses it. The same spec gives the same bytes on every call.
func BuiltinGGUF(spec string) (*gguf.File, error) {
	s, err := builtin.Lookup(spec)
	if err != nil {
		return nil, err
	}
	w, err := ggufWriter(builtinOptions(s))
	if err != nil {
		return nil, fmt.Errorf("builtin model %s: %w", spec, err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("builtin model %s: %w", spec, err)
	}
	f, err := gguf.Parse(spec, buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("builtin model %s: %w", spec, err)
	}
	return f, nil
}

// loadBuiltin is Load for a builtin spec.
func loadBuiltin(spec string, opts LoadOptions) (*Model, error) {
	f, err := BuiltinGGUF(spec)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m := &Model{}
	m.closers = append(m.closers, f)
	if err := m.loadGGUFFile(f, opts); err != nil {
		m.closeFiles()
		return nil, err
	}
	return m.finishLoad(opts)
}

// LoadTokenizer opens the tokenizer of a model given as --model_dir: a
// builtin spec's generated vocabulary, else tokenizer.Load's directory,
// tokenizer.json or .gguf file.
func LoadTokenizer(modelDir string) (*tokenizer.Tokenizer, error) {
	if !builtin.IsSpec(modelDir) {
		return tokenizer.Load(modelDir)
	}
	f, err := BuiltinGGUF(modelDir)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := tokenizer.FromGGUFFile(f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer of %s: %w", modelDir, err)
	}
	return t, nil
}
