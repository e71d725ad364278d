// Package builtin names the models that are built in memory from a seed
// instead of read from files: `--model_dir builtin:tiny-random`. They exist
// for smoke tests of the whole server on a machine without any model (no
// download, no files): their weights are deterministic random numbers, so
// they produce meaningless text — the same meaningless text for the same
// prompt and parameters on every run.
//
// This package only knows the names and geometries, so that the
// configuration (pkg/config) can size the KV cache without building the
// weights; pkg/model builds and loads them (model.Load accepts a builtin
// spec wherever it accepts a path, and model.LoadTokenizer its vocabulary).
package builtin

import (
	"fmt"
	"strings"
)

// Prefix starts every builtin model spec.
const Prefix = "builtin:"

// Spec is one builtin model: a random-weight model of the given geometry
// (f32 weights, an embedded SentencePiece-style vocabulary).
type Spec struct {
	Name    string
	Arch    string // llama | mistral | qwen2 | qwen3
	Hidden  int
	Layers  int
	Heads   int
	KVHeads int
	FFN     int
	Vocab   int
	MaxPos  int // context length
	Seed    uint64
	// BOS and EOS are the generated vocabulary's <s> and </s>.
	BOS, EOS int
	// About is the one-line description `lightllm` prints.
	About string
}

// HeadDim is the attention head size.
func (s Spec) HeadDim() int { return s.Hidden / s.Heads }

// specs lists the builtin models. A function, not a package variable, so
// callers cannot change the table.
func specs() []Spec {
	return []Spec{{
		Name: "tiny-random", Arch: "llama", Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128,
		Vocab: 512, MaxPos: 2048, Seed: 1, BOS: 1, EOS: 2,
		About: "2-layer Llama with deterministic random weights, built in memory; its text is meaningless (smoke tests only)",
	}}
}

// IsSpec reports whether a --model_dir value names a builtin model.
func IsSpec(modelDir string) bool { return strings.HasPrefix(modelDir, Prefix) }

// Names lists the builtin model specs ("builtin:tiny-random", …).
func Names() []string {
	var out []string
	for _, s := range specs() {
		out = append(out, Prefix+s.Name)
	}
	return out
}

// Lookup returns the builtin model a spec names.
func Lookup(spec string) (Spec, error) {
	name, ok := strings.CutPrefix(spec, Prefix)
	if !ok {
		return Spec{}, fmt.Errorf("model %q is not a builtin model (want %s)", spec, strings.Join(Names(), " or "))
	}
	for _, s := range specs() {
		if s.Name == name {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("unknown builtin model %q (builtin models: %s)", spec, strings.Join(Names(), ", "))
}
