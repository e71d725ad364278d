package config

import (
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// readGGUFInfo describes a GGUF model from its metadata, read through
// pkg/gguf (the one GGUF reader; the file is mapped, and only the pages of
// its header are touched).
func readGGUFInfo(path string) (*ModelInfo, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	defer f.Close()
	return ggufInfo(f)
}

func ggufInfo(f *gguf.File) (*ModelInfo, error) {
	arch, _ := f.String("general.architecture")
	if arch == "" {
		return nil, fmt.Errorf("model %s: GGUF has no general.architecture", f.Path)
	}
	num := func(key string) int {
		v, ok := f.Uint(key)
		if !ok || v > 1<<31-1 {
			return 0
		}
		return int(v)
	}
	info := &ModelInfo{
		Format:        FormatGGUF,
		Path:          f.Path,
		Arch:          arch,
		ContextLength: num(arch + ".context_length"),
		NumLayers:     num(arch + ".block_count"),
		NumHeads:      num(arch + ".attention.head_count"),
		NumKVHeads:    num(arch + ".attention.head_count_kv"),
		HeadDim:       num(arch + ".attention.key_length"),
		HiddenSize:    num(arch + ".embedding_length"),
	}
	if _, ok := f.Uint("tokenizer.ggml.eos_token_id"); ok {
		info.EOS = []int{num("tokenizer.ggml.eos_token_id")}
	}
	if ft, ok := f.Uint("general.file_type"); ok {
		switch ft { // llama.cpp's LLAMA_FTYPE_*; quantized types leave it to the engine
		case 0:
			info.DType = "fp32"
		case 1:
			info.DType = "fp16"
		case 32:
			info.DType = "bf16"
		}
	}
	return info, nil
}
