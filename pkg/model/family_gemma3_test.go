package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gemma3Fixture is the gen-model gemma3 llama.cpp ran (testdata/README.md):
// six layers, so five local (window 32) and one global; global RoPE base
// 1e6 with linear scaling 8, local base 10000 unscaled.
var gemma3Fixture = GenOptions{Arch: "gemma3", Hidden: 256, Layers: 6, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 19,
	SlidingWindow: 32, RopeTheta: 1e6, RopeLinear: 8}

// TestGemma3LlamaCpp: a gen-model gemma3 is bit-exact with llama.cpp from
// GGUF f16 and q8_0 and from the HF form, on 24 prompts of 2-834 tokens,
// most of them longer than four windows (checkFamilyFixture).
func TestGemma3LlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{opts: gemma3Fixture,
		runs:  map[string]string{"f16": "llamacpp_gemma3_f16.jsonl", "q8_0": "llamacpp_gemma3_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"}})
}

// TestGELUTable: geluTable is, entry for entry, the ggml_table_gelu_f16
// that llama.cpp's FMA CPU builds (haswell .. zen4 in node-llama-cpp
// 3.21.1) fill at ggml_cpu_init: its SHA-256 over the little-endian
// entries, read from libggml-cpu-zen4.so after ggml_cpu_init (the
// haswell build's is identical).
func TestGELUTable(t *testing.T) {
	tab := geluTable()
	b := make([]byte, 2*len(tab))
	for i, v := range tab {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != "5eceda6f287dec9dc0bcfa24516d6744a031a5c52d1984688b4558aeb1daf909" {
		t.Fatalf("GELU table hash %s", got)
	}
	g, u := []float32{-12, -10, 0, 1, 9.99, 10, 20}, []float32{2, 2, 2, 2, 2, 2, 2}
	gegluRow(g, u, tab)
	if g[0] != 0 || g[1] != 0 || g[2] != 0 || g[5] != 20 || g[6] != 40 || g[3] < 1.68 || g[3] > 1.69 {
		t.Errorf("geglu %v", g)
	}
}

// TestGemma3Config: both forms read the same block (local layers, RoPE
// bases and scaling, q scale, embedding scale), HF norms are shifted by 1
// exactly as the converter shifts them, and what llama.cpp's gemma3 would
// compute differently is refused by name.
func TestGemma3Config(t *testing.T) {
	o := gemma3Fixture
	o.DType = "f16"
	dir := t.TempDir()
	if err := GenerateGGUF(filepath.Join(dir, "g.gguf"), o); err != nil {
		t.Fatal(err)
	}
	if err := GenerateHF(filepath.Join(dir, "hf"), o); err != nil {
		t.Fatal(err)
	}
	g, err := Load(filepath.Join(dir, "g.gguf"), LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h, err := Load(filepath.Join(dir, "hf"), LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	gc, hc := g.Config(), h.Config()
	wantLocal := []bool{true, true, true, true, true, false}
	for _, c := range []Config{gc, hc} {
		if c.Arch != "gemma3" || c.Window != 32 || !slices.Equal(c.LocalLayers, wantLocal) || c.RopeTheta != 1e6 ||
			c.RopeThetaLocal != 10000 || !c.LocalRopeUnscaled || c.RopeScaling == nil || c.RopeScaling.Factor != 8 ||
			c.QScale != 0.125 || c.EmbedScale != 16 || c.Act != "gelu_tanh" || !c.PostNorms || !c.QKNorm {
			t.Errorf("config %+v", c)
		}
	}
	for i := range g.layers {
		gl, hl := &g.layers[i], &h.layers[i]
		for _, p := range [][2][]float32{{gl.attnNorm, hl.attnNorm}, {gl.ffnNorm, hl.ffnNorm}, {gl.postAttn, hl.postAttn},
			{gl.postFFN, hl.postFFN}, {gl.qNorm, hl.qNorm}, {gl.kNorm, hl.kNorm}} {
			if !slices.Equal(p[0], p[1]) || p[0][0] < 0.8 {
				t.Fatalf("layer %d: norm weights differ between GGUF and HF (%v vs %v)", i, p[0][:2], p[1][:2])
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "hf", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		val  any
		want string
	}{
		{"final_logit_softcapping", 30.0, "final_logit_softcapping is not supported"},
		{"attn_logit_softcapping", 50.0, "attn_logit_softcapping is not supported"},
		{"hidden_activation", "gelu", `hidden_activation "gelu" is not supported`},
		{"layer_types", []string{"sliding_attention"}, "1 layer_types for 6 layers"},
		{"query_pre_attn_scalar", 0.5, "query_pre_attn_scalar 0.5 is not a positive integer"},
		{"rope_parameters", map[string]any{"sliding_attention": map[string]any{"rope_type": "linear", "factor": 2}}, "llama.cpp does not scale local layers"},
	} {
		bad := filepath.Join(dir, "hf", "config.json")
		old := cfg[c.key]
		cfg[c.key] = c.val
		b, _ := json.Marshal(cfg)
		cfg[c.key] = old
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(filepath.Dir(bad), LoadOptions{Threads: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: %v, want %q", c.key, c.val, err, c.want)
		}
	}
}
