package model

import "testing"

// TestGraniteLlamaCpp: a gen-model granite (Granite 3.0's multipliers) is
// bit-exact with llama.cpp from GGUF f16 and q8_0 and from the HF form, on
// 24 prompts of 2-834 tokens (checkFamilyFixture); the first-token
// log-probabilities pin the logit divisor, which greedy decoding cannot see.
func TestGraniteLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts:  GenOptions{Arch: "granite", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Seed: 7},
		runs:  map[string]string{"f16": "llamacpp_granite_f16.jsonl", "q8_0": "llamacpp_granite_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestGraniteConfig: the multipliers are read from GGUF metadata and
// config.json as llama.cpp and its converter read them.
func TestGraniteConfig(t *testing.T) {
	o := smallOpts("granite", "f32")
	o.EmbedScale, o.ResidualScale, o.AttnScale, o.LogitScale = 6, 0.5, 0.125, 4
	g, h := genBoth(t, o)
	for name, c := range map[string]Config{"gguf": g.Config(), "hf": h.Config()} {
		if c.EmbedScale != 6 || c.ResidualScale != 0.5 || c.AttnScale != 0.125 || c.LogitScale != 4 {
			t.Errorf("%s: multipliers %v %v %v %v", name, c.EmbedScale, c.ResidualScale, c.AttnScale, c.LogitScale)
		}
	}
}
