package model

import (
	"strings"
	"testing"
)

// TestOLMoELlamaCpp: a gen-model OLMoE (32 experts, 8 used, weights not
// renormalised; RMSNorms over the whole q and k vectors) is bit-exact with
// llama.cpp from GGUF f16 and q8_0 and from the HF form (OlmoeForCausalLM)
// on 24 prompts of 2-834 tokens (checkFamilyFixture).
func TestOLMoELlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts: GenOptions{Arch: "olmoe", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 512,
			Seed: 43, Experts: 32, ExpertsUsed: 8},
		runs:  map[string]string{"f16": "llamacpp_olmoe_f16.jsonl", "q8_0": "llamacpp_olmoe_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestOLMoEConfig: counts from GGUF and config.json, the whole-vector q/k
// norms, and what llama.cpp's olmoe does not compute refused by name.
func TestOLMoEConfig(t *testing.T) {
	o := smallOpts("olmoe", "f32")
	o.Experts, o.ExpertsUsed = 6, 2
	g, h := genBoth(t, o)
	for name, m := range map[string]*Model{"gguf": g, "hf": h} {
		c := m.Config()
		if c.Arch != "olmoe" || c.Experts != 6 || c.ExpertsUsed != 2 || c.ExpertsNorm || !c.QKNorm || c.RMSEps != 1e-5 {
			t.Errorf("%s: %+v", name, c)
		}
		if len(m.layers[0].qNorm) != c.Heads*c.HeadDim || len(m.layers[0].kNorm) != c.KVHeads*c.HeadDim {
			t.Errorf("%s: q/k norms of %d/%d values, want whole vectors", name, len(m.layers[0].qNorm), len(m.layers[0].kNorm))
		}
	}
	for _, tc := range []struct{ edit, want string }{
		{`"norm_topk_prob": true`, "norm_topk_prob true is not supported"},
		{`"clip_qkv": 8`, "clip_qkv 8 is not supported"},
		{`"attention_bias": true`, "attention_bias is not supported"},
	} {
		raw := []byte(`{"num_experts": 8, "num_experts_per_tok": 2, ` + tc.edit + `}`)
		if err := olmoeHF(raw, &Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
}
