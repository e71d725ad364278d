package model

import (
	"strings"
	"testing"
)

// TestFamilyRegistry: every family file registered its family, lookups of
// other names fail naming what is supported, and each family's GGUF
// architecture and HF class are what llama.cpp's converter reads.
func TestFamilyRegistry(t *testing.T) {
	want := map[string]struct{ gguf, class string }{
		"llama": {"llama", "LlamaForCausalLM"}, "mistral": {"llama", "MistralForCausalLM"},
		"qwen2": {"qwen2", "Qwen2ForCausalLM"}, "qwen3": {"qwen3", "Qwen3ForCausalLM"},
	}
	for name, w := range want {
		f, err := lookupFamily(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.gguf() != w.gguf || f.hfClass != w.class {
			t.Errorf("%s: gguf %q class %q, want %q %q", name, f.gguf(), f.hfClass, w.gguf, w.class)
		}
	}
	_, err := lookupFamily("gpt2")
	if err == nil || !strings.Contains(err.Error(), `unknown architecture "gpt2"`) {
		t.Fatalf("gpt2: %v", err)
	}
	for name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
}

func TestHFTensorNames(t *testing.T) {
	f, err := lookupFamily("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for gg, hf := range map[string]string{
		"token_embd.weight":          "model.embed_tokens.weight",
		"output_norm.weight":         "model.norm.weight",
		"output.weight":              "lm_head.weight",
		"blk.3.attn_q.weight":        "model.layers.3.self_attn.q_proj.weight",
		"blk.0.attn_k.bias":          "model.layers.0.self_attn.k_proj.bias",
		"blk.11.attn_k_norm.weight":  "model.layers.11.self_attn.k_norm.weight",
		"blk.2.ffn_norm.weight":      "model.layers.2.post_attention_layernorm.weight",
		"blk.2.ffn_down.weight":      "model.layers.2.mlp.down_proj.weight",
		"blk.2.something_new.weight": "blk.2.something_new.weight",
		"rope_freqs.weight":          "rope_freqs.weight",
	} {
		if got := f.hfName(gg); got != hf {
			t.Errorf("%s -> %s, want %s", gg, got, hf)
		}
	}
}
