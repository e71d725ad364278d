package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/model/builtin"
)

// Model formats.
const (
	FormatHF   = "hf"
	FormatGGUF = "gguf"
	// FormatBuiltin is a random-weight model built in memory (pkg/model/builtin).
	FormatBuiltin = "builtin"
)

// ModelInfo is the little the configuration needs to know about a model:
// enough to derive max_req_total_len, eos_id, data_type and the KV size of a
// token. The model loaders (pkg/model) read the rest.
type ModelInfo struct {
	Format        string // FormatHF or FormatGGUF
	Path          string
	Arch          string
	ContextLength int // 0 = unknown
	NumLayers     int
	NumHeads      int
	NumKVHeads    int
	HeadDim       int
	HiddenSize    int
	EOS           []int
	DType         string // fp16|bf16|fp32, "" = unknown
}

// ReadModelInfo reads config.json (+ generation_config.json) of a Hugging
// Face model directory, or the metadata of a GGUF file; a builtin spec
// (builtin:NAME) is described from its table.
func ReadModelInfo(path string) (*ModelInfo, error) {
	if builtin.IsSpec(path) {
		return builtinInfo(path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	if st.IsDir() {
		return readHFInfo(path)
	}
	return readGGUFInfo(path)
}

// KVBytesPerToken is the K+V cache size of one token over all layers with
// elemBytes per element (4 for f32, 2 for f16/bf16).
func (m *ModelInfo) KVBytesPerToken(elemBytes int) (int64, error) {
	headDim := m.HeadDim
	if headDim == 0 && m.NumHeads > 0 {
		headDim = m.HiddenSize / m.NumHeads
	}
	kv := m.NumKVHeads
	if kv == 0 {
		kv = m.NumHeads
	}
	if m.NumLayers <= 0 || kv <= 0 || headDim <= 0 || elemBytes <= 0 {
		return 0, fmt.Errorf("model %s: cannot size the KV cache (layers=%d kv_heads=%d head_dim=%d)", m.Path, m.NumLayers, kv, headDim)
	}
	return 2 * int64(m.NumLayers) * int64(kv) * int64(headDim) * int64(elemBytes), nil
}

// ropeTypesWithoutFactor are the RoPE scalings whose factor does not extend
// max_position_embeddings (as LightLLM's _derive_max_req_total_len_from_model_config).
var ropeTypesWithoutFactor = map[string]bool{"yarn": true, "dynamic": true, "su": true, "longrope": true, "llama3": true}

func readHFInfo(dir string) (*ModelInfo, error) {
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := readJSONObject(cfgPath)
	if err != nil {
		return nil, err
	}
	// Multimodal configs keep the language model's keys in a sub-object.
	cands := []map[string]any{raw}
	for _, k := range []string{"llm_config", "text_config"} {
		if sub, ok := raw[k].(map[string]any); ok {
			cands = append(cands, sub)
		}
	}
	if th, ok := raw["thinker_config"].(map[string]any); ok {
		if sub, ok := th["text_config"].(map[string]any); ok {
			cands = append(cands, sub)
		}
	}
	find := func(key string) any {
		for _, c := range cands {
			if v, ok := c[key]; ok && v != nil {
				return v
			}
		}
		return nil
	}
	findInt := func(key string) int {
		n, _ := asInt(find(key))
		return n
	}
	info := &ModelInfo{
		Format:     FormatHF,
		Path:       dir,
		NumLayers:  findInt("num_hidden_layers"),
		NumHeads:   findInt("num_attention_heads"),
		NumKVHeads: findInt("num_key_value_heads"),
		HeadDim:    findInt("head_dim"),
		HiddenSize: findInt("hidden_size"),
	}
	if s, ok := find("model_type").(string); ok {
		info.Arch = s
	}
	info.ContextLength = hfContextLength(find)

	eos, err := asIntList(find("eos_token_id"))
	if err != nil {
		return nil, fmt.Errorf("model %s: eos_token_id: %w", cfgPath, err)
	}
	if len(eos) == 0 {
		gen, gerr := readJSONObject(filepath.Join(dir, "generation_config.json"))
		if gerr != nil && !errors.Is(gerr, fs.ErrNotExist) {
			return nil, gerr
		}
		if gen != nil {
			if eos, err = asIntList(gen["eos_token_id"]); err != nil {
				return nil, fmt.Errorf("model %s: generation_config eos_token_id: %w", dir, err)
			}
		}
	}
	info.EOS = eos
	for _, k := range []string{"torch_dtype", "dtype", "model_dtype"} {
		if s, ok := find(k).(string); ok {
			info.DType = NormalizeDataType(s)
			break
		}
	}
	if info.DType == "" {
		info.DType = "fp16" // LightLLM's default when the config has no dtype
	}
	return info, nil
}

func hfContextLength(find func(string) any) int {
	if n, ok := asInt(find("max_sequence_length")); ok && n > 0 {
		return n
	}
	maxPos, ok := asFloat(find("max_position_embeddings"))
	if !ok || maxPos <= 0 {
		return 0
	}
	factor := 1.0
	if rs, ok := find("rope_scaling").(map[string]any); ok {
		multiply := true
		for _, k := range []string{"rope_type", "type", "__type"} {
			if s, ok := rs[k].(string); ok && strings.TrimSpace(s) != "" {
				multiply = !ropeTypesWithoutFactor[strings.ToLower(strings.TrimSpace(s))]
				break
			}
		}
		if f, ok := asFloat(rs["factor"]); ok && multiply {
			factor = f
		}
	}
	return int(maxPos * factor)
}

func readJSONObject(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return m, nil
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

func asInt(v any) (int, bool) {
	f, ok := asFloat(v)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

func asIntList(v any) ([]int, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]int, 0, len(x))
		for _, e := range x {
			n, ok := asInt(e)
			if !ok {
				return nil, fmt.Errorf("not an integer: %v", e)
			}
			out = append(out, n)
		}
		return out, nil
	default:
		n, ok := asInt(x)
		if !ok {
			return nil, fmt.Errorf("not an integer or list of integers: %v", v)
		}
		return []int{n}, nil
	}
}

// NormalizeDataType maps torch/LightLLM dtype spellings to fp16|bf16|fp32
// and returns "" for anything else.
func NormalizeDataType(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp16", "float16", "half", "f16":
		return "fp16"
	case "bf16", "bfloat16":
		return "bf16"
	case "fp32", "float32", "float", "f32":
		return "fp32"
	}
	return ""
}
