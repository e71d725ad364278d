package model

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPhi3LlamaCpp: a gen-model phi3 (fused qkv and gate|up, NEOX RoPE, q
// scaled before attention) is bit-exact with llama.cpp from GGUF f16 and
// q8_0 and from the HF form, on 24 prompts of 2-834 tokens
// (checkFamilyFixture), first-token log-probabilities included.
func TestPhi3LlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts:  GenOptions{Arch: "phi3", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 11},
		runs:  map[string]string{"f16": "llamacpp_phi3_f16.jsonl", "q8_0": "llamacpp_phi3_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestPhi3LongRoPELlamaCpp: LongRoPE (short/long factors, attention
// factor) is bit-exact with llama.cpp from all three forms, both with the
// short factors (original context 1024 > llama.cpp's context) and the long
// ones (original context 256).
func TestPhi3LongRoPELlamaCpp(t *testing.T) {
	for _, orig := range []string{"1024", "256"} {
		t.Run("orig"+orig, func(t *testing.T) {
			o := GenOptions{Arch: "phi3", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 13, MaxPos: 4096}
			o.RopeOrigMaxPos = map[string]int{"1024": 1024, "256": 256}[orig]
			checkFamilyFixture(t, familyFixture{opts: o, context: 512,
				runs:  map[string]string{"f16": "llamacpp_phi3_longrope" + orig + "_f16.jsonl", "q8_0": "llamacpp_phi3_longrope" + orig + "_q8_0.jsonl"},
				forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"}})
		})
	}
}

// TestPhi3Config: LongRoPE's factors and attention factor are read alike
// from both forms and chosen by the context; what llama.cpp's phi3 would
// compute differently is refused by name.
func TestPhi3Config(t *testing.T) {
	o := smallOpts("phi3", "f32")
	o.MaxPos, o.RopeOrigMaxPos = 4096, 1024
	g, h := genBoth(t, o)
	gr, hr := g.Config().RopeScaling, h.Config().RopeScaling
	if gr == nil || hr == nil || gr.OriginalMaxPos != 1024 || hr.OriginalMaxPos != 1024 || gr.AttnFactor != hr.AttnFactor ||
		!slices.Equal(gr.ShortFactor, hr.ShortFactor) || !slices.Equal(gr.LongFactor, hr.LongFactor) || gr.AttnFactor <= 1 {
		t.Fatalf("longrope: gguf %+v hf %+v", gr, hr)
	}
	// Both contexts pick the same factors; the training context (default)
	// is past the original one, so the long factors.
	if !slices.Equal(g.freqFactor, gr.LongFactor) || !slices.Equal(h.freqFactor, hr.LongFactor) {
		t.Error("default context did not pick the long factors")
	}
	c := Config{Hidden: 256, Heads: 4, HeadDim: 64, RopeDim: 64}
	// Phi-4-mini's 0.75: rope.dimension_count = int(0.75*256)//4.
	if err := phi3HF([]byte(`{"partial_rotary_factor":0.75}`), &c); err != nil || c.RopeDim != 48 || c.QScale != 0.125 {
		t.Errorf("partial rotary: %v, rope dims %d, q scale %v", err, c.RopeDim, c.QScale)
	}
	c.RopeScaling, c.MaxPos = &RopeScaling{Type: "longrope"}, 4096
	if err := phi3HF([]byte(`{"original_max_position_embeddings":1024,"rope_scaling":{"type":"longrope","short_factor":[1],"long_factor":[1]}}`), &c); err == nil {
		t.Error("longrope with too few factors accepted")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"llama","hidden_size":64,"num_hidden_layers":1,
		"num_attention_heads":4,"intermediate_size":64,"vocab_size":300,"rope_scaling":{"type":"longrope","short_factor":[1],"long_factor":[1]}}`), 0o644)
	if _, err := readHFConfig(dir); err == nil || !strings.Contains(err.Error(), "longrope is not supported for llama") {
		t.Errorf("llama with longrope: %v", err)
	}
}

// TestPhi3PartialRotaryLlamaCpp: a Phi-4-mini-shaped phi3 — 48 of 64 head
// dimensions rotated, LongRoPE with the long factors — is bit-exact with
// llama.cpp from all three forms.
func TestPhi3PartialRotaryLlamaCpp(t *testing.T) {
	o := GenOptions{Arch: "phi3", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 17,
		MaxPos: 4096, RopeOrigMaxPos: 256, RopeDim: 48}
	checkFamilyFixture(t, familyFixture{opts: o, context: 512,
		runs:  map[string]string{"f16": "llamacpp_phi3_partial_f16.jsonl", "q8_0": "llamacpp_phi3_partial_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"}})
}
