package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/model/builtin"
)

// Poolings of an embedding model: how the final hidden states of a prompt
// (after the final norm) become one vector.
const (
	PoolingAuto = "auto" // --pooling: what the model's files say
	PoolingNone = ""     // not an embedding model
	PoolingLast = "last" // the last token's (Qwen3-Embedding, e5-mistral)
	PoolingMean = "mean" // the mean over the prompt's tokens
	PoolingCLS  = "cls"  // the first token's (BERT-style [CLS])
)

// Embedding is how the server computes /v1/embeddings for its model.
type Embedding struct {
	Pooling   string // PoolingLast, PoolingMean, PoolingCLS; PoolingNone: embeddings are not served
	Normalize bool   // L2-normalise the pooled vector
	Dim       int    // the vector's length: the model's hidden size
	// Source says where Pooling came from (for logs and the 400 of a model
	// that serves none): "modules.json", "gguf <arch>.pooling_type",
	// "--pooling", or why there is none.
	Source string
}

// EmbeddingSpec resolves --pooling against the model's own files: auto
// takes the model's pooling (sentence-transformers' modules.json and
// 1_Pooling/config.json in a Hugging Face directory, <arch>.pooling_type in
// a GGUF file); last, mean or cls override it (vLLM's --override-pooler-config)
// and serve a model that says nothing, normalised unless the model's files
// say otherwise. An error is a model file that names a pooling this server
// cannot compute.
func (c *Config) EmbeddingSpec() (Embedding, error) {
	e, err := ReadEmbedding(c.ModelDir)
	if err != nil {
		return Embedding{}, err
	}
	switch c.Pooling {
	case PoolingAuto, "":
	case PoolingLast, PoolingMean, PoolingCLS:
		if e.Pooling == PoolingNone {
			e.Normalize = true // vLLM's default for an embedding task
		}
		e.Pooling, e.Source = c.Pooling, "--pooling"
	default:
		return Embedding{}, fmt.Errorf("--pooling %q: want auto, last, mean or cls", c.Pooling)
	}
	if e.Pooling != PoolingNone && e.Dim <= 0 {
		return Embedding{}, fmt.Errorf("model %s: embeddings: unknown hidden size", c.ModelDir)
	}
	return e, nil
}

// ReadEmbedding reads what a model's files say about pooling; a model that
// says nothing gets PoolingNone with the reason in Source.
func ReadEmbedding(path string) (Embedding, error) {
	if builtin.IsSpec(path) {
		info, err := builtinInfo(path)
		if err != nil {
			return Embedding{}, err
		}
		return Embedding{Dim: info.HiddenSize, Source: "a builtin model declares no pooling"}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return Embedding{}, fmt.Errorf("model %s: %w", path, err)
	}
	if !st.IsDir() {
		f, err := gguf.Open(path)
		if err != nil {
			return Embedding{}, fmt.Errorf("model %s: %w", path, err)
		}
		defer f.Close()
		info, err := ggufInfo(f)
		if err != nil {
			return Embedding{}, err
		}
		return ggufPooling(f, info)
	}
	info, err := readHFInfo(path)
	if err != nil {
		return Embedding{}, err
	}
	return hfPooling(path, info.HiddenSize)
}

// ggufPooling maps llama.cpp's LLAMA_POOLING_TYPE (0 none, 1 mean, 2 cls,
// 3 last, 4 rank); llama.cpp's server L2-normalises embeddings by default.
func ggufPooling(f *gguf.File, info *ModelInfo) (Embedding, error) {
	key := info.Arch + ".pooling_type"
	e := Embedding{Dim: info.HiddenSize, Normalize: true, Source: "gguf " + key}
	v, ok := f.Uint(key)
	switch {
	case !ok:
		return Embedding{Dim: info.HiddenSize, Source: "the GGUF file has no " + key}, nil
	case v == 0:
		return Embedding{Dim: info.HiddenSize, Source: key + " is 0 (none)"}, nil
	case v == 1:
		e.Pooling = PoolingMean
	case v == 2:
		e.Pooling = PoolingCLS
	case v == 3:
		e.Pooling = PoolingLast
	default:
		return Embedding{}, fmt.Errorf("model %s: %s = %d (rank or unknown pooling) is not supported", f.Path, key, v)
	}
	return e, nil
}

// stModule is one entry of sentence-transformers' modules.json.
type stModule struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// hfPooling reads sentence-transformers' modules.json: a Pooling module
// (its config.json's pooling_mode_* flags) and whether a Normalize module
// follows.
func hfPooling(dir string, hidden int) (Embedding, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "modules.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Embedding{Dim: hidden, Source: "the model directory has no sentence-transformers modules.json"}, nil
	}
	if err != nil {
		return Embedding{}, fmt.Errorf("model %s: %w", dir, err)
	}
	var mods []stModule
	if err := json.Unmarshal(raw, &mods); err != nil {
		return Embedding{}, fmt.Errorf("model %s: modules.json: %w", dir, err)
	}
	e := Embedding{Dim: hidden, Source: "modules.json"}
	var poolDir string
	for _, m := range mods {
		switch {
		case strings.HasSuffix(m.Type, ".Pooling"):
			poolDir = m.Path
		case strings.HasSuffix(m.Type, ".Normalize"):
			e.Normalize = true
		}
	}
	if poolDir == "" {
		return Embedding{Dim: hidden, Source: "modules.json has no Pooling module"}, nil
	}
	if !filepath.IsLocal(poolDir) {
		return Embedding{}, fmt.Errorf("model %s: modules.json: Pooling path %q is outside the model directory", dir, poolDir)
	}
	var pc map[string]any
	pb, err := os.ReadFile(filepath.Join(dir, poolDir, "config.json"))
	if err == nil {
		err = json.Unmarshal(pb, &pc)
	}
	if err != nil {
		return Embedding{}, fmt.Errorf("model %s: pooling config %s: %w", dir, filepath.Join(poolDir, "config.json"), err)
	}
	var on []string
	for k, v := range pc {
		if b, ok := v.(bool); ok && b && strings.HasPrefix(k, "pooling_mode_") {
			on = append(on, k)
		}
	}
	if len(on) != 1 {
		return Embedding{}, fmt.Errorf("model %s: %s/config.json enables %d pooling modes %v: want exactly one", dir, poolDir, len(on), on)
	}
	switch on[0] {
	case "pooling_mode_lasttoken":
		e.Pooling = PoolingLast
	case "pooling_mode_mean_tokens":
		e.Pooling = PoolingMean
	case "pooling_mode_cls_token":
		e.Pooling = PoolingCLS
	default:
		return Embedding{}, fmt.Errorf("model %s: %s is not supported (last token, mean and CLS pooling are)", dir, on[0])
	}
	return e, nil
}
