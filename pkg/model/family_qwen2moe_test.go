package model

import (
	"strings"
	"testing"
)

// TestQwen2MoeLlamaCpp: a gen-model Qwen2-MoE (24 experts, 4 used, weights
// not renormalised; a shared expert 320 wide behind its sigmoid gate; q/k/v
// biases) is bit-exact with llama.cpp from GGUF f16 and q8_0 and from the HF
// form (Qwen2MoeForCausalLM) on 24 prompts of 2-834 tokens
// (checkFamilyFixture).
func TestQwen2MoeLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts: GenOptions{Arch: "qwen2moe", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, SharedFFN: 320,
			Vocab: 512, Seed: 37, Experts: 24, ExpertsUsed: 4},
		runs:  map[string]string{"f16": "llamacpp_qwen2moe_f16.jsonl", "q8_0": "llamacpp_qwen2moe_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestQwen2MoeConfig: the widths and counts from GGUF and config.json; what
// llama.cpp's qwen2moe cannot compute is refused by name.
func TestQwen2MoeConfig(t *testing.T) {
	o := smallOpts("qwen2moe", "f32")
	o.Experts, o.ExpertsUsed, o.FFN, o.SharedFFN = 10, 3, 32, 48
	g, h := genBoth(t, o)
	for name, c := range map[string]Config{"gguf": g.Config(), "hf": h.Config()} {
		if c.Arch != "qwen2moe" || c.Experts != 10 || c.ExpertsUsed != 3 || c.FFN != 32 || c.SharedFFN != 48 || c.ExpertsNorm || !c.QKVBias {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for _, tc := range []struct{ edit, want string }{
		{`"norm_topk_prob": true`, "norm_topk_prob true is not supported"},
		{`"decoder_sparse_step": 2`, "dense layers"},
		{`"shared_expert_intermediate_size": 0`, "must be positive"},
	} {
		raw := []byte(`{"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, ` + tc.edit + `}`)
		if err := qwen2moeHF(raw, &Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
	o = smallOpts("qwen3moe", "f32")
	o.SharedFFN = 64
	if err := GenerateGGUF(t.TempDir()+"/m.gguf", o); err == nil || !strings.Contains(err.Error(), "qwen3moe has no shared expert") {
		t.Errorf("qwen3moe --shared_ffn: %v", err)
	}
}
