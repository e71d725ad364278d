package model

import (
	"strings"
	"testing"
)

// TestQwen3MoeLlamaCpp: a gen-model Qwen3-MoE (40 experts, 8 used: the
// real model's top-8, over two and a half AVX-512 vectors of router
// logits) is bit-exact with llama.cpp from GGUF f16 and q8_0 and from the
// HF form (Qwen3MoeForCausalLM, mlp.experts.N.*_proj) on 24 prompts of
// 2-834 tokens (checkFamilyFixture).
func TestQwen3MoeLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts: GenOptions{Arch: "qwen3moe", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 512,
			Seed: 31, Experts: 40, ExpertsUsed: 8},
		runs:  map[string]string{"f16": "llamacpp_qwen3moe_f16.jsonl", "q8_0": "llamacpp_qwen3moe_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestQwen3MoeQ4KMLlamaCpp: the experts in llama.cpp's Q4_K_M mix (q4_K
// experts, which llama.cpp repacks to q4_K_8x8 and multiplies row by row
// with its gemv in ggml_mul_mat_id, q6_K output head, router f32) are
// bit-exact with llama.cpp too.
func TestQwen3MoeQ4KMLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts: GenOptions{Arch: "qwen3moe", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512,
			Seed: 47, Experts: 16, ExpertsUsed: 4},
		runs:  map[string]string{"q4_K_M": "llamacpp_qwen3moe_q4_K_M.jsonl"},
		forms: []string{"gguf-q4_K_M"},
	})
}

// TestQwen3MoeConfig: the experts' width and counts from GGUF and
// config.json; what llama.cpp's qwen3moe cannot compute is refused by
// name.
func TestQwen3MoeConfig(t *testing.T) {
	o := smallOpts("qwen3moe", "f32")
	o.Experts, o.ExpertsUsed, o.FFN = 12, 4, 32
	g, h := genBoth(t, o)
	for name, c := range map[string]Config{"gguf": g.Config(), "hf": h.Config()} {
		if c.Arch != "qwen3moe" || c.Experts != 12 || c.ExpertsUsed != 4 || c.FFN != 32 || !c.ExpertsNorm || !c.QKNorm {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for _, tc := range []struct{ edit, want string }{
		{`"norm_topk_prob": false`, "norm_topk_prob false is not supported"},
		{`"decoder_sparse_step": 2`, "dense layers"},
		{`"mlp_only_layers": [0]`, "dense layers"},
		{`"shared_expert_intermediate_size": 64`, "shared expert"},
	} {
		raw := []byte(`{"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "norm_topk_prob": true, ` + tc.edit + `}`)
		if err := qwen3moeHF(raw, &Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
}
