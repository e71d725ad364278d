package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

func TestResolveStories260K(t *testing.T) {
	models := modelsDir(t)
	t.Setenv(EnvRunDir, t.TempDir())
	tests := map[string]struct {
		path string
		eos  []int
		dt   string
	}{
		"hf":      {filepath.Join(models, "stories260K", "hf"), []int{2}, "fp32"},
		"gguf v3": {filepath.Join(models, "stories260K", "stories260K-f32.gguf"), []int{2}, ""}, // no general.file_type
		"gguf v1": {filepath.Join(models, "stories260K", "tinyllamas-stories-260k-f32.ggufv1.gguf"), nil, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			info, err := ReadModelInfo(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			// README: 5 layers, 8 heads, 4 KV heads, dim 64, context 512.
			if info.ContextLength != 512 || info.NumLayers != 5 || info.NumHeads != 8 || info.NumKVHeads != 4 || info.HiddenSize != 64 {
				t.Fatalf("model info %+v", info)
			}
			bpt, err := info.KVBytesPerToken(4)
			if err != nil || bpt != 2*5*4*8*4 {
				t.Fatalf("KV bytes per token = %d, %v; want 1280", bpt, err)
			}
			_, in := parse(t, "--model_dir", tc.path)
			c, err := Resolve(in, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			if tc.eos != nil && !reflect.DeepEqual(c.EosID, tc.eos) {
				t.Errorf("eos_id %v, want %v", c.EosID, tc.eos)
			}
			if tc.dt != "" && c.DataType != tc.dt {
				t.Errorf("data_type %q, want %q", c.DataType, tc.dt)
			}
			// 1 GiB × 0.8 / 640 B (f16 KV) is far more than 256 slots × 512 tokens can use.
			if !c.Resolved || c.MaxReqTotalLen != 512 || c.MaxTotalTokenNum != 256*512 || c.KVBytesPerToken != 640 {
				t.Errorf("resolved: req=%d kv=%d bpt=%d", c.MaxReqTotalLen, c.MaxTotalTokenNum, c.KVBytesPerToken)
			}
			if c.BatchMaxTokens != 16384 || c.ChunkedPrefillSize != 8192 || c.MetricPort != 9100 {
				t.Errorf("batch=%d chunk=%d metric=%d", c.BatchMaxTokens, c.ChunkedPrefillSize, c.MetricPort)
			}
		})
	}
}

// writeHF writes a minimal HF model directory with the given config.json.
func writeHF(t *testing.T, configJSON string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const geom = `"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64`

func TestResolveDerivedValues(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	tests := map[string]struct {
		config  string
		extra   map[string]string
		args    []string
		mem     int64
		wantReq int
		wantKV  int
		wantEOS []int
		wantDT  string
		wantErr string
	}{
		"max_position_embeddings": {config: `{"max_position_embeddings": 4096, "eos_token_id": [7, 8], "torch_dtype": "bfloat16", ` + geom + `}`,
			wantReq: 4096, wantKV: 256 * 4096 /* 1 GiB × 0.8 / 512 B, capped at running × len */, wantEOS: []int{7, 8}, wantDT: "bf16"},
		"rope linear factor": {config: `{"max_position_embeddings": 2048, "rope_scaling": {"type": "linear", "factor": 4}, ` + geom + `}`,
			wantReq: 8192, wantDT: "fp16"},
		"rope yarn keeps length": {config: `{"max_position_embeddings": 2048, "rope_scaling": {"rope_type": "yarn", "factor": 4}, ` + geom + `}`,
			wantReq: 2048},
		"max_sequence_length first": {config: `{"max_sequence_length": 1000, "max_position_embeddings": 4096, ` + geom + `}`,
			wantReq: 1000},
		"text_config":    {config: `{"text_config": {"max_position_embeddings": 3000, ` + geom + `}}`, wantReq: 3000},
		"fallback 16384": {config: `{` + geom + `}`, wantReq: 16384},
		"eos from generation_config": {config: `{"max_position_embeddings": 512, ` + geom + `}`,
			extra: map[string]string{"generation_config.json": `{"eos_token_id": 9}`}, wantEOS: []int{9}},
		"explicit flags win": {config: `{"max_position_embeddings": 4096, "eos_token_id": 2, ` + geom + `}`,
			args:    []string{"--max_req_total_len", "100", "--max_total_token_num", "1000", "--eos_id", "3", "--data_type", "float32"},
			wantReq: 100, wantKV: 1000, wantEOS: []int{3}, wantDT: "fp32"},
		// 2 layers × 4 heads × 16 dim × 2 × 2 B (f16 KV) = 512 B/token; 1 MiB × 0.8 → 1638 tokens.
		"kv from memory": {config: `{"max_position_embeddings": 512, ` + geom + `}`, mem: 1 << 20, wantKV: 1638},
		"kv too small": {config: `{"max_position_embeddings": 4096, ` + geom + `}`, mem: 1 << 20,
			wantErr: "KV cache too small"},
		"no chunked prefill": {config: `{"max_position_embeddings": 512, ` + geom + `}`, args: []string{"--disable_chunked_prefill"},
			wantReq: 512},
		"bad eos":     {config: `{"eos_token_id": "x", ` + geom + `}`, wantErr: "eos_token_id"},
		"bad json":    {config: `{"max_position_embeddings": `, wantErr: "parse"},
		"no geometry": {config: `{"max_position_embeddings": 512}`, wantErr: "cannot size the KV cache"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeHF(t, tc.config, tc.extra)
			_, in := parse(t, append([]string{"--model_dir", dir}, tc.args...)...)
			opts := testOpts()
			if tc.mem != 0 {
				opts.MemAvailable = func() (int64, error) { return tc.mem, nil }
			}
			c, err := Resolve(in, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantReq != 0 && c.MaxReqTotalLen != tc.wantReq {
				t.Errorf("max_req_total_len %d, want %d", c.MaxReqTotalLen, tc.wantReq)
			}
			if tc.wantKV != 0 && c.MaxTotalTokenNum != tc.wantKV {
				t.Errorf("max_total_token_num %d, want %d", c.MaxTotalTokenNum, tc.wantKV)
			}
			if tc.wantEOS != nil && !reflect.DeepEqual(c.EosID, tc.wantEOS) {
				t.Errorf("eos %v, want %v", c.EosID, tc.wantEOS)
			}
			if tc.wantDT != "" && c.DataType != tc.wantDT {
				t.Errorf("data_type %q, want %q", c.DataType, tc.wantDT)
			}
			if c.DisableChunkedPrefill && (c.ChunkedPrefillSize != c.MaxReqTotalLen || c.BatchMaxTokens != c.MaxReqTotalLen) {
				t.Errorf("no chunked prefill: chunk=%d batch=%d", c.ChunkedPrefillSize, c.BatchMaxTokens)
			}
			if in.Resolved || in.MaxReqTotalLen != 0 && tc.args == nil {
				t.Errorf("Resolve modified its input")
			}
		})
	}
}

func TestLoadSharedResolvesOnce(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	dir := writeHF(t, `{"max_position_embeddings": 512, `+geom+`}`, nil)
	var calls atomic.Int32
	opts := testOpts()
	opts.MemAvailable = func() (int64, error) {
		// Each call sees less memory, as a role would after infer allocated.
		n := calls.Add(1)
		return (64 << 20) / int64(n), nil
	}
	_, in := parse(t, "--model_dir", dir, "--instance", "shared")
	first, err := LoadShared(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, again := parse(t, "--model_dir", dir, "--instance", "shared")
	second, err := LoadShared(again, opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || second.MaxTotalTokenNum != first.MaxTotalTokenNum {
		t.Fatalf("resolved %d times; kv %d vs %d", calls.Load(), first.MaxTotalTokenNum, second.MaxTotalTokenNum)
	}
	// A resolved file passes straight through.
	loaded, err := Load(first.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LoadShared(loaded, opts); err != nil || got.MaxTotalTokenNum != first.MaxTotalTokenNum || calls.Load() != 1 {
		t.Fatalf("resolved file: %v, %d calls", err, calls.Load())
	}
	// Different input → resolved again.
	_, other := parse(t, "--model_dir", dir, "--instance", "shared", "--running_max_req_size", "8")
	if _, err := LoadShared(other, opts); err != nil || calls.Load() != 2 {
		t.Fatalf("changed input: %v, %d calls", err, calls.Load())
	}
}

// TestGGUFInfo reads a model's description from GGUF metadata (through
// pkg/gguf) and refuses files that are not GGUF or lack an architecture.
func TestGGUFInfo(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, kv map[string]any) string {
		w := gguf.NewWriter()
		for k, v := range kv {
			w.Set(k, v)
		}
		p := filepath.Join(dir, name)
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.gguf", map[string]any{"general.architecture": "llama", "llama.context_length": uint32(2048),
		"llama.block_count": uint32(2), "llama.attention.head_count": uint32(8), "llama.attention.head_count_kv": uint32(2),
		"llama.embedding_length": uint32(64), "tokenizer.ggml.tokens": []string{"a", "bc"},
		"tokenizer.ggml.eos_token_id": uint32(2), "general.file_type": uint32(1)})
	info, err := readGGUFInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	want := ModelInfo{Format: FormatGGUF, Path: good, Arch: "llama", ContextLength: 2048, NumLayers: 2, NumHeads: 8,
		NumKVHeads: 2, HiddenSize: 64, EOS: []int{2}, DType: "fp16"}
	if !reflect.DeepEqual(*info, want) {
		t.Fatalf("info %+v\nwant %+v", *info, want)
	}
	noArch := write("noarch.gguf", map[string]any{"llama.block_count": uint32(2)})
	notGGUF := filepath.Join(dir, "not.gguf")
	os.WriteFile(notGGUF, []byte("GGUX\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 0o644)
	for name, c := range map[string]struct{ path, want string }{
		"no architecture": {noArch, "no general.architecture"},
		"not gguf":        {notGGUF, "magic"},
		"missing":         {filepath.Join(dir, "absent.gguf"), "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := readGGUFInfo(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestKVCacheDtypeSizing: a q8_0 KV cache takes 34 bytes per 32 values
// (f16: 64), so the same memory holds 64/34 ≈ 1.9x the tokens.
func TestKVCacheDtypeSizing(t *testing.T) {
	path := filepath.Join(modelsDir(t), "stories260K", "stories260K-f32.gguf")
	t.Setenv(EnvRunDir, t.TempDir())
	opts := testOpts()
	opts.MemAvailable = func() (int64, error) { return 1 << 20, nil }
	tests := map[string]struct {
		dtype       string
		bpt, tokens int
	}{
		"default is f16": {"", 640, 1310},     // 2 × 5 layers × 4 KV heads × 8 × 2 B; 1 MiB × 0.8 / 640
		"f16":            {"f16", 640, 1310},  //
		"q8_0":           {"q8_0", 340, 2467}, // 2 × 5 × 4 × 8 × 34/32 B
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := []string{"--model_dir", path}
			if tc.dtype != "" {
				args = append(args, "--kv_cache_dtype", tc.dtype)
			}
			_, in := parse(t, args...)
			c, err := Resolve(in, opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.KVBytesPerToken != int64(tc.bpt) || c.MaxTotalTokenNum != tc.tokens {
				t.Errorf("bytes per token %d, tokens %d; want %d, %d", c.KVBytesPerToken, c.MaxTotalTokenNum, tc.bpt, tc.tokens)
			}
		})
	}
	_, in := parse(t, "--model_dir", path, "--kv_cache_dtype", "q4_1")
	if _, err := Resolve(in, opts); err == nil || !strings.Contains(err.Error(), "kv_cache_dtype") {
		t.Errorf("kv_cache_dtype q4_1: %v, want an error naming the flag", err)
	}
}
