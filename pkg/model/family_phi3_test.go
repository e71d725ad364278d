package model

import "testing"

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

// TestPhi3Refusals: what llama.cpp's phi3 would compute differently here
// is refused by name.
func TestPhi3Refusals(t *testing.T) {
	var c Config
	c.HeadDim = 64
	if err := phi3HF([]byte(`{"partial_rotary_factor":0.75}`), &c); err == nil {
		t.Error("partial rotary accepted")
	}
	if err := phi3HF([]byte(`{"partial_rotary_factor":1.0}`), &c); err != nil || c.QScale != 0.125 {
		t.Errorf("full rotary: %v, q scale %v", err, c.QScale)
	}
	if _, err := parseHFRopeScaling([]byte(`{"type":"longrope","short_factor":[1],"long_factor":[1]}`)); err == nil {
		t.Error("longrope accepted")
	}
}
